//! A typed, borrowed view of a `JSONSchemaProps` (apiextensions.k8s.io/v1
//! `openAPIV3Schema`) decoded from JSON, mirroring the Go struct closely
//! enough that "set" versus "zero" can be told apart the way kube's
//! reflection-based checks do. Wrong JSON types are reported as
//! `TypeInvalid` errors and read as unset.

use crate::validation::{Checker, FieldError, Obj, child, index, key};
use serde_json::Value;

/// `JSONSchemaPropsOrArray`: `items` is either one schema or a list.
#[derive(Debug)]
pub enum Items<'a> {
    /// A single schema (the only form allowed by validation).
    Schema(Box<Schema<'a>>),
    /// A list of schemas (forbidden, but decodable).
    Array(Vec<Schema<'a>>),
}

/// `JSONSchemaPropsOrBool`: a schema (`Allows` true) or a plain boolean.
#[derive(Debug)]
pub enum OrBool<'a> {
    /// A schema object.
    Schema(Box<Schema<'a>>),
    /// A boolean.
    Bool(bool),
}

impl<'a> OrBool<'a> {
    /// The `Allows` flag.
    pub fn allows(&self) -> bool {
        match self {
            OrBool::Schema(_) => true,
            OrBool::Bool(b) => *b,
        }
    }

    /// The schema, if any.
    pub fn schema(&self) -> Option<&Schema<'a>> {
        match self {
            OrBool::Schema(s) => Some(s),
            OrBool::Bool(_) => None,
        }
    }
}

/// `JSONSchemaPropsOrStringArray` (a `dependencies` value).
#[derive(Debug)]
pub enum Dependency<'a> {
    /// A schema.
    Schema(Box<Schema<'a>>),
    /// A list of property names.
    Strings,
}

/// One `x-kubernetes-validations` rule.
#[derive(Debug, Default)]
pub struct Rule<'a> {
    /// The JSON object of the rule.
    pub raw: Option<&'a Obj>,
    /// `rule`.
    pub rule: &'a str,
    /// `message`.
    pub message: &'a str,
    /// `messageExpression`.
    pub message_expression: &'a str,
    /// `reason`, if set.
    pub reason: Option<&'a str>,
    /// `fieldPath`.
    pub field_path: &'a str,
    /// `optionalOldSelf`, if set.
    pub optional_old_self: Option<bool>,
}

/// A decoded `JSONSchemaProps`. Properties-like maps are sorted by key.
#[derive(Debug, Default)]
pub struct Schema<'a> {
    /// The JSON object this was decoded from.
    pub raw: Option<&'a Obj>,
    /// `id`.
    pub id: &'a str,
    /// `$schema`.
    pub schema_url: &'a str,
    /// `$ref` (a pointer: present even when empty).
    pub ref_: Option<&'a str>,
    /// `description`.
    pub description: &'a str,
    /// `type`.
    pub type_: &'a str,
    /// `nullable`.
    pub nullable: bool,
    /// `format`.
    pub format: &'a str,
    /// `title`.
    pub title: &'a str,
    /// `default` (JSON `null` reads as unset, like Go's decoder).
    pub default: Option<&'a Value>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `exclusiveMaximum`.
    pub exclusive_maximum: bool,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `exclusiveMinimum`.
    pub exclusive_minimum: bool,
    /// `maxLength`.
    pub max_length: Option<i64>,
    /// `minLength`.
    pub min_length: Option<i64>,
    /// `pattern`.
    pub pattern: &'a str,
    /// `maxItems`.
    pub max_items: Option<i64>,
    /// `minItems`.
    pub min_items: Option<i64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `enum`.
    pub enum_: Option<&'a Vec<Value>>,
    /// `maxProperties`.
    pub max_properties: Option<i64>,
    /// `minProperties`.
    pub min_properties: Option<i64>,
    /// `required`.
    pub required: Option<Vec<&'a str>>,
    /// `items`.
    pub items: Option<Items<'a>>,
    /// `allOf`.
    pub all_of: Option<Vec<Schema<'a>>>,
    /// `oneOf`.
    pub one_of: Option<Vec<Schema<'a>>>,
    /// `anyOf`.
    pub any_of: Option<Vec<Schema<'a>>>,
    /// `not`.
    pub not: Option<Box<Schema<'a>>>,
    /// `properties`.
    pub properties: Option<Vec<(&'a str, Schema<'a>)>>,
    /// `additionalProperties`.
    pub additional_properties: Option<OrBool<'a>>,
    /// `patternProperties`.
    pub pattern_properties: Option<Vec<(&'a str, Schema<'a>)>>,
    /// `dependencies`.
    pub dependencies: Option<Vec<(&'a str, Dependency<'a>)>>,
    /// `additionalItems`.
    pub additional_items: Option<OrBool<'a>>,
    /// `definitions`.
    pub definitions: Option<Vec<(&'a str, Schema<'a>)>>,
    /// `externalDocs`.
    pub external_docs: Option<&'a Obj>,
    /// `example`.
    pub example: Option<&'a Value>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub x_preserve: Option<bool>,
    /// `x-kubernetes-embedded-resource`.
    pub x_embedded: bool,
    /// `x-kubernetes-int-or-string`.
    pub x_int_or_string: bool,
    /// `x-kubernetes-list-map-keys`.
    pub x_list_map_keys: Option<Vec<&'a str>>,
    /// `x-kubernetes-list-type`.
    pub x_list_type: Option<&'a str>,
    /// `x-kubernetes-map-type`.
    pub x_map_type: Option<&'a str>,
    /// `x-kubernetes-validations`.
    pub x_validations: Vec<Rule<'a>>,
}

