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
//! CEL compilation of `x-kubernetes-validations` and validating default
//! values against their schema are delegated to optional [`Hooks`].

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

use crate::validation::names::{is_dns1035_label, is_dns1123_subdomain, is_valid_port_num};
use crate::validation::{
    Checker, FieldError, Obj, child, go_repr, index, invalid_message, metadata,
};
use names::Names;
use openapi::{CelHook, Opts};
use schema::Schema;
use serde_json::{Map, Value, json};
pub use structural::DefaultValueHook;

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
    /// Compiles `x-kubernetes-validations` of one schema node (CEL).
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

// ---------------------------------------------------------------------------
// Model (the internal type, after v1 conversion).

#[derive(Default)]
struct Validation<'a> {
    openapi: Option<Schema<'a>>,
}

#[derive(Default)]
struct Scale<'a> {
    spec_replicas_path: &'a str,
    status_replicas_path: &'a str,
    label_selector_path: Option<&'a str>,
}

#[derive(Default)]
struct Subresources<'a> {
    status: bool,
    scale: Option<Scale<'a>>,
}

#[derive(Default)]
struct Column<'a> {
    name: &'a str,
    type_: &'a str,
    format: &'a str,
    description: &'a str,
    priority: i64,
    json_path: &'a str,
}

#[derive(Default)]
struct Version<'a> {
    name: &'a str,
    served: bool,
    storage: bool,
    deprecated: bool,
    deprecation_warning: Option<&'a str>,
    schema: Option<Validation<'a>>,
    subresources: Option<Subresources<'a>>,
    columns: Option<Vec<Column<'a>>>,
    selectable: Option<Vec<&'a str>>,
    raw: Option<&'a Obj>,
}

struct Service<'a> {
    name: &'a str,
    namespace: &'a str,
    path: Option<&'a str>,
    port: i64,
}

struct ClientConfig<'a> {
    url: Option<&'a str>,
    service: Option<Service<'a>>,
}

struct Conversion<'a> {
    strategy: &'a str,
    client_config: Option<ClientConfig<'a>>,
    review_versions: Option<Vec<&'a str>>,
}

#[derive(Default)]
struct Spec<'a> {
    group: &'a str,
    names: Names,
    scope: &'a str,
    versions: Vec<Version<'a>>,
    versions_nil: bool,
    validation: Option<Validation<'a>>,
    subresources: Option<Subresources<'a>>,
    columns: Option<Vec<Column<'a>>>,
    selectable: Option<Vec<&'a str>>,
    conversion: Option<Conversion<'a>>,
    preserve_unknown_fields: bool,
}

struct Crd<'a> {
    name: &'a str,
    generate_name: &'a str,
    approval_annotation: Option<&'a str>,
    spec: Spec<'a>,
    accepted_names: Names,
    stored_versions: Vec<&'a str>,
    established: bool,
}

/// Semantic equality of two optional JSON values: `null`, missing and `[]`
/// are the same (nil and empty slices compare equal in kube).
fn sem_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn is_nilish(v: Option<&Value>) -> bool {
        matches!(v, None | Some(Value::Null)) || matches!(v, Some(Value::Array(a)) if a.is_empty())
    }
    if is_nilish(a) && is_nilish(b) {
        return true;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.keys().chain(y.keys()).all(|k| sem_eq(x.get(k), y.get(k)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| sem_eq(Some(p), Some(q)))
        }
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn parse_subresources<'a>(ck: &mut Checker, o: &'a Obj, path: &str) -> Subresources<'a> {
    let status = ck.obj(o, "status", path).is_some();
    let scale = ck.obj(o, "scale", path).map(|s| {
        let p = child(path, "scale");
        Scale {
            spec_replicas_path: ck.string(s, "specReplicasPath", &p),
            status_replicas_path: ck.string(s, "statusReplicasPath", &p),
            label_selector_path: ck.str(s, "labelSelectorPath", &p),
        }
    });
    Subresources { status, scale }
}

fn parse_columns<'a>(ck: &mut Checker, o: &'a Obj, path: &str) -> Option<Vec<Column<'a>>> {
    ck.arr(o, "additionalPrinterColumns", path)?;
    let p = child(path, "additionalPrinterColumns");
    Some(
        ck.obj_items(o, "additionalPrinterColumns", path)
            .into_iter()
            .map(|(i, c)| {
                let cp = index(&p, i);
                Column {
                    name: ck.string(c, "name", &cp),
                    type_: ck.string(c, "type", &cp),
                    format: ck.string(c, "format", &cp),
                    description: ck.string(c, "description", &cp),
                    priority: ck.i32(c, "priority", &cp).unwrap_or(0),
                    json_path: ck.string(c, "jsonPath", &cp),
                }
            })
            .collect(),
    )
}

