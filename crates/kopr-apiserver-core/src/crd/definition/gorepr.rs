//! Go `%#v` renderings of the internal apiextensions types, for the
//! messages where kube-apiserver prints a whole struct as the bad value
//! (`spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}`).
//! Pointers print as made-up `0xc...` addresses, as their real values are
//! random anyway.

use super::schema::{Dependency, Rule, Schema};
use crate::validation::{go_quote, go_repr};
use serde_json::Value;
use std::cell::Cell;

thread_local! {
    static ADDR: Cell<u64> = const { Cell::new(0x00c0_004a_2000) };
}

/// A fresh fake pointer value.
pub fn addr() -> String {
    ADDR.with(|a| {
        let v = a.get();
        a.set(v.wrapping_add(0x18));
        format!("0x{v:x}")
    })
}

/// `(*T)(nil)` or `(*T)(0xc...)`.
pub fn ptr(ty: &str, set: bool) -> String {
    if set {
        format!("(*{ty})({})", addr())
    } else {
        format!("(*{ty})(nil)")
    }
}

fn go_float(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
        return format!("{f:.0}");
    }
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((m, e)) if f.abs() >= 1e21 || f.abs() < 1e-4 => {
            let (sign, d) = e.strip_prefix('-').map_or(('+', e), |d| ('-', d));
            let d = if d.len() < 2 {
                format!("0{d}")
            } else {
                d.to_string()
            };
            format!("{m}e{sign}{d}")
        }
        _ => format!("{f}"),
    }
}

/// `%#v` of a decoded JSON value held in an `interface{}`.
pub fn json_sharp(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (_, Some(u)) => u.to_string(),
            _ => go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => go_quote(s),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(json_sharp).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        go_quote(k),
                        m.get(*k).map_or(String::new(), json_sharp)
                    )
                })
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// A JSON value as a `field.Error` bad value: scalars stay plain (the
/// error printer formats them), containers become their `%#v` form.
pub fn json_value(v: &Value) -> Value {
    match v {
        Value::Array(_) | Value::Object(_) => go_repr(json_sharp(v)),
        Value::Null => Value::String("null".into()),
        other => other.clone(),
    }
}

fn str_slice(v: Option<&[&str]>) -> String {
    match v {
        None => "[]string(nil)".to_string(),
        Some(s) => {
            let q: Vec<String> = s.iter().map(|x| go_quote(x)).collect();
            format!("[]string{{{}}}", q.join(", "))
        }
    }
}

fn opt_f(v: Option<f64>) -> String {
    ptr("float64", v.is_some())
}

fn opt_i(v: Option<i64>) -> String {
    ptr("int64", v.is_some())
}