fn present<'a>(m: &'a Obj, k: &str) -> Option<&'a Value> {
    match m.get(k) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    }
}

fn f64_field(ck: &mut Checker, m: &Obj, k: &str, path: &str) -> Option<f64> {
    let v = present(m, k)?;
    match v.as_f64() {
        Some(f) => Some(f),
        None => {
            ck.push(FieldError::type_invalid(
                child(path, k),
                v.clone(),
                "number",
            ));
            None
        }
    }
}

impl<'a> Schema<'a> {
    /// Decodes a schema object; type errors go to `ck` (paths use JSON keys).
    pub fn parse(ck: &mut Checker, m: &'a Obj, path: &str) -> Schema<'a> {
        let mut s = Schema {
            raw: Some(m),
            id: ck.string(m, "id", path),
            schema_url: ck.string(m, "$schema", path),
            ref_: ck.str(m, "$ref", path),
            description: ck.string(m, "description", path),
            type_: ck.string(m, "type", path),
            nullable: ck.bool(m, "nullable", path).unwrap_or(false),
            format: ck.string(m, "format", path),
            title: ck.string(m, "title", path),
            default: present(m, "default"),
            maximum: f64_field(ck, m, "maximum", path),
            exclusive_maximum: ck.bool(m, "exclusiveMaximum", path).unwrap_or(false),
            minimum: f64_field(ck, m, "minimum", path),
            exclusive_minimum: ck.bool(m, "exclusiveMinimum", path).unwrap_or(false),
            max_length: ck.i64(m, "maxLength", path),
            min_length: ck.i64(m, "minLength", path),
            pattern: ck.string(m, "pattern", path),
            max_items: ck.i64(m, "maxItems", path),
            min_items: ck.i64(m, "minItems", path),
            unique_items: ck.bool(m, "uniqueItems", path).unwrap_or(false),
            multiple_of: f64_field(ck, m, "multipleOf", path),
            enum_: ck.arr(m, "enum", path),
            max_properties: ck.i64(m, "maxProperties", path),
            min_properties: ck.i64(m, "minProperties", path),
            required: ck
                .arr(m, "required", path)
                .map(|_| ck.str_list(m, "required", path)),
            external_docs: ck.obj(m, "externalDocs", path),
            example: present(m, "example"),
            x_preserve: ck.bool(m, "x-kubernetes-preserve-unknown-fields", path),
            x_embedded: ck
                .bool(m, "x-kubernetes-embedded-resource", path)
                .unwrap_or(false),
            x_int_or_string: ck
                .bool(m, "x-kubernetes-int-or-string", path)
                .unwrap_or(false),
            x_list_map_keys: ck
                .arr(m, "x-kubernetes-list-map-keys", path)
                .map(|_| ck.str_list(m, "x-kubernetes-list-map-keys", path)),
            x_list_type: ck.str(m, "x-kubernetes-list-type", path),
            x_map_type: ck.str(m, "x-kubernetes-map-type", path),
            ..Schema::default()
        };
        if let Some(v) = present(m, "items") {
            let p = child(path, "items");
            match v {
                Value::Object(o) => s.items = Some(Items::Schema(Box::new(Self::parse(ck, o, &p)))),
                Value::Array(a) => {
                    let mut out = Vec::new();
                    for (i, it) in a.iter().enumerate() {
                        match it.as_object() {
                            Some(o) => out.push(Self::parse(ck, o, &index(&p, i))),
                            None => ck.push(FieldError::type_invalid(
                                index(&p, i),
                                it.clone(),
                                "object",
                            )),
                        }
                    }
                    s.items = Some(Items::Array(out));
                }
                other => ck.push(FieldError::type_invalid(p, other.clone(), "object")),
            }
        }
        s.all_of = Self::parse_list(ck, m, "allOf", path);
        s.one_of = Self::parse_list(ck, m, "oneOf", path);
        s.any_of = Self::parse_list(ck, m, "anyOf", path);
        if let Some(o) = ck.obj(m, "not", path) {
            s.not = Some(Box::new(Self::parse(ck, o, &child(path, "not"))));
        }
        s.properties = Self::parse_map(ck, m, "properties", path);
        s.pattern_properties = Self::parse_map(ck, m, "patternProperties", path);
        s.definitions = Self::parse_map(ck, m, "definitions", path);
        s.additional_properties = Self::parse_or_bool(ck, m, "additionalProperties", path);
        s.additional_items = Self::parse_or_bool(ck, m, "additionalItems", path);
        if let Some(o) = ck.obj(m, "dependencies", path) {
            let p = child(path, "dependencies");
            let mut deps = Vec::new();
            for (k, v) in o {
                match v {
                    Value::Object(so) => deps.push((
                        k.as_str(),
                        Dependency::Schema(Box::new(Self::parse(ck, so, &key(&p, k)))),
                    )),
                    Value::Array(_) | Value::Null => {
                        if let Value::Array(a) = v {
                            for (i, it) in a.iter().enumerate() {
                                if !it.is_string() {
                                    ck.push(FieldError::type_invalid(
                                        index(&key(&p, k), i),
                                        it.clone(),
                                        "string",
                                    ));
                                }
                            }
                        }
                        deps.push((k.as_str(), Dependency::Strings));
                    }
                    other => ck.push(FieldError::type_invalid(
                        key(&p, k),
                        other.clone(),
                        "object",
                    )),
                }
            }
            s.dependencies = Some(deps);
        }
        for (i, r) in ck.obj_items(m, "x-kubernetes-validations", path) {
            let p = index(&child(path, "x-kubernetes-validations"), i);
            s.x_validations.push(Rule {
                raw: Some(r),
                rule: ck.string(r, "rule", &p),
                message: ck.string(r, "message", &p),
                message_expression: ck.string(r, "messageExpression", &p),
                reason: ck.str(r, "reason", &p),
                field_path: ck.string(r, "fieldPath", &p),
                optional_old_self: ck.bool(r, "optionalOldSelf", &p),
            });
        }
        s
    }

    fn parse_list(ck: &mut Checker, m: &'a Obj, k: &str, path: &str) -> Option<Vec<Schema<'a>>> {
        ck.arr(m, k, path)?;
        let p = child(path, k);
        Some(
            ck.obj_items(m, k, path)
                .into_iter()
                .map(|(i, o)| Self::parse(ck, o, &index(&p, i)))
                .collect(),
        )
    }

    fn parse_map(
        ck: &mut Checker,
        m: &'a Obj,
        k: &str,
        path: &str,
    ) -> Option<Vec<(&'a str, Schema<'a>)>> {
        let o = ck.obj(m, k, path)?;
        let p = child(path, k);
        let mut out = Vec::new();
        for (name, v) in o {
            match v.as_object() {
                Some(so) => out.push((name.as_str(), Self::parse(ck, so, &key(&p, name)))),
                None => ck.push(FieldError::type_invalid(key(&p, name), v.clone(), "object")),
            }
        }
        out.sort_by(|a, b| a.0.cmp(b.0));
        Some(out)
    }

    fn parse_or_bool(ck: &mut Checker, m: &'a Obj, k: &str, path: &str) -> Option<OrBool<'a>> {
        match present(m, k)? {
            Value::Bool(b) => Some(OrBool::Bool(*b)),
            Value::Object(o) => Some(OrBool::Schema(Box::new(Self::parse(
                ck,
                o,
                &child(path, k),
            )))),
            other => {
                ck.push(FieldError::type_invalid(
                    child(path, k),
                    other.clone(),
                    "object",
                ));
                None
            }
        }
    }

    /// Looks up a property by name.
    pub fn property(&self, name: &str) -> Option<&Schema<'a>> {
        self.properties
            .as_ref()?
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, s)| s)
    }