fn parse_selectable<'a>(ck: &mut Checker, o: &'a Obj, path: &str) -> Option<Vec<&'a str>> {
    ck.arr(o, "selectableFields", path)?;
    let p = child(path, "selectableFields");
    Some(
        ck.obj_items(o, "selectableFields", path)
            .into_iter()
            .map(|(i, s)| ck.string(s, "jsonPath", &index(&p, i)))
            .collect(),
    )
}

fn parse_validation<'a>(ck: &mut Checker, o: &'a Obj, path: &str) -> Validation<'a> {
    Validation {
        openapi: ck
            .obj(o, "openAPIV3Schema", path)
            .map(|s| Schema::parse(ck, s, &child(path, "openAPIV3Schema"))),
    }
}

impl<'a> Crd<'a> {
    fn parse(ck: &mut Checker, root: &'a Obj) -> Crd<'a> {
        let empty: &'static Obj = empty_obj();
        let meta = ck.obj(root, "metadata", "").unwrap_or(empty);
        let ann = ck.obj(meta, "annotations", "metadata");
        let approval_annotation = ann
            .and_then(|a| a.get(names::API_APPROVED_ANNOTATION))
            .and_then(Value::as_str);
        let spec_o = ck.obj(root, "spec", "").unwrap_or(empty);
        let spec = Spec::parse(ck, spec_o);
        let status = root.get("status").and_then(Value::as_object);
        let accepted_names = Names::from_json(status.and_then(|s| s.get("acceptedNames")));
        let stored_versions = status
            .and_then(|s| s.get("storedVersions"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let established = status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Established")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            });
        Crd {
            name: meta.get("name").and_then(Value::as_str).unwrap_or(""),
            generate_name: meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or(""),
            approval_annotation,
            spec,
            accepted_names,
            stored_versions,
            established,
        }
    }
}

fn empty_obj() -> &'static Obj {
    static EMPTY: std::sync::OnceLock<Obj> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Obj::new)
}

fn names_from_obj(ck: &mut Checker, o: Option<&Obj>, path: &str) -> Names {
    let Some(o) = o else {
        return Names::default();
    };
    let own = |v: &str| v.to_string();
    Names {
        plural: own(ck.string(o, "plural", path)),
        singular: own(ck.string(o, "singular", path)),
        short_names: ck
            .str_list(o, "shortNames", path)
            .into_iter()
            .map(own)
            .collect(),
        kind: own(ck.string(o, "kind", path)),
        list_kind: own(ck.string(o, "listKind", path)),
        categories: ck
            .str_list(o, "categories", path)
            .into_iter()
            .map(own)
            .collect(),
    }
}

impl<'a> Spec<'a> {
    fn parse(ck: &mut Checker, o: &'a Obj) -> Spec<'a> {
        let p = "spec";
        let names_o = ck.obj(o, "names", p);
        let mut spec = Spec {
            group: ck.string(o, "group", p),
            names: names_from_obj(ck, names_o, "spec.names"),
            scope: ck.string(o, "scope", p),
            preserve_unknown_fields: ck.bool(o, "preserveUnknownFields", p).unwrap_or(false),
            versions_nil: ck.arr(o, "versions", p).is_none(),
            ..Spec::default()
        };
        for (i, v) in ck.obj_items(o, "versions", p) {
            let vp = index("spec.versions", i);
            let mut ver = Version {
                name: ck.string(v, "name", &vp),
                served: ck.bool(v, "served", &vp).unwrap_or(false),
                storage: ck.bool(v, "storage", &vp).unwrap_or(false),
                deprecated: ck.bool(v, "deprecated", &vp).unwrap_or(false),
                deprecation_warning: ck.str(v, "deprecationWarning", &vp),
                raw: Some(v),
                ..Version::default()
            };
            ver.schema = ck
                .obj(v, "schema", &vp)
                .map(|s| parse_validation(ck, s, &child(&vp, "schema")));
            ver.subresources = ck
                .obj(v, "subresources", &vp)
                .map(|s| parse_subresources(ck, s, &child(&vp, "subresources")));
            ver.columns = parse_columns(ck, v, &vp);
            ver.selectable = parse_selectable(ck, v, &vp);
            spec.versions.push(ver);
        }
        if let Some(c) = ck.obj(o, "conversion", p) {
            let cp = "spec.conversion";
            let webhook = ck.obj(c, "webhook", cp);
            let wp = "spec.conversion.webhook";
            let client_config = webhook
                .and_then(|w| ck.obj(w, "clientConfig", wp))
                .map(|cc| {
                    let ccp = "spec.conversion.webhook.clientConfig";
                    let service = ck.obj(cc, "service", ccp).map(|s| {
                        let sp = "spec.conversion.webhook.clientConfig.service";
                        Service {
                            name: ck.string(s, "name", sp),
                            namespace: ck.string(s, "namespace", sp),
                            path: ck.str(s, "path", sp),
                            port: ck.i32(s, "port", sp).unwrap_or(443),
                        }
                    });
                    let _ = ck.str(cc, "caBundle", ccp);
                    ClientConfig {
                        url: ck.str(cc, "url", ccp),
                        service,
                    }
                });
            let review_versions = webhook.and_then(|w| {
                ck.arr(w, "conversionReviewVersions", wp)
                    .map(|_| ck.str_list(w, "conversionReviewVersions", wp))
            });
            spec.conversion = Some(Conversion {
                strategy: ck.string(c, "strategy", cp),
                client_config,
                review_versions,
            });
        }
        spec.hoist();
        spec
    }

    /// The v1 -> internal conversion: identical per-version fields move to
    /// the spec.
    fn hoist(&mut self) {
        let Some(first) = self.versions.first().and_then(|v| v.raw) else {
            return;
        };
        let same = |f: &str| {
            self.versions
                .iter()
                .all(|v| sem_eq(v.raw.and_then(|r| r.get(f)), first.get(f)))
        };
        let (sub, sch, col, sel) = (
            same("subresources"),
            same("schema"),
            same("additionalPrinterColumns"),
            same("selectableFields"),
        );
        let mut vs = std::mem::take(&mut self.versions);
        if let Some(v0) = vs.first_mut() {
            if sub {
                self.subresources = v0.subresources.take();
            }
            if sch {
                self.validation = v0.schema.take();
            }
            if col {
                self.columns = v0.columns.take();
            }
            if sel {
                self.selectable = v0.selectable.take();
            }
        }
        for v in vs.iter_mut() {
            if sub {
                v.subresources = None;
            }
            if sch {
                v.schema = None;
            }
            if col {
                v.columns = None;
            }
            if sel {
                v.selectable = None;
            }
        }
        self.versions = vs;
    }

    fn schemas(&self) -> impl Iterator<Item = &Schema<'a>> {
        self.validation
            .iter()
            .chain(self.versions.iter().filter_map(|v| v.schema.as_ref()))
            .filter_map(|v| v.openapi.as_ref())
    }

