//! `ValidateCustomResourceDefinitionOpenAPISchema`: the recursive checks of
//! an `openAPIV3Schema` that are independent of structurality (forbidden
//! OpenAPI constructs, defaults placement, list/map type extensions and the
//! static part of `x-kubernetes-validations`), plus the simple field-path
//! resolver kube uses for `fieldPath` and `selectableFields`.

use super::gorepr;
use super::schema::{Dependency, Items, Schema};
use crate::crd::FieldPathError;
use crate::validation::{FieldError, child, index, key};
use serde_json::Value;

/// Valid OpenAPI v3 types, sorted (the `NotSupported` list).
pub const OPENAPI_V3_TYPES: &[&str] =
    &["array", "boolean", "integer", "number", "object", "string"];

const SUPPORTED_REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Callback compiling the `x-kubernetes-validations` rules of one schema
/// node (CEL); receives the node's path and its JSON.
pub type CelHook<'h> = &'h dyn Fn(&str, &Value) -> Vec<FieldError>;

/// Options of the walk (`validationOptions` plus `specStandardValidatorV3`).
#[derive(Clone, Default)]
pub struct Opts {
    /// Defaults are permitted here.
    pub allow_defaults: bool,
    /// Why defaults are not permitted (appended to the message).
    pub disallow_defaults_reason: String,
    /// Inside TypeMeta/ObjectMeta of a resource.
    pub inside_resource_meta: bool,
    /// `requireValidPropertyType`.
    pub require_valid_property_type: bool,
    /// `requireAtomicSetType`.
    pub require_atomic_set_type: bool,
    /// `requireMapListKeysMapSetValidation`.
    pub require_map_list_keys_map_set_validation: bool,
}

impl Opts {
    fn with_forbidden_defaults(&self, reason: &str) -> Opts {
        let mut o = self.clone();
        o.allow_defaults = false;
        o.disallow_defaults_reason = reason.to_string();
        o
    }
}

/// Schema errors and CEL errors, kept apart as kube does.
#[derive(Default)]
pub struct Errors {
    /// Schema errors.
    pub schema: Vec<FieldError>,
    /// CEL (hook) errors.
    pub cel: Vec<FieldError>,
}