    /// `len(Properties) != 0`.
    pub fn has_properties(&self) -> bool {
        self.properties.as_ref().is_some_and(|p| !p.is_empty())
    }

    /// The single `items` schema, if `items` is an object.
    pub fn items_schema(&self) -> Option<&Schema<'a>> {
        match &self.items {
            Some(Items::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The Go field names of `JSONSchemaProps` that hold a non-zero value,
    /// in struct order (what the status-subresource root check reflects on).
    pub fn set_fields(&self) -> Vec<&'static str> {
        let mut f = Vec::new();
        let mut add = |cond: bool, name: &'static str| {
            if cond {
                f.push(name);
            }
        };
        add(!self.id.is_empty(), "ID");
        add(!self.schema_url.is_empty(), "Schema");
        add(self.ref_.is_some(), "Ref");
        add(!self.description.is_empty(), "Description");
        add(!self.type_.is_empty(), "Type");
        add(self.nullable, "Nullable");
        add(!self.format.is_empty(), "Format");
        add(!self.title.is_empty(), "Title");
        add(self.default.is_some(), "Default");
        add(self.maximum.is_some(), "Maximum");
        add(self.exclusive_maximum, "ExclusiveMaximum");
        add(self.minimum.is_some(), "Minimum");
        add(self.exclusive_minimum, "ExclusiveMinimum");
        add(self.max_length.is_some(), "MaxLength");
        add(self.min_length.is_some(), "MinLength");
        add(!self.pattern.is_empty(), "Pattern");
        add(self.max_items.is_some(), "MaxItems");
        add(self.min_items.is_some(), "MinItems");
        add(self.unique_items, "UniqueItems");
        add(self.multiple_of.is_some(), "MultipleOf");
        add(self.enum_.is_some(), "Enum");
        add(self.max_properties.is_some(), "MaxProperties");
        add(self.min_properties.is_some(), "MinProperties");
        add(self.required.is_some(), "Required");
        add(self.items.is_some(), "Items");
        add(self.all_of.is_some(), "AllOf");
        add(self.one_of.is_some(), "OneOf");
        add(self.any_of.is_some(), "AnyOf");
        add(self.not.is_some(), "Not");
        add(self.properties.is_some(), "Properties");
        add(self.additional_properties.is_some(), "AdditionalProperties");
        add(self.pattern_properties.is_some(), "PatternProperties");
        add(self.dependencies.is_some(), "Dependencies");
        add(self.additional_items.is_some(), "AdditionalItems");
        add(self.definitions.is_some(), "Definitions");
        add(self.external_docs.is_some(), "ExternalDocs");
        add(self.example.is_some(), "Example");
        add(self.x_preserve.is_some(), "XPreserveUnknownFields");
        add(self.x_embedded, "XEmbeddedResource");
        add(self.x_int_or_string, "XIntOrString");
        add(self.x_list_map_keys.is_some(), "XListMapKeys");
        add(self.x_list_type.is_some(), "XListType");
        add(self.x_map_type.is_some(), "XMapType");
        add(
            !self.x_validations.is_empty() || self.raw_has("x-kubernetes-validations"),
            "XValidations",
        );
        f
    }