    fn has_schema_with(&self, f: &mut dyn FnMut(&Schema<'a>) -> bool) -> bool {
        self.schemas().any(|s| s.any(f))
    }

    fn all_versions_specify_schema(&self) -> bool {
        if self
            .validation
            .as_ref()
            .is_some_and(|v| v.openapi.is_some())
        {
            return true;
        }
        self.versions
            .iter()
            .all(|v| v.schema.as_ref().is_some_and(|s| s.openapi.is_some()))
    }
}

// ---------------------------------------------------------------------------
// Validation.

struct VOpts {
    allow_defaults: bool,
    require_recognized_review_version: bool,
    require_immutable_names: bool,
    require_openapi_schema: bool,
    require_valid_property_type: bool,
    require_structural: bool,
    require_pruned_defaults: bool,
    require_atomic_set_type: bool,
    require_map_list_keys: bool,
}

impl VOpts {
    fn for_create() -> VOpts {
        VOpts {
            allow_defaults: true,
            require_recognized_review_version: true,
            require_immutable_names: false,
            require_openapi_schema: true,
            require_valid_property_type: true,
            require_structural: true,
            require_pruned_defaults: true,
            require_atomic_set_type: true,
            require_map_list_keys: true,
        }
    }

    /// Ratcheting: checks the old object already fails are not tightened.
    fn for_update(old: &Crd<'_>) -> VOpts {
        let spec = &old.spec;
        let crv_ok = spec.conversion.as_ref().is_none_or(|c| {
            c.review_versions
                .as_ref()
                .is_none_or(|v| v.is_empty() || v.iter().any(|x| matches!(*x, "v1" | "v1beta1")))
        });
        VOpts {
            allow_defaults: true,
            require_recognized_review_version: crv_ok,
            require_immutable_names: old.established,
            require_openapi_schema: spec.all_versions_specify_schema(),
            require_valid_property_type: !spec.has_schema_with(&mut |s| {
                !s.type_.is_empty() && !openapi::OPENAPI_V3_TYPES.contains(&s.type_)
            }),
            require_structural: !spec.schemas().any(|s| !structural::is_structural(s)),
            require_pruned_defaults: !spec.schemas().any(structural::has_unpruned_defaults),
            require_atomic_set_type: !spec.has_schema_with(&mut has_non_atomic_set),
            require_map_list_keys: !spec
                .has_schema_with(&mut |s| !openapi::map_list_keys_map_set(s, "").is_empty()),
        }
    }
}

fn has_non_atomic_set(s: &Schema<'_>) -> bool {
    if s.x_list_type != Some("set") {
        return false;
    }
    match s.items_schema() {
        Some(is) if is.type_ == "array" => is.x_list_type.is_some_and(|t| t != "atomic"),
        Some(is) if is.type_ == "object" => is.x_map_type != Some("atomic"),
        _ => false,
    }
}

fn validate_meta_create(root: &Obj, crd: &Crd<'_>) -> Vec<FieldError> {
    let (plural, group) = (crd.spec.names.plural.as_str(), crd.spec.group);
    let mut errs = Vec::new();
    if !crd.generate_name.is_empty() {
        for m in names::crd_name_errors(crd.generate_name, true, plural, group) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                crd.generate_name,
                m,
            ));
        }
    }
    if !crd.name.is_empty() {
        for m in names::crd_name_errors(crd.name, false, plural, group) {
            errs.push(FieldError::invalid("metadata.name", crd.name, m));
        }
    }
    let mut mck = Checker::default();
    metadata::validate_object_meta(&mut mck, root, false, |_, _| Vec::new(), false);
    errs.extend(mck.errs);
    errs
}