/// Validates `s` at `path`. `cel` runs only where `cel_enabled` (structural
/// schema valid) and no schema error was found at or below the node.
pub fn validate(
    s: &Schema<'_>,
    path: &str,
    opts: &Opts,
    is_root: bool,
    cel_enabled: bool,
    cel: Option<CelHook<'_>>,
    out: &mut Errors,
) {
    let start = out.schema.len();
    ssv_validate(s, path, opts, &mut out.schema);
    if s.unique_items {
        out.schema.push(FieldError::forbidden(
            child(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(ap) = &s.additional_properties {
        if s.has_properties() && (!ap.allows() || ap.schema().is_some()) {
            out.schema.push(FieldError::forbidden(
                child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Some(aps) = ap.schema() {
            let sub = if opts.inside_resource_meta {
                opts.with_forbidden_defaults(
                    "inside additionalProperties applying to object metadata",
                )
            } else {
                opts.clone()
            };
            validate(
                aps,
                &child(path, "additionalProperties"),
                &sub,
                false,
                cel_enabled,
                cel,
                out,
            );
        }
    }
    let props = child(path, "properties");
    for (k, p) in s.properties.iter().flatten() {
        let mut sub = opts.clone();
        if (is_root || s.x_embedded) && matches!(*k, "metadata" | "kind" | "apiVersion") {
            sub.inside_resource_meta = true;
            if is_root {
                sub = sub.with_forbidden_defaults(&format!("in top-level {k}"));
            }
        }
        validate(p, &key(&props, k), &sub, false, cel_enabled, cel, out);
    }
    if let Some(n) = &s.not {
        validate(n, &child(path, "not"), opts, false, false, cel, out);
    }
    for (name, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, x) in list.iter().flatten().enumerate() {
            validate(
                x,
                &index(&child(path, name), i),
                opts,
                false,
                false,
                cel,
                out,
            );
        }
    }
    for (k, d) in s.definitions.iter().flatten() {
        validate(
            d,
            &key(&child(path, "definitions"), k),
            opts,
            false,
            false,
            cel,
            out,
        );
    }
    match &s.items {
        Some(Items::Schema(i)) => {
            validate(i, &child(path, "items"), opts, false, cel_enabled, cel, out);
        }
        Some(Items::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                validate(
                    x,
                    &index(&child(path, "items"), i),
                    opts,
                    false,
                    cel_enabled,
                    cel,
                    out,
                );
            }
        }
        None => {}
    }
    for (k, d) in s.dependencies.iter().flatten() {
        if let Dependency::Schema(ds) = d {
            validate(
                ds,
                &key(&child(path, "dependencies"), k),
                opts,
                false,
                false,
                cel,
                out,
            );
        }
    }
    extensions(s, path, opts, &mut out.schema);
    rules(s, path, &mut out.schema);
    if out.schema.len() == start
        && cel_enabled
        && !s.x_validations.is_empty()
        && let (Some(h), Some(raw)) = (cel, s.raw)
    {
        out.cel.extend(h(path, &Value::Object(raw.clone())));
    }
}

fn ssv_validate(s: &Schema<'_>, path: &str, opts: &Opts, errs: &mut Vec<FieldError>) {
    if opts.require_valid_property_type
        && !s.type_.is_empty()
        && !OPENAPI_V3_TYPES.contains(&s.type_)
    {
        errs.push(FieldError::not_supported(
            child(path, "type"),
            s.type_,
            OPENAPI_V3_TYPES,
        ));
    }
    if s.default.is_some() && !opts.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !opts.disallow_defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&opts.disallow_defaults_reason);
        }
        errs.push(FieldError::forbidden(child(path, "default"), detail));
    }
    let forbid = |errs: &mut Vec<FieldError>, f: &str, d: &str| {
        errs.push(FieldError::forbidden(child(path, f), d));
    };
    if !s.id.is_empty() {
        forbid(errs, "id", "id is not supported");
    }
    if s.additional_items.is_some() {
        forbid(errs, "additionalItems", "additionalItems is not supported");
    }
    if s.pattern_properties.as_ref().is_some_and(|p| !p.is_empty()) {
        forbid(
            errs,
            "patternProperties",
            "patternProperties is not supported",
        );
    }
    if s.definitions.as_ref().is_some_and(|d| !d.is_empty()) {
        forbid(errs, "definitions", "definitions is not supported");
    }
    if s.dependencies.is_some() {
        forbid(errs, "dependencies", "dependencies is not supported");
    }
    if s.ref_.is_some() {
        forbid(errs, "$ref", "$ref is not supported");
    }
    if s.type_ == "null" {
        forbid(
            errs,
            "type",
            "type cannot be set to null, use nullable as an alternative",
        );
    }
    if matches!(&s.items, Some(Items::Array(a)) if !a.is_empty()) {
        forbid(
            errs,
            "items",
            "items must be a schema object and not an array",
        );
    }
    if opts.inside_resource_meta && s.x_embedded {
        forbid(
            errs,
            "x-kubernetes-embedded-resource",
            "must not be used inside of resource meta",
        );
    }
}

fn str_or_null(v: Option<&str>) -> Value {
    v.map_or(Value::Null, |s| Value::String(s.to_string()))
}

fn extensions(s: &Schema<'_>, path: &str, opts: &Opts, errs: &mut Vec<FieldError>) {
    if s.x_preserve == Some(false) {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    if s.x_map_type.is_some() && s.type_ != "object" {
        type_required_or_invalid(
            errs,
            path,
            s.type_,
            "must be object if x-kubernetes-map-type is specified",
        );
    }
    if let Some(mt) = s.x_map_type
        && mt != "atomic"
        && mt != "granular"
    {
        errs.push(FieldError::not_supported(
            child(path, "x-kubernetes-map-type"),
            mt,
            &["atomic", "granular"],
        ));
    }
    let items = s.items_schema();
    if s.x_list_type.is_some() && s.type_ != "array" {
        type_required_or_invalid(
            errs,
            path,
            s.type_,
            "must be array if x-kubernetes-list-type is specified",
        );
    } else if opts.require_atomic_set_type
        && s.x_list_type == Some("set")
        && let Some(is) = items
    {
        let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let ip = child(path, "items");
        match is.type_ {
            "array" if is.x_list_type.is_some_and(|t| t != "atomic") => {
                errs.push(FieldError::invalid(
                    child(&ip, "x-kubernetes-list-type"),
                    str_or_null(is.x_list_type),
                    msg,
                ));
            }
            // kube reports the items' list type here.
            "object" if is.x_map_type != Some("atomic") => {
                errs.push(FieldError::invalid(
                    child(&ip, "x-kubernetes-map-type"),
                    str_or_null(is.x_list_type),
                    msg,
                ));
            }
            _ => {}
        }
    }
    if let Some(lt) = s.x_list_type
        && !matches!(lt, "atomic" | "set" | "map")
    {
        errs.push(FieldError::not_supported(
            child(path, "x-kubernetes-list-type"),
            lt,
            &["atomic", "set", "map"],
        ));
    }
    let keys: &[&str] = s.x_list_map_keys.as_deref().unwrap_or(&[]);
    let keys_value = || Value::from(keys.iter().map(|k| Value::from(*k)).collect::<Vec<_>>());
    if !keys.is_empty() {
        match s.x_list_type {
            None => errs.push(FieldError::required(
                child(path, "x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                child(path, "x-kubernetes-list-type"),
                lt,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            _ => {}
        }
    }
    if s.x_list_type == Some("map") {
        if keys.is_empty() {
            errs.push(FieldError::required(
                child(path, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &s.items {
            None => errs.push(FieldError::required(
                child(path, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(Items::Array(a)) => errs.push(FieldError::invalid(
                child(path, "items"),
                gorepr::items_array(a),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(Items::Schema(is)) => {
                if is.type_ != "object" {
                    errs.push(FieldError::invalid(
                        child(&child(path, "items"), "type"),
                        is.type_,
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let mut seen: Vec<&str> = Vec::new();
                    for k in keys {
                        match is.property(k) {
                            Some(p) => {
                                if p.type_ == "array" || p.type_ == "object" {
                                    errs.push(FieldError::invalid(
                                        child(&key(&child(&child(path, "items"), "properties"), k), "type"),
                                        is.type_,
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errs.push(FieldError::invalid(
                                child(path, "x-kubernetes-list-map-keys"),
                                keys_value(),
                                "entries must all be names of item properties",
                            )),
                        }
                        if seen.contains(k) {
                            errs.push(FieldError::invalid(
                                child(path, "x-kubernetes-list-map-keys"),
                                keys_value(),
                                "must not contain duplicate entries",
                            ));
                        }
                        seen.push(k);
                    }
                }
            }
        }
    }
    if opts.require_map_list_keys_map_set_validation {
        errs.extend(map_list_keys_map_set(s, path));
    }
}

fn type_required_or_invalid(errs: &mut Vec<FieldError>, path: &str, t: &str, msg: &str) {
    if t.is_empty() {
        errs.push(FieldError::required(child(path, "type"), msg));
    } else {
        errs.push(FieldError::invalid(child(path, "type"), t, msg));
    }
}

/// `validateMapListKeysMapSet`: set/map list items and map keys may not be
/// nullable; map keys must be required or defaulted.
pub fn map_list_keys_map_set(s: &Schema<'_>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (Some(is), Some(lt)) = (s.items_schema(), s.x_list_type) else {
        return errs;
    };
    if lt != "set" && lt != "map" {
        return errs;
    }
    let ip = child(path, "items");
    if is.nullable {
        errs.push(FieldError::forbidden(
            child(&ip, "nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required: &[&str] = is.required.as_deref().unwrap_or(&[]);
        for k in s.x_list_map_keys.iter().flatten() {
            let Some(p) = is.property(k) else {
                continue;
            };
            let pp = key(&child(&ip, "properties"), k);
            if !required.contains(k) && p.default.is_none() {
                errs.push(FieldError::required(
                    child(&pp, "default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if p.nullable {
                errs.push(FieldError::forbidden(
                    child(&pp, "nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

fn rules(s: &Schema<'_>, path: &str, errs: &mut Vec<FieldError>) {
    let base = child(path, "x-kubernetes-validations");
    for (i, r) in s.x_validations.iter().enumerate() {
        let p = index(&base, i);
        let rule = r.rule.trim();
        let msg = r.message.trim();
        if rule.is_empty() {
            errs.push(FieldError::required(
                child(&p, "rule"),
                "rule is not specified",
            ));
        } else if !r.message.is_empty() && msg.is_empty() {
            errs.push(FieldError::invalid(
                child(&p, "message"),
                r.message,
                "message must be non-empty if specified",
            ));
        } else if has_newlines(msg) {
            errs.push(FieldError::invalid(
                child(&p, "message"),
                r.message,
                "message must not contain line breaks",
            ));
        } else if has_newlines(rule) && msg.is_empty() {
            errs.push(FieldError::required(
                child(&p, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !r.message_expression.is_empty() && r.message_expression.trim().is_empty() {
            errs.push(FieldError::required(
                child(&p, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = r.reason
            && !SUPPORTED_REASONS.contains(&reason)
        {
            errs.push(FieldError::not_supported(
                child(&p, "reason"),
                reason,
                SUPPORTED_REASONS,
            ));
        }
        let fp = r.field_path;
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldError::invalid(
                child(&p, "fieldPath"),
                fp,
                "fieldPath must be non-empty if specified",
            ));
        }
        if has_newlines(fp) {
            errs.push(FieldError::invalid(
                child(&p, "fieldPath"),
                fp,
                "fieldPath must not contain line breaks",
            ));
        }
        if !fp.is_empty()
            && super::structural::new_structural_error(s).is_none()
            && valid_field_path(fp, Some(s), true).is_err()
        {
            errs.push(FieldError::invalid(
                child(&p, "fieldPath"),
                fp,
                "fieldPath must be a valid path",
            ));
        }
    }
}

/// A resolved field path: its elements (`(name, is_key)`) and schema.
pub struct FieldPath<'s, 'a> {
    /// Path elements; `true` marks a map key.
    pub elems: Vec<(String, bool)>,
    /// The schema the path points at.
    pub schema: Option<&'s Schema<'a>>,
}

impl FieldPath<'_, '_> {
    /// Renders like `field.Path.String()`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (n, is_key) in &self.elems {
            if *is_key {
                out = key(&out, n);
            } else {
                out = child(&out, n);
            }
        }
        out
    }
}

fn tokens(p: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in p.char_indices() {
        if matches!(c, '.' | '[' | ']') {
            if start < i {
                out.push(&p[start..i]);
            }
            out.push(&p[i..i + 1]);
            start = i + 1;
        }
    }
    if start < p.len() {
        out.push(&p[start..]);
    }
    out
}

/// `cel.ValidFieldPath`: resolves a simple JSON path (`.a.b`, `.a['b']`)
/// against a structural schema.
pub fn valid_field_path<'s, 'a>(
    path: &str,
    root: Option<&'s Schema<'a>>,
    allow_array_notation: bool,
) -> Result<FieldPath<'s, 'a>, FieldPathError> {
    let mut fp = FieldPath {
        elems: Vec::new(),
        schema: root,
    };
    let toks = tokens(path);
    let mut it = toks.into_iter();
    let step = |fp: &mut FieldPath<'s, 'a>, name: &str| -> Result<(), FieldPathError> {
        let s = fp.schema.ok_or(FieldPathError::NoSuchField)?;
        if s.properties.is_some() {
            fp.elems.push((name.to_string(), false));
            fp.schema = Some(s.property(name).ok_or(FieldPathError::NoSuchField)?);
        } else if let Some(ap) = &s.additional_properties {
            fp.elems.push((name.to_string(), true));
            fp.schema = ap.schema();
        } else {
            return Err(FieldPathError::NoSuchField);
        }
        Ok(())
    };
    while let Some(tok) = it.next() {
        match tok {
            "[" => {
                if !allow_array_notation {
                    return Err(FieldPathError::ArrayNotation);
                }
                let t = it.next().ok_or(FieldPathError::UnexpectedEnd)?;
                if t.len() < 2 || !t.starts_with('\'') || !t.ends_with('\'') {
                    return Err(FieldPathError::NotQuoted(t.to_string()));
                }
                step(&mut fp, &t[1..t.len() - 1])?;
                let t = it.next().ok_or(FieldPathError::UnexpectedEnd)?;
                if t != "]" {
                    return Err(FieldPathError::NotClosed(t.to_string()));
                }
            }
            "." => {
                let t = it.next().ok_or(FieldPathError::UnexpectedEnd)?;
                step(&mut fp, t)?;
            }
            other => return Err(FieldPathError::NoStep(other.to_string())),
        }
    }
    Ok(fp)
}