    fn raw_has(&self, k: &str) -> bool {
        self.raw
            .is_some_and(|m| matches!(m.get(k), Some(v) if !v.is_null()))
    }

    /// Calls `f` on this schema and every sub-schema (like kube's
    /// `SchemaHas`); stops and returns true as soon as `f` does.
    pub fn any(&self, f: &mut dyn FnMut(&Schema<'a>) -> bool) -> bool {
        if f(self) {
            return true;
        }
        match &self.items {
            Some(Items::Schema(s)) if s.any(f) => return true,
            Some(Items::Array(a)) if a.iter().any(|s| s.any(f)) => return true,
            _ => {}
        }
        for l in [&self.all_of, &self.any_of, &self.one_of]
            .into_iter()
            .flatten()
        {
            if l.iter().any(|s| s.any(f)) {
                return true;
            }
        }
        if let Some(n) = &self.not
            && n.any(f)
        {
            return true;
        }
        for m in [
            &self.properties,
            &self.pattern_properties,
            &self.definitions,
        ]
        .into_iter()
        .flatten()
        {
            if m.iter().any(|(_, s)| s.any(f)) {
                return true;
            }
        }
        for ob in [&self.additional_properties, &self.additional_items]
            .into_iter()
            .flatten()
        {
            if let Some(s) = ob.schema()
                && s.any(f)
            {
                return true;
            }
        }
        if let Some(d) = &self.dependencies {
            for (_, dep) in d {
                if let Dependency::Schema(s) = dep
                    && s.any(f)
                {
                    return true;
                }
            }
        }
        false
    }
}