fn versions_repr(spec: &Spec<'_>) -> Value {
    let ty = "apiextensions.CustomResourceDefinitionVersion";
    if spec.versions_nil && spec.versions.is_empty() {
        return go_repr(format!("[]{ty}(nil)"));
    }
    let parts: Vec<String> = spec
        .versions
        .iter()
        .map(|v| {
            let cols = match &v.columns {
                None => "[]apiextensions.CustomResourceColumnDefinition(nil)".to_string(),
                Some(c) => format!(
                    "[]apiextensions.CustomResourceColumnDefinition{{{}}}",
                    c.iter()
                        .map(|c| format!(
                            "apiextensions.CustomResourceColumnDefinition{{Name:{}, Type:{}, Format:{}, Description:{}, Priority:{}, JSONPath:{}}}",
                            q(c.name), q(c.type_), q(c.format), q(c.description), c.priority, q(c.json_path)
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            let sel = match &v.selectable {
                None => "[]apiextensions.SelectableField(nil)".to_string(),
                Some(s) => format!(
                    "[]apiextensions.SelectableField{{{}}}",
                    s.iter()
                        .map(|p| format!("apiextensions.SelectableField{{JSONPath:{}}}", q(p)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            format!(
                "{ty}{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{cols}, SelectableFields:{sel}}}",
                q(v.name),
                v.served,
                v.storage,
                v.deprecated,
                gorepr::ptr("string", v.deprecation_warning.is_some()),
                gorepr::ptr("apiextensions.CustomResourceValidation", v.schema.is_some()),
                gorepr::ptr("apiextensions.CustomResourceSubresources", v.subresources.is_some()),
            )
        })
        .collect();
    go_repr(format!("[]{ty}{{{}}}", parts.join(", ")))
}

fn q(s: &str) -> String {
    crate::validation::go_quote(s)
}

fn validate_spec(spec: &Spec<'_>, opts: &VOpts, hooks: Hooks<'_>, errs: &mut Vec<FieldError>) {
    names::validate_group(spec.group, errs);
    match spec.scope {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    let mut require_structural = opts.require_structural || !spec.preserve_unknown_fields;
    let top_schema = spec.validation.as_ref().and_then(|v| v.openapi.as_ref());
    if top_schema.is_none() {
        for (i, v) in spec.versions.iter().enumerate() {
            let missing = v.schema.as_ref().is_none_or(|s| s.openapi.is_none());
            let p = child(
                &child(&index("spec.versions", i), "schema"),
                "openAPIV3Schema",
            );
            if opts.require_openapi_schema {
                if missing {
                    errs.push(FieldError::required(p, "schemas are required"));
                }
            } else if !spec.preserve_unknown_fields && v.served && missing {
                errs.push(FieldError::required(
                    p,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    if opts.allow_defaults && spec.has_schema_with(&mut |s| s.default.is_some()) {
        require_structural = true;
        if spec.preserve_unknown_fields {
            errs.push(FieldError::invalid(
                "spec.preserveUnknownFields",
                true,
                "must be false in order to use defaults in the schema",
            ));
        }
    }
    if spec.has_schema_with(&mut |s| {
        s.x_embedded
            || s.x_preserve.is_some()
            || s.x_int_or_string
            || s.x_list_map_keys.as_ref().is_some_and(|k| !k.is_empty())
            || s.x_list_type.is_some()
            || !s.x_validations.is_empty()
    }) {
        require_structural = true;
    }
    let sopts = SchemaOpts {
        base: Opts {
            allow_defaults: opts.allow_defaults,
            disallow_defaults_reason: String::new(),
            inside_resource_meta: false,
            require_valid_property_type: opts.require_valid_property_type,
            require_atomic_set_type: opts.require_atomic_set_type,
            require_map_list_keys_map_set_validation: opts.require_map_list_keys,
        },
        require_structural,
        require_pruned_defaults: opts.require_pruned_defaults,
        hooks,
    };

    let mut storage_count = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    let per_version_sub = spec.versions.iter().any(|v| v.subresources.is_some());
    for (i, v) in spec.versions.iter().enumerate() {
        if v.storage {
            storage_count += 1;
        }
        if seen.contains(&v.name) {
            unique = false;
        } else {
            seen.push(v.name);
        }
        let vp = index("spec.versions", i);
        let e = is_dns1035_label(v.name);
        if !e.is_empty() {
            errs.push(FieldError::invalid(child(&vp, "name"), v.name, e.join(",")));
        }
        let sub = if per_version_sub {
            v.subresources.as_ref()
        } else {
            spec.subresources.as_ref()
        };
        validate_version(v, &vp, sub.is_some_and(|s| s.status), &sopts, errs);
    }
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_repr(spec),
            "must contain unique version names",
        ));
    }
    if storage_count != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_repr(spec),
            "must have exactly one version marked as storage version",
        ));
    }
    // spec.version is versions[0].name after conversion.
    if let Some(v0) = spec.versions.first()
        && !v0.name.is_empty()
    {
        let e = is_dns1035_label(v0.name);
        if !e.is_empty() {
            errs.push(FieldError::invalid("spec.version", v0.name, e.join(",")));
        }
    }
    for (f, v) in [
        ("plural", &spec.names.plural),
        ("singular", &spec.names.singular),
        ("kind", &spec.names.kind),
        ("listKind", &spec.names.list_kind),
    ] {
        if v.is_empty() {
            errs.push(FieldError::required(child("spec.names", f), ""));
        }
    }
    names::validate_names(&spec.names, "spec.names", errs);
    let any_status = spec.subresources.as_ref().is_some_and(|s| s.status)
        || spec
            .versions
            .iter()
            .any(|v| v.subresources.as_ref().is_some_and(|s| s.status));
    validate_validation(
        spec.validation.as_ref(),
        any_status,
        &sopts,
        "spec.validation",
        errs,
    );
    if let Some(s) = &spec.subresources {
        validate_subresources(s, "spec.subresources", errs);
    }
    for (i, c) in spec.columns.iter().flatten().enumerate() {
        validate_column(c, &index("spec.additionalPrinterColumns", i), errs);
    }
    if let Some(sel) = spec.selectable.as_ref().filter(|s| !s.is_empty()) {
        match &spec.validation {
            None => errs.push(FieldError::invalid(
                "spec.selectableFields",
                "",
                "selectableFields may only be set when validations.schema is included",
            )),
            Some(v) => {
                let schema = v.openapi.as_ref();
                if let Some(e) = schema.and_then(structural::new_structural_error) {
                    errs.push(FieldError::invalid("spec.schema.openAPIV3Schema", "", e));
                }
                validate_selectable(sel, schema, "spec.selectableFields", errs);
            }
        }
    }
    if let Some(c) = &spec.conversion {
        if c.strategy != "None" && spec.preserve_unknown_fields {
            errs.push(FieldError::invalid(
                "spec.conversion.strategy",
                c.strategy,
                "must be None if spec.preserveUnknownFields is true",
            ));
        }
        validate_conversion(c, opts.require_recognized_review_version, errs);
    }
}

struct SchemaOpts<'h> {
    base: Opts,
    require_structural: bool,
    require_pruned_defaults: bool,
    hooks: Hooks<'h>,
}

fn validate_version(
    v: &Version<'_>,
    vp: &str,
    status_enabled: bool,
    sopts: &SchemaOpts<'_>,
    errs: &mut Vec<FieldError>,
) {
    for m in deprecation_warning_errors(v.deprecated, v.deprecation_warning) {
        errs.push(FieldError::invalid(
            child(vp, "deprecationWarning"),
            v.deprecation_warning.unwrap_or(""),
            m,
        ));
    }
    validate_validation(
        v.schema.as_ref(),
        status_enabled,
        sopts,
        &child(vp, "schema"),
        errs,
    );
    if let Some(s) = &v.subresources {
        validate_subresources(s, &child(vp, "subresources"), errs);
    }
    for (i, c) in v.columns.iter().flatten().enumerate() {
        validate_column(c, &index(&child(vp, "additionalPrinterColumns"), i), errs);
    }
    if let Some(sel) = v.selectable.as_ref().filter(|s| !s.is_empty()) {
        let sp = child(vp, "selectableFields");
        match v.schema.as_ref().and_then(|s| s.openapi.as_ref()) {
            None => errs.push(FieldError::invalid(
                sp,
                "",
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
            Some(schema) => {
                if let Some(e) = structural::new_structural_error(schema) {
                    errs.push(FieldError::invalid(child(vp, "schema.openAPIV3Schema"), "", e));
                }
                validate_selectable(sel, Some(schema), &sp, errs);
            }
        }
    }
}

fn is_print(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

fn deprecation_warning_errors(deprecated: bool, w: Option<&str>) -> Vec<String> {
    let Some(w) = w else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".to_string()];
    }
    let mut out = Vec::new();
    if w.len() > 256 {
        out.push("must be <= 256 characters long".to_string());
    }
    if w.is_empty() {
        out.push("must not be an empty string".to_string());
    }
    if let Some((i, _)) = w.char_indices().find(|(_, c)| !is_print(*c)) {
        out.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    out
}

fn validate_validation(
    v: Option<&Validation<'_>>,
    status_enabled: bool,
    sopts: &SchemaOpts<'_>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let Some(schema) = v.and_then(|v| v.openapi.as_ref()) else {
        return;
    };
    let mut errs = Vec::new();
    let sp = child(path, "openAPIV3Schema");
    if status_enabled {
        for f in schema.set_fields() {
            if f == "Type" {
                if schema.type_ != "object" {
                    errs.push(FieldError::invalid(
                        child(path, "openAPIV3Schema.type"),
                        schema.type_,
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ALLOWED_AT_ROOT.contains(&f) {
                errs.push(FieldError::invalid(
                    &sp,
                    go_repr(gorepr::schema_props(schema)),
                    format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ALLOWED_AT_ROOT.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if schema.nullable {
        errs.push(FieldError::forbidden(
            child(path, "openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut cel_enabled = false;
    let mut init_errs = Vec::new();
    if sopts.require_structural {
        if let Some(e) = structural::new_structural_error(schema) {
            init_errs.push(FieldError::invalid(&sp, "", e));
        } else {
            let se = structural::validate_structural(&sp, schema);
            if !se.is_empty() {
                errs.extend(se);
            } else {
                let de = structural::validate_defaults(
                    &sp,
                    schema,
                    sopts.require_pruned_defaults,
                    sopts.hooks.default_value,
                );
                if !de.is_empty() {
                    errs.extend(de);
                } else {
                    cel_enabled = true;
                }
            }
        }
    }
    let mut oe = openapi::Errors::default();
    openapi::validate(
        schema,
        &sp,
        &sopts.base,
        true,
        cel_enabled,
        sopts.hooks.cel,
        &mut oe,
    );
    errs.extend(oe.schema);
    errs.extend(oe.cel);
    if errs.is_empty() {
        errs.extend(init_errs);
    }
    out.extend(errs);
}

fn simple_json_path(s: &str, path: &str, errs: &mut Vec<FieldError>) -> bool {
    if s.is_empty() {
        errs.push(FieldError::invalid(path, s, "must not be empty"));
        false
    } else if !s.starts_with('.') {
        errs.push(FieldError::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        ));
        false
    } else {
        true
    }
}

fn validate_subresources(s: &Subresources<'_>, path: &str, errs: &mut Vec<FieldError>) {
    let Some(sc) = &s.scale else {
        return;
    };
    let sp = child(path, "scale.specReplicasPath");
    if sc.spec_replicas_path.is_empty() {
        errs.push(FieldError::required(sp, ""));
    } else if simple_json_path(sc.spec_replicas_path, &sp, errs)
        && !sc.spec_replicas_path.starts_with(".spec.")
    {
        errs.push(FieldError::invalid(
            sp,
            sc.spec_replicas_path,
            "should be a json path under .spec",
        ));
    }
    let tp = child(path, "scale.statusReplicasPath");
    if sc.status_replicas_path.is_empty() {
        errs.push(FieldError::required(tp, ""));
    } else if simple_json_path(sc.status_replicas_path, &tp, errs)
        && !sc.status_replicas_path.starts_with(".status.")
    {
        errs.push(FieldError::invalid(
            tp,
            sc.status_replicas_path,
            "should be a json path under .status",
        ));
    }
    if let Some(l) = sc.label_selector_path.filter(|l| !l.is_empty()) {
        let lp = child(path, "scale.labelSelectorPath");
        if simple_json_path(l, &lp, errs) && !l.starts_with(".spec.") && !l.starts_with(".status.")
        {
            errs.push(FieldError::invalid(
                lp,
                l,
                "should be a json path under either .spec or .status",
            ));
        }
    }
}

fn validate_column(c: &Column<'_>, path: &str, errs: &mut Vec<FieldError>) {
    if c.name.is_empty() {
        errs.push(FieldError::required(child(path, "name"), ""));
    }
    let types = format!("must be one of {}", PRINTER_COLUMN_TYPES.join(","));
    if c.type_.is_empty() {
        errs.push(FieldError::required(child(path, "type"), types));
    } else if !PRINTER_COLUMN_TYPES.contains(&c.type_) {
        errs.push(FieldError::invalid(child(path, "type"), c.type_, types));
    }
    if !c.format.is_empty() && !PRINTER_COLUMN_FORMATS.contains(&c.format) {
        errs.push(FieldError::invalid(
            child(path, "format"),
            c.format,
            format!("must be one of {}", PRINTER_COLUMN_FORMATS.join(",")),
        ));
    }
    let jp = child(path, "JSONPath");
    if c.json_path.is_empty() {
        errs.push(FieldError::required(jp, ""));
    } else {
        simple_json_path(c.json_path, &jp, errs);
    }
}

fn validate_selectable(
    fields: &[&str],
    schema: Option<&Schema<'_>>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let mut unique: Vec<String> = Vec::new();
    for (i, jp) in fields.iter().enumerate() {
        let p = child(&index(path, i), "jsonPath");
        if jp.is_empty() {
            errs.push(FieldError::required(p, ""));
            continue;
        }
        let fp = match openapi::valid_field_path(jp, schema, false) {
            Ok(fp) => fp,
            Err(e) => {
                errs.push(FieldError::invalid(
                    p,
                    *jp,
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if fp.elems.first().is_some_and(|(n, _)| n == "metadata") {
            errs.push(FieldError::invalid(
                &p,
                *jp,
                "must not point to fields in metadata",
            ));
        }
        if !fp
            .schema
            .is_some_and(|s| matches!(s.type_, "string" | "boolean" | "integer"))
        {
            errs.push(FieldError::invalid(
                &p,
                *jp,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        let rendered = fp.render();
        if unique.contains(&rendered) {
            errs.push(FieldError::duplicate(p, *jp));
        } else {
            unique.push(rendered);
        }
    }
    let n = i64::try_from(unique.len()).unwrap_or(i64::MAX);
    if n > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(path, Some(n), MAX_SELECTABLE_FIELDS));
    }
}

fn validate_conversion(c: &Conversion<'_>, require_recognized: bool, errs: &mut Vec<FieldError>) {
    let p = "spec.conversion";
    match c.strategy {
        "" => errs.push(FieldError::required(child(p, "strategy"), "")),
        "None" | "Webhook" => {}
        other => errs.push(FieldError::not_supported(
            child(p, "strategy"),
            other,
            &["None", "Webhook"],
        )),
    }
    let wcc = child(p, "webhookClientConfig");
    let crv = child(p, "conversionReviewVersions");
    if c.strategy == "Webhook" {
        match &c.client_config {
            None => errs.push(FieldError::required(
                &wcc,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => match (cc.url, &cc.service) {
                (Some(u), None) => validate_webhook_url(u, &child(&wcc, "url"), errs),
                (None, Some(s)) => validate_webhook_service(s, &child(&wcc, "service"), errs),
                _ => errs.push(FieldError::required(
                    &wcc,
                    "exactly one of url or service is required",
                )),
            },
        }
        let versions: &[&str] = c.review_versions.as_deref().unwrap_or(&[]);
        if versions.is_empty() {
            errs.push(FieldError::required(&crv, ""));
        } else {
            let mut seen: Vec<&str> = Vec::new();
            let mut accepted = false;
            for (i, v) in versions.iter().enumerate() {
                if seen.contains(v) {
                    errs.push(FieldError::invalid(index(&crv, i), *v, "duplicate version"));
                    continue;
                }
                seen.push(v);
                for m in is_dns1035_label(v) {
                    errs.push(FieldError::invalid(index(&crv, i), *v, m));
                }
                if matches!(*v, "v1" | "v1beta1") {
                    accepted = true;
                }
            }
            if require_recognized && !accepted {
                let list: Vec<Value> = versions.iter().map(|v| Value::from(*v)).collect();
                errs.push(FieldError::invalid(
                    &crv,
                    Value::Array(list),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if c.client_config.is_some() {
            errs.push(FieldError::forbidden(
                wcc,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if c.review_versions.as_ref().is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::forbidden(
                crv,
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

/// `webhook.ValidateWebhookURL` with `forceHttps`, on a simplified URL parser.
fn validate_webhook_url(u: &str, path: &str, errs: &mut Vec<FieldError>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = match u.split_once(':') {
        Some((s, r))
            if s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            (s.to_ascii_lowercase(), r)
        }
        _ => (String::new(), u),
    };
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (user, host) = match rest.strip_prefix("//") {
        Some(auth) => {
            let auth = auth.split('/').next().unwrap_or("");
            match auth.rsplit_once('@') {
                Some((user, host)) => (Some(user), host),
                None => (None, auth),
            }
        }
        None => (None, ""),
    };
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            scheme.as_str(),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `webhook.ValidateWebhookService`.
fn validate_webhook_service(s: &Service<'_>, path: &str, errs: &mut Vec<FieldError>) {
    if s.name.is_empty() {
        errs.push(FieldError::required(
            child(path, "name"),
            "service name is required",
        ));
    }
    if s.namespace.is_empty() {
        errs.push(FieldError::required(
            child(path, "namespace"),
            "service namespace is required",
        ));
    }
    let pe = is_valid_port_num(s.port);
    if !pe.is_empty() {
        errs.push(FieldError::invalid(
            child(path, "port"),
            s.port,
            format!("port is not valid: {}", pe.join(", ")),
        ));
    }
    let Some(up) = s.path else {
        return;
    };
    if up.is_empty() || up == "/" {
        return;
    }
    let pp = child(path, "path");
    if up == "//" {
        errs.push(FieldError::invalid(pp, up, "segment[0] may not be empty"));
        return;
    }
    if !up.starts_with('/') {
        errs.push(FieldError::invalid(&pp, up, "must start with a '/'"));
    }
    let check = up.get(1..).unwrap_or("");
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &pp,
                up,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for m in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(&pp, up, format!("segment[{i}]: {m}")));
        }
    }
}

fn validate_stored_versions(
    stored: Option<&[String]>,
    versions: &[Version<'_>],
    errs: &mut Vec<FieldError>,
) {
    let path = "status.storedVersions";
    let Some(stored) = stored.filter(|s| !s.is_empty()) else {
        let v = if stored.is_some() {
            go_repr("[]string{}")
        } else {
            go_repr("[]string(nil)")
        };
        errs.push(FieldError::invalid(
            path,
            v,
            "must have at least one stored version",
        ));
        return;
    };
    // storedVersionsMap: name -> last index.
    let mut remaining: Vec<(usize, &str)> = Vec::new();
    for (i, s) in stored.iter().enumerate() {
        remaining.retain(|(_, n)| *n != s.as_str());
        remaining.push((i, s.as_str()));
    }
    let list = || Value::Array(stored.iter().map(|s| Value::from(s.as_str())).collect());
    for v in versions {
        let found = remaining.iter().any(|(_, n)| *n == v.name);
        if v.storage && !found {
            errs.push(FieldError::invalid(
                path,
                list(),
                format!("must have the storage version {}", v.name),
            ));
        }
        if found {
            remaining.retain(|(_, n)| *n != v.name);
        }
    }
    remaining.sort_by_key(|(i, _)| *i);
    for (i, v) in remaining {
        errs.push(FieldError::invalid(
            index(path, i),
            v,
            format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            ),
        ));
    }
}

fn validate_preserve_unknown_fields(crd: &Crd<'_>, errs: &mut Vec<FieldError>) {
    if crd.spec.preserve_unknown_fields {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
}

#[cfg(test)]
mod tests;