fn schema_list(v: Option<&[Schema<'_>]>) -> String {
    match v {
        None => "[]apiextensions.JSONSchemaProps(nil)".to_string(),
        Some(l) => {
            let parts: Vec<String> = l.iter().map(schema_props).collect();
            format!("[]apiextensions.JSONSchemaProps{{{}}}", parts.join(", "))
        }
    }
}

fn schema_map(ty: &str, v: Option<&[(&str, Schema<'_>)]>) -> String {
    match v {
        None => format!("{ty}(nil)"),
        Some(l) => {
            let parts: Vec<String> = l
                .iter()
                .map(|(k, s)| format!("{}:{}", go_quote(k), schema_props(s)))
                .collect();
            format!("{ty}{{{}}}", parts.join(", "))
        }
    }
}

fn rule(r: &Rule<'_>) -> String {
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        go_quote(r.rule),
        go_quote(r.message),
        go_quote(r.message_expression),
        ptr("apiextensions.FieldValueErrorReason", r.reason.is_some()),
        go_quote(r.field_path),
        ptr("bool", r.optional_old_self.is_some()),
    )
}

/// `%#v` of an `apiextensions.JSONSchemaProps`.
pub fn schema_props(s: &Schema<'_>) -> String {
    let enum_ = match s.enum_ {
        None => "[]apiextensions.JSON(nil)".to_string(),
        Some(e) => {
            let parts: Vec<String> = e.iter().map(json_sharp).collect();
            format!("[]apiextensions.JSON{{{}}}", parts.join(", "))
        }
    };
    let deps = match &s.dependencies {
        None => "apiextensions.JSONSchemaDependencies(nil)".to_string(),
        Some(d) => {
            let parts: Vec<String> = d
                .iter()
                .map(|(k, dep)| {
                    let (sch, prop) = match dep {
                        Dependency::Schema(_) => (true, "[]string(nil)"),
                        Dependency::Strings => (false, "[]string{}"),
                    };
                    format!(
                        "{}:apiextensions.JSONSchemaPropsOrStringArray{{Schema:{}, Property:{prop}}}",
                        go_quote(k),
                        ptr("apiextensions.JSONSchemaProps", sch)
                    )
                })
                .collect();
            format!(
                "apiextensions.JSONSchemaDependencies{{{}}}",
                parts.join(", ")
            )
        }
    };
    let xval = if s.x_validations.is_empty() {
        "apiextensions.ValidationRules(nil)".to_string()
    } else {
        let parts: Vec<String> = s.x_validations.iter().map(rule).collect();
        format!("apiextensions.ValidationRules{{{}}}", parts.join(", "))
    };
    format!(
        "apiextensions.JSONSchemaProps{{ID:{}, Schema:{}, Ref:{}, Description:{}, Type:{}, Nullable:{}, Format:{}, Title:{}, Default:{}, Maximum:{}, ExclusiveMaximum:{}, Minimum:{}, ExclusiveMinimum:{}, MaxLength:{}, MinLength:{}, Pattern:{}, MaxItems:{}, MinItems:{}, UniqueItems:{}, MultipleOf:{}, Enum:{}, MaxProperties:{}, MinProperties:{}, Required:{}, Items:{}, AllOf:{}, OneOf:{}, AnyOf:{}, Not:{}, Properties:{}, AdditionalProperties:{}, PatternProperties:{}, Dependencies:{}, AdditionalItems:{}, Definitions:{}, ExternalDocs:{}, Example:{}, XPreserveUnknownFields:{}, XEmbeddedResource:{}, XIntOrString:{}, XListMapKeys:{}, XListType:{}, XMapType:{}, XValidations:{}}}",
        go_quote(s.id),
        go_quote(s.schema_url),
        ptr("string", s.ref_.is_some()),
        go_quote(s.description),
        go_quote(s.type_),
        s.nullable,
        go_quote(s.format),
        go_quote(s.title),
        ptr("apiextensions.JSON", s.default.is_some()),
        opt_f(s.maximum),
        s.exclusive_maximum,
        opt_f(s.minimum),
        s.exclusive_minimum,
        opt_i(s.max_length),
        opt_i(s.min_length),
        go_quote(s.pattern),
        opt_i(s.max_items),
        opt_i(s.min_items),
        s.unique_items,
        opt_f(s.multiple_of),
        enum_,
        opt_i(s.max_properties),
        opt_i(s.min_properties),
        str_slice(s.required.as_deref()),
        ptr("apiextensions.JSONSchemaPropsOrArray", s.items.is_some()),
        schema_list(s.all_of.as_deref()),
        schema_list(s.one_of.as_deref()),
        schema_list(s.any_of.as_deref()),
        ptr("apiextensions.JSONSchemaProps", s.not.is_some()),
        schema_map(
            "map[string]apiextensions.JSONSchemaProps",
            s.properties.as_deref()
        ),
        ptr(
            "apiextensions.JSONSchemaPropsOrBool",
            s.additional_properties.is_some()
        ),
        schema_map(
            "map[string]apiextensions.JSONSchemaProps",
            s.pattern_properties.as_deref()
        ),
        deps,
        ptr(
            "apiextensions.JSONSchemaPropsOrBool",
            s.additional_items.is_some()
        ),
        schema_map(
            "apiextensions.JSONSchemaDefinitions",
            s.definitions.as_deref()
        ),
        ptr(
            "apiextensions.ExternalDocumentation",
            s.external_docs.is_some()
        ),
        ptr("apiextensions.JSON", s.example.is_some()),
        ptr("bool", s.x_preserve.is_some()),
        s.x_embedded,
        s.x_int_or_string,
        str_slice(s.x_list_map_keys.as_deref()),
        ptr("string", s.x_list_type.is_some()),
        ptr("string", s.x_map_type.is_some()),
        xval,
    )
}

/// The bad value of `must only have a single schema if x-kubernetes-list-type is map`.
pub fn items_array(a: &[Schema<'_>]) -> Value {
    go_repr(format!(
        "apiextensions.JSONSchemaPropsOrArray{{Schema:(*apiextensions.JSONSchemaProps)(nil), JSONSchemas:{}}}",
        schema_list(Some(a))
    ))
}
