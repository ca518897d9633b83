//! Structural-schema rules, like apiextensions-apiserver's
//! `pkg/apiserver/schema` (`NewStructural`, `ValidateStructural` and the
//! completeness check) plus the default-pruning part of
//! `schema/defaulting.ValidateDefaults`.
//!
//! The "structural" part of a schema is what is reachable through
//! `properties`, `items` and `additionalProperties`; everything under
//! `allOf`/`anyOf`/`oneOf`/`not` is "value validation" and may not declare
//! types, defaults, descriptions or Kubernetes extensions.

use super::gorepr;
use super::schema::{Items, OrBool, Schema};
use crate::validation::{FieldError, child, index, key};
use serde_json::Value;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The error `NewStructural` would return for this schema, if any (fields the
/// structural model cannot represent), at the root or in any nested schema,
/// value validations (`allOf`, `anyOf`, `oneOf`, `not`) included.
pub fn new_structural_error(s: &Schema<'_>) -> Option<String> {
    unsupported(s)
        .or_else(|| value_validation_error(s))
        .or_else(|| {
            (s.x_preserve == Some(false)).then(|| {
                "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                    .to_string()
            })
        })
        .or_else(|| match &s.items {
            Some(Items::Array(a)) if !a.is_empty() => {
                Some("OpenAPIV3Schema 'items' must be a schema, but is an array".to_string())
            }
            Some(Items::Schema(i)) => new_structural_error(i),
            _ => None,
        })
        .or_else(|| {
            s.properties
                .iter()
                .flatten()
                .find_map(|(_, p)| new_structural_error(p))
        })
        .or_else(|| {
            s.additional_properties
                .as_ref()
                .and_then(OrBool::schema)
                .and_then(new_structural_error)
        })
}

fn value_validation_error(s: &Schema<'_>) -> Option<String> {
    s.not.as_deref().and_then(new_structural_error).or_else(|| {
        [&s.all_of, &s.any_of, &s.one_of]
            .into_iter()
            .flatten()
            .flatten()
            .find_map(new_structural_error)
    })
}

fn unsupported(s: &Schema<'_>) -> Option<String> {
    let msg = |f: &str| Some(format!("OpenAPIV3Schema '{f}' is not supported"));
    if !s.id.is_empty() {
        return msg("id");
    }
    if !s.schema_url.is_empty() {
        return msg("schema");
    }
    if s.ref_.is_some_and(|r| !r.is_empty()) {
        return msg("$ref");
    }
    if s.pattern_properties.as_ref().is_some_and(|p| !p.is_empty()) {
        return msg("patternProperties");
    }
    if s.dependencies.as_ref().is_some_and(|d| !d.is_empty()) {
        return msg("dependencies");
    }
    if s.additional_items.is_some() {
        return msg("additionalItems");
    }
    if s.definitions.as_ref().is_some_and(|d| !d.is_empty()) {
        return msg("definitions");
    }
    None
}

/// `ValidateStructural`: invariants plus completeness, sorted by message as
/// kube does. `path` is the path of the schema root.
pub fn validate_structural(path: &str, s: &Schema<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(s, Level::Root, path, &mut errs);
    completeness(s, path, &mut errs);
    errs.sort_by_key(|e| e.to_string());
    errs
}

fn invariants(s: &Schema<'_>, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    let items = s.items_schema();
    if s.type_ == "array" && items.is_none() {
        errs.push(FieldError::required(
            child(path, "items"),
            "must be specified",
        ));
    }
    if let Some(i) = items {
        invariants(i, Level::Item, &child(path, "items"), errs);
    }
    let props = child(path, "properties");
    for (k, p) in s.properties.iter().flatten() {
        invariants(p, Level::Field, &key(&props, k), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                child(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(aps) = ap.schema() {
            invariants(
                aps,
                Level::Field,
                &child(path, "additionalProperties"),
                errs,
            );
        }
    }
    // validateExtensions
    if s.x_int_or_string && s.x_preserve == Some(true) {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(s.any_of.as_deref());
    let skip_first_all_of_any_of = s
        .all_of
        .as_ref()
        .and_then(|a| a.first())
        .is_some_and(|f| is_int_or_string_any_of(f.any_of.as_deref()));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, lvl, path, errs);

    let check_metadata = lvl == Level::Root || s.x_embedded;
    if s.x_embedded && s.type_ != "object" {
        if s.type_.is_empty() {
            errs.push(FieldError::required(
                child(path, "type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(FieldError::invalid(
                child(path, "type"),
                s.type_,
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if s.type_.is_empty() && !s.x_int_or_string && s.x_preserve != Some(true) {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(child(path, "type"), detail));
    }
    if s.x_embedded && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        errs.push(FieldError::invalid(
            child(path, "type"),
            s.type_,
            "must be object at the root",
        ));
    }
    for (name, want) in [("kind", "string"), ("apiVersion", "string")] {
        if let Some(p) = s.property(name)
            && check_metadata
            && p.type_ != want
        {
            errs.push(FieldError::invalid(
                child(&key(&props, name), "type"),
                p.type_,
                format!("must be {want}"),
            ));
        }
    }
    if let Some(m) = s.property("metadata") {
        let mp = key(&props, "metadata");
        if check_metadata && m.type_ != "object" {
            errs.push(FieldError::invalid(
                child(&mp, "type"),
                m.type_,
                "must be object",
            ));
        }
        if lvl == Level::Root && !metadata_is_name_only(m) {
            errs.push(FieldError::forbidden(
                mp,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.x_embedded && s.x_preserve != Some(true) && !s.has_properties() {
        errs.push(FieldError::required(
            child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Whether the root `metadata` schema only restricts `name`/`generateName`
/// (after dropping its type and default, which are checked elsewhere).
fn metadata_is_name_only(m: &Schema<'_>) -> bool {
    let props_ok = match &m.properties {
        None => true,
        Some(p) => {
            let has = |n: &str| p.iter().any(|(k, _)| *k == n);
            let (n, g) = (has("name"), has("generateName"));
            (n && g && p.len() == 2) || ((n || g) && p.len() == 1)
        }
    };
    // Everything else of the structural model must be zero. Value
    // validations (allOf etc.) count as "anything other".
    props_ok
        && m.description.is_empty()
        && m.title.is_empty()
        && !m.nullable
        && m.items.is_none()
        && m.additional_properties.is_none()
        && m.external_docs.is_none()
        && m.example.is_none()
        && m.x_preserve.is_none()
        && !m.x_embedded
        && !m.x_int_or_string
        && m.x_list_map_keys.is_none()
        && m.x_list_type.is_none()
        && m.x_map_type.is_none()
        && m.x_validations.is_empty()
        && value_validation_is_zero(m)
}

fn value_validation_is_zero(m: &Schema<'_>) -> bool {
    m.format.is_empty()
        && m.maximum.is_none()
        && !m.exclusive_maximum
        && m.minimum.is_none()
        && !m.exclusive_minimum
        && m.max_length.is_none()
        && m.min_length.is_none()
        && m.pattern.is_empty()
        && m.max_items.is_none()
        && m.min_items.is_none()
        && !m.unique_items
        && m.multiple_of.is_none()
        && m.enum_.is_none()
        && m.max_properties.is_none()
        && m.min_properties.is_none()
        && m.required.is_none()
        && m.all_of.is_none()
        && m.one_of.is_none()
        && m.any_of.is_none()
        && m.not.is_none()
}

/// The IntOrString pattern `anyOf: [{type: integer}, {type: string}]` with
/// nothing else in either branch.
fn is_int_or_string_any_of(any_of: Option<&[Schema<'_>]>) -> bool {
    let Some([a, b]) = any_of else {
        return false;
    };
    only_type(a, "integer") && only_type(b, "string")
}

fn only_type(s: &Schema<'_>, t: &str) -> bool {
    s.type_ == t && s.set_fields() == ["Type"]
}

fn value_validation(
    s: &Schema<'_>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, x) in s.any_of.iter().flatten().enumerate() {
            nested(x, false, lvl, &index(&child(path, "anyOf"), i), errs);
        }
    }
    for (i, x) in s.all_of.iter().flatten().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(x, skip, lvl, &index(&child(path, "allOf"), i), errs);
    }
    for (i, x) in s.one_of.iter().flatten().enumerate() {
        nested(x, false, lvl, &index(&child(path, "oneOf"), i), errs);
    }
    if let Some(n) = &s.not {
        nested(n, false, lvl, &child(path, "not"), errs);
    }
    // Go regexp (RE2) compilation of `pattern` is not re-implemented here.
}

fn nested(v: &Schema<'_>, skip_any_of: bool, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, lvl, path, errs);
    if let Some(i) = v.items_schema() {
        nested(i, false, lvl, &child(path, "items"), errs);
    }
    let props = child(path, "properties");
    for (k, p) in v.properties.iter().flatten() {
        nested(p, false, Level::Field, &key(&props, k), errs);
    }
    let forbid = |errs: &mut Vec<FieldError>, f: &str, d: &str| {
        errs.push(FieldError::forbidden(child(path, f), d));
    };
    if !v.type_.is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if v.additional_properties.as_ref().is_some_and(OrBool::allows) {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if v.default.is_some() {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !v.title.is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !v.description.is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if v.nullable {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if v.x_preserve == Some(true) {
        forbid(
            errs,
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        );
    }
    if v.x_embedded {
        forbid(
            errs,
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        );
    }
    if v.x_int_or_string {
        forbid(
            errs,
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        );
    }
    if v.x_list_map_keys.as_ref().is_some_and(|k| !k.is_empty()) {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    if v.x_list_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        );
    }
    if v.x_map_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        );
    }
    if !v.x_validations.is_empty() {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if v.property("metadata").is_some() {
        errs.push(FieldError::forbidden(
            key(&props, "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Completeness: every property/items a root-level value validation talks
/// about must exist in the structural part.
fn completeness(s: &Schema<'_>, path: &str, errs: &mut Vec<FieldError>) {
    vv_completeness(s, Some(s), path, path, errs);
}

fn vv_completeness(
    v: &Schema<'_>,
    s: Option<&Schema<'_>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    if let Some(n) = &v.not {
        nested_completeness(n, Some(s), s_path, &child(v_path, "not"), errs);
    }
    for (name, list) in [
        ("allOf", &v.all_of),
        ("anyOf", &v.any_of),
        ("oneOf", &v.one_of),
    ] {
        for (i, x) in list.iter().flatten().enumerate() {
            nested_completeness(x, Some(s), s_path, &index(&child(v_path, name), i), errs);
        }
    }
}

fn nested_completeness(
    v: &Schema<'_>,
    s: Option<&Schema<'_>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    vv_completeness(v, Some(s), s_path, v_path, errs);
    if let Some(vi) = v.items_schema() {
        nested_completeness(
            vi,
            s.items_schema(),
            &child(s_path, "items"),
            &child(v_path, "items"),
            errs,
        );
    }
    let sp = child(s_path, "properties");
    let vp = child(v_path, "properties");
    for (k, vf) in v.properties.iter().flatten() {
        match s.property(k) {
            None => errs.push(FieldError::required(
                key(&sp, k),
                format!("because it is defined in {}", key(&vp, k)),
            )),
            Some(sf) => nested_completeness(vf, Some(sf), &key(&sp, k), &key(&vp, k), errs),
        }
    }
}

/// Whether the whole schema is structural (what kube's ratcheting helpers
/// compute on the old object).
pub fn is_structural(s: &Schema<'_>) -> bool {
    new_structural_error(s).is_none() && validate_structural("", s).is_empty()
}

/// Callback validating a default value against its schema (the
/// custom-resource value validator); receives the `...default` path, the
/// schema node and the value.
pub type DefaultValueHook<'h> = &'h dyn Fn(&str, &Value, &Value) -> Vec<FieldError>;

/// The pruning part of `ValidateDefaults`: every default outside of
/// resource metadata must survive pruning by its own schema unchanged
/// (`must not have unknown fields`); `hook` (if any) then validates the
/// value against the schema.
pub fn validate_defaults(
    path: &str,
    s: &Schema<'_>,
    require_pruned: bool,
    hook: Option<DefaultValueHook<'_>>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk_defaults(path, s, true, false, require_pruned, hook, &mut errs);
    errs
}

fn walk_defaults(
    path: &str,
    s: &Schema<'_>,
    resource_root: bool,
    inside_meta: bool,
    require_pruned: bool,
    hook: Option<DefaultValueHook<'_>>,
    errs: &mut Vec<FieldError>,
) {
    let embedded = s.x_embedded || resource_root;
    let inside_meta = if embedded { false } else { inside_meta };
    if let Some(d) = s.default
        && !inside_meta
    {
        let dp = child(path, "default");
        let mut ok = true;
        if require_pruned {
            let mut pruned = d.clone();
            prune(&mut pruned, Some(s), embedded);
            if pruned != *d {
                ok = false;
                errs.push(FieldError::invalid(
                    &dp,
                    gorepr::json_value(d),
                    "must not have unknown fields",
                ));
            }
        }
        if ok && let (Some(h), Some(raw)) = (hook, s.raw) {
            errs.extend(h(&dp, &Value::Object(raw.clone()), d));
        }
    }
    if let Some(i) = s.items_schema() {
        walk_defaults(
            &child(path, "items"),
            i,
            false,
            inside_meta,
            require_pruned,
            hook,
            errs,
        );
    }
    let props = child(path, "properties");
    for (k, p) in s.properties.iter().flatten() {
        let sub_meta =
            inside_meta || (embedded && matches!(*k, "metadata" | "apiVersion" | "kind"));
        walk_defaults(
            &key(&props, k),
            p,
            false,
            sub_meta,
            require_pruned,
            hook,
            errs,
        );
    }
}

/// Prunes `x` like `pruning.Prune`: unknown object fields are dropped unless
/// preserved; `root` keeps `apiVersion`, `kind` and `metadata`.
pub fn prune(x: &mut Value, s: Option<&Schema<'_>>, root: bool) {
    if let Some(s) = s
        && s.x_preserve == Some(true)
    {
        skip_prune(x, s, root);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                m.clear();
                return;
            };
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if (root || s.x_embedded)
                    && matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
                {
                    continue;
                }
                if let Some(p) = s.property(&k) {
                    if let Some(v) = m.get_mut(&k) {
                        prune(v, Some(p), p.x_embedded);
                    }
                } else if let Some(ap) = &s.additional_properties {
                    if let Some(v) = m.get_mut(&k) {
                        let aps = ap.schema();
                        prune(v, aps, aps.is_some_and(|a| a.x_embedded));
                    }
                } else {
                    m.remove(&k);
                }
            }
        }
        Value::Array(a) => {
            let item = s.and_then(Schema::items_schema);
            for v in a {
                prune(v, item, item.is_some_and(|i| i.x_embedded));
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Schema<'_>, root: bool) {
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if (root || s.x_embedded)
                    && matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
                {
                    continue;
                }
                let sub = s
                    .property(&k)
                    .or_else(|| s.additional_properties.as_ref().and_then(OrBool::schema));
                if let (Some(p), Some(v)) = (sub, m.get_mut(&k)) {
                    prune(v, Some(p), p.x_embedded);
                }
            }
        }
        Value::Array(a) => {
            if let Some(i) = s.items_schema() {
                for v in a {
                    prune(v, Some(i), i.x_embedded);
                }
            }
        }
        _ => {}
    }
}

/// Whether a schema (and its sub-schemas) has any unpruned default, for the
/// update ratcheting of `requirePrunedDefaults`.
pub fn has_unpruned_defaults(s: &Schema<'_>) -> bool {
    if !s.any(&mut |x| x.default.is_some()) || !is_structural(s) {
        return false;
    }
    !validate_defaults("", s, true, None).is_empty()
}
