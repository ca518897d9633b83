//! Validation, defaulting and initial status of CustomResourceDefinition
//! objects (apiextensions.k8s.io/v1), like apiextensions-apiserver 1.32:
//! `ValidateCustomResourceDefinition` / `...Update`, `SetDefaults_*` of the v1
//! API, and the status written by the naming and establishing controllers.
//!
//! kube validates the *internal* type, obtained from v1 by
//! `Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_...`, which
//! hoists per-version `schema`, `subresources`, `additionalPrinterColumns`
//! (and `selectableFields`) to the spec when they are identical in all
//! versions. That is why errors of a single-version CRD are reported under
//! `spec.validation.openAPIV3Schema...`, `spec.subresources...` and
//! `spec.additionalPrinterColumns[i]...`; this module reproduces that.
//! Before validation kube also resets the status (create) or copies the old
//! one (update) and records the storage version in `status.storedVersions`;
//! [`validate`] simulates that rather than trusting the incoming status.
//!
//! `x-kubernetes-validations` rules are compiled with the CEL rule compiler
//! of [`crate::crd::cel`] (compile errors are field errors, as in kube);
//! validating default values against their schema is delegated to an
//! optional [`Hooks`] callback, and a CEL hook replaces the compiler.

/// Go `%#v` renderings used in messages.
pub mod gorepr;
/// CRD names, group, API approval and the controllers' status.
pub mod names;
/// Recursive `openAPIV3Schema` checks.
pub mod openapi;
/// Typed view of `JSONSchemaProps`.
pub mod schema;
/// Structural-schema rules and default pruning.
pub mod structural;

use crate::validation::names::is_dns1035_label;
use crate::validation::{
    Checker, FieldError, Obj, child, go_repr, index, invalid_message, metadata,
};
use names::Names;
use openapi::{CelHook, Opts};
use schema::Schema;
use serde_json::{Map, Value, json};
pub use structural::DefaultValueHook;

mod conversion;
mod model;
mod validate;

#[allow(unused_imports)]
pub use self::conversion::*;
#[allow(unused_imports)]
pub use self::model::*;
#[allow(unused_imports)]
pub use self::validate::*;

/// The qualified kind used in Invalid messages.
pub const QUALIFIED_KIND: &str = "CustomResourceDefinition.apiextensions.k8s.io";

const PRINTER_COLUMN_TYPES: &[&str] = &["boolean", "date", "integer", "number", "string"];
const PRINTER_COLUMN_FORMATS: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];
const ALLOWED_AT_ROOT: &[&str] = &[
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];
const MAX_SELECTABLE_FIELDS: i64 = 8;

/// Optional callbacks for checks implemented elsewhere.
#[derive(Default, Clone, Copy)]
pub struct Hooks<'h> {
    /// Compiles `x-kubernetes-validations` of one schema node (CEL), in
    /// place of the built-in compiler.
    pub cel: Option<CelHook<'h>>,
    /// Validates a `default` value against its schema node.
    pub default_value: Option<DefaultValueHook<'h>>,
}

/// Validates a CRD on create (`old` None) or update, as
/// ValidateCustomResourceDefinition / ...Update do in apiextensions-apiserver
/// 1.32. Wrong JSON types yield only `TypeInvalid` errors (kube's decoder
/// would reject the body with 400).
pub fn validate(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    validate_with(crd, old, Hooks::default())
}

/// [`validate`] with hooks for CEL and default-value validation.
pub fn validate_with(crd: &Value, old: Option<&Value>, hooks: Hooks<'_>) -> Vec<FieldError> {
    let mut ck = Checker::default();
    let Some(root) = crd.as_object() else {
        ck.push(FieldError::type_invalid("", crd.clone(), "object"));
        return ck.errs;
    };
    let new = Crd::parse(&mut ck, root);
    let mut old_ck = Checker::default();
    let old_crd = old
        .and_then(Value::as_object)
        .map(|o| Crd::parse(&mut old_ck, o));
    if !ck.errs.is_empty() {
        return ck.errs;
    }
    let mut errs = Vec::new();
    match (&old_crd, old.and_then(Value::as_object)) {
        (Some(o), Some(old_root)) => {
            let mut mck = Checker::default();
            metadata::validate_object_meta_update(&mut mck, root, old_root);
            errs.extend(mck.errs);
            let opts = VOpts::for_update(o);
            validate_spec(&new.spec, &opts, hooks, &mut errs);
            if opts.require_immutable_names {
                immutable(&mut errs, "spec.scope", new.spec.scope, o.spec.scope);
                immutable(
                    &mut errs,
                    "spec.names.kind",
                    &new.spec.names.kind,
                    &o.spec.names.kind,
                );
            }
            immutable(&mut errs, "spec.group", new.spec.group, o.spec.group);
            immutable(
                &mut errs,
                "spec.names.plural",
                &new.spec.names.plural,
                &o.spec.names.plural,
            );
            names::validate_names(&o.accepted_names, "status.acceptedNames", &mut errs);
            let stored = stored_versions_for(&new, Some(&o.stored_versions));
            validate_stored_versions(stored.as_deref(), &new.spec.versions, &mut errs);
            names::validate_api_approval(
                new.spec.group,
                new.approval_annotation,
                Some(o.approval_annotation),
                &mut errs,
            );
            if !o.spec.preserve_unknown_fields {
                validate_preserve_unknown_fields(&new, &mut errs);
            }
        }
        _ => {
            errs.extend(validate_meta_create(root, &new));
            validate_spec(&new.spec, &VOpts::for_create(), hooks, &mut errs);
            let stored = stored_versions_for(&new, None);
            validate_stored_versions(stored.as_deref(), &new.spec.versions, &mut errs);
            names::validate_api_approval(new.spec.group, new.approval_annotation, None, &mut errs);
            validate_preserve_unknown_fields(&new, &mut errs);
        }
    }
    errs
}

/// The `Invalid` status message for a CRD's errors.
pub fn invalid_crd_message(crd: &Value, errors: &[FieldError]) -> String {
    let name = crd
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    invalid_message(QUALIFIED_KIND, name, errors)
}

/// `status.storedVersions` after PrepareForCreate (`old` None: starts
/// empty) or PrepareForUpdate (starts from the old object's list): the
/// first storage version is appended when missing.
pub fn stored_versions(crd: &Value, old: Option<&Value>) -> Vec<String> {
    let mut ck = Checker::default();
    let Some(root) = crd.as_object() else {
        return Vec::new();
    };
    let new = Crd::parse(&mut ck, root);
    let old_list = old.map(|o| {
        o.get("status")
            .and_then(|s| s.get("storedVersions"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>())
            .unwrap_or_default()
    });
    stored_versions_for(&new, old_list.as_ref()).unwrap_or_default()
}

fn stored_versions_for(crd: &Crd<'_>, old: Option<&Vec<&str>>) -> Option<Vec<String>> {
    let mut out: Option<Vec<String>> = old
        .filter(|o| !o.is_empty())
        .map(|o| o.iter().map(|s| s.to_string()).collect());
    if let Some(v) = crd.spec.versions.iter().find(|v| v.storage) {
        let list = out.get_or_insert_with(Vec::new);
        if !list.iter().any(|s| s == v.name) {
            list.push(v.name.to_string());
        }
    }
    out
}

/// apiextensions v1 defaulting (`SetDefaults_CustomResourceDefinition`,
/// `SetDefaults_CustomResourceDefinitionSpec`, `SetDefaults_ServiceReference`):
/// `names.singular` (lowercased kind), `names.listKind` (`<Kind>List`),
/// `conversion` (`strategy: None`), webhook service port 443 and
/// `status.storedVersions`. Also fills `served`/`storage` with `false` when
/// absent (they are non-optional booleans in v1). kube applies no
/// defaulting to `JSONSchemaProps`.
pub fn apply_defaults(crd: &mut Value) {
    let Some(root) = crd.as_object_mut() else {
        return;
    };
    let mut first_storage: Option<String> = None;
    if let Some(Value::Object(spec)) = root.get_mut("spec") {
        if let Some(Value::Object(n)) = spec.get_mut("names") {
            let kind = n
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let empty = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
            if empty(n.get("singular")) && !kind.is_empty() {
                n.insert("singular".into(), Value::from(kind.to_lowercase()));
            }
            if empty(n.get("listKind")) && !kind.is_empty() {
                n.insert("listKind".into(), Value::from(format!("{kind}List")));
            }
        }
        if matches!(spec.get("conversion"), None | Some(Value::Null)) {
            spec.insert("conversion".into(), json!({"strategy": "None"}));
        }
        if let Some(Value::Object(svc)) = spec
            .get_mut("conversion")
            .and_then(|c| c.get_mut("webhook"))
            .and_then(|w| w.get_mut("clientConfig"))
            .and_then(|c| c.get_mut("service"))
            && matches!(svc.get("port"), None | Some(Value::Null))
        {
            svc.insert("port".into(), Value::from(443));
        }
        if let Some(Value::Array(vs)) = spec.get_mut("versions") {
            for v in vs.iter_mut().filter_map(Value::as_object_mut) {
                for f in ["served", "storage"] {
                    if matches!(v.get(f), None | Some(Value::Null)) {
                        v.insert(f.into(), Value::Bool(false));
                    }
                }
                if first_storage.is_none() && v.get("storage") == Some(&Value::Bool(true)) {
                    first_storage = v.get("name").and_then(Value::as_str).map(str::to_string);
                }
            }
        }
    }
    let stored_empty = root
        .get("status")
        .and_then(|s| s.get("storedVersions"))
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if stored_empty && let Some(sv) = first_storage {
        if !matches!(root.get("status"), Some(Value::Object(_))) {
            root.insert("status".into(), Value::Object(Map::new()));
        }
        if let Some(Value::Object(st)) = root.get_mut("status") {
            st.insert("storedVersions".into(), json!([sv]));
        }
    }
}

/// The status the server sets right after accepting a CRD: the naming
/// controller's `NamesAccepted` condition and `acceptedNames` (conflicts
/// are checked against `status.acceptedNames` of the `existing` CRDs in the
/// same group), the establishing controller's `Established` condition,
/// `KubernetesAPIApprovalPolicyConformant` for protected groups, and
/// `storedVersions` (kept from `crd.status` when present). Transition times
/// are `now` where a condition is added or changes status.
pub fn accepted_status(crd: &Value, existing: &[&Value], now: &str) -> Value {
    names::accepted_status(crd, existing, now)
}

fn immutable(errs: &mut Vec<FieldError>, path: &str, new: &str, old: &str) {
    if new != old {
        errs.push(FieldError::invalid(path, new, metadata::FIELD_IMMUTABLE));
    }
}

#[cfg(test)]
mod tests;
