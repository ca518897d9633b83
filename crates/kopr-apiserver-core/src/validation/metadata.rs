//! ObjectMeta validation, like ValidateObjectMeta / ValidateObjectMetaUpdate
//! in k8s.io/apimachinery plus the core-group extra finalizer check: name and
//! generateName, namespace by scope, labels, annotations (256 KiB total),
//! ownerReferences, finalizers, managedFields and immutable fields on update.

use super::names;
use super::{Checker, FieldError, Obj, child, go_quote, go_repr, index};
use serde_json::Value;

/// A name validator: `(name, is_prefix) -> error messages`.
pub type NameFn = fn(&str, bool) -> Vec<String>;

/// Total size limit of all annotation keys and values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;

/// Message for immutable fields.
pub const FIELD_IMMUTABLE: &str = "field is immutable";

const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// Validates a label map at `path` (errors carry the map path, not the key).
pub fn validate_labels(ck: &mut Checker, labels: &[(&str, &str)], path: &str) {
    for (k, v) in labels {
        validate_label_name(ck, k, path);
        ck.extend(path, v, names::is_valid_label_value(v));
    }
}

/// Validates one label key (qualified name).
pub fn validate_label_name(ck: &mut Checker, name: &str, path: &str) {
    ck.extend(path, name, names::is_qualified_name(name));
}

/// Validates annotations: keys are case-insensitive qualified names and the
/// total size is limited.
pub fn validate_annotations(ck: &mut Checker, annotations: &[(&str, &str)], path: &str) {
    let mut total = 0usize;
    for (k, v) in annotations {
        for m in names::is_qualified_name(&k.to_lowercase()) {
            ck.push(FieldError::invalid(path, *k, m));
        }
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        ck.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B));
    }
}

fn go_ptr_bool(v: Option<bool>) -> String {
    match v {
        None => "(*bool)(nil)".to_string(),
        Some(_) => "(*bool)(0xc000000000)".to_string(),
    }
}

struct OwnerRef<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    uid: &'a str,
    controller: Option<bool>,
    block: Option<bool>,
}

impl OwnerRef<'_> {
    fn repr(&self) -> String {
        format!(
            "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
            go_quote(self.api_version),
            go_quote(self.kind),
            go_quote(self.name),
            go_quote(self.uid),
            go_ptr_bool(self.controller),
            go_ptr_bool(self.block)
        )
    }
}

/// Splits an apiVersion like `schema.ParseGroupVersion`: `(group, version)`,
/// or `None` when it has more than one `/`.
fn parse_group_version(gv: &str) -> Option<(&str, &str)> {
    if gv.is_empty() || gv == "/" {
        return Some(("", ""));
    }
    match gv.split('/').count() {
        1 => Some(("", gv)),
        2 => gv.split_once('/'),
        _ => None,
    }
}

/// Validates ownerReferences.
pub fn validate_owner_references(ck: &mut Checker, meta: &Obj, path: &str) {
    let items = ck.obj_items(
        meta,
        "ownerReferences",
        path.rsplit_once('.').map_or("", |p| p.0),
    );
    let mut refs = Vec::new();
    for (i, o) in items {
        let ip = index(path, i);
        let r = OwnerRef {
            api_version: ck.string(o, "apiVersion", &ip),
            kind: ck.string(o, "kind", &ip),
            name: ck.string(o, "name", &ip),
            uid: ck.string(o, "uid", &ip),
            controller: ck.bool(o, "controller", &ip),
            block: ck.bool(o, "blockOwnerDeletion", &ip),
        };
        refs.push(r);
    }
    let mut first_controller: Option<String> = None;
    for r in &refs {
        let (group, version) = parse_group_version(r.api_version).unwrap_or(("", ""));
        if version.is_empty() {
            ck.push(FieldError::invalid(
                child(path, "apiVersion"),
                r.api_version,
                "version must not be empty",
            ));
        }
        if r.kind.is_empty() {
            ck.push(FieldError::invalid(
                child(path, "kind"),
                r.kind,
                "must not be empty",
            ));
        }
        if r.name.is_empty() {
            ck.push(FieldError::invalid(
                child(path, "name"),
                r.name,
                "must not be empty",
            ));
        }
        if r.uid.is_empty() {
            ck.push(FieldError::invalid(
                child(path, "uid"),
                r.uid,
                "must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            ck.push(FieldError::invalid(
                path,
                go_repr(r.repr()),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.controller == Some(true) {
            let cur = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(OwnerRef::repr).collect();
                    ck.push(FieldError::invalid(
                        path,
                        go_repr(format!("[]v1.OwnerReference{{{}}}", all.join(", "))),
                        format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {cur}"
                        ),
                    ));
                }
                None => first_controller = Some(cur),
            }
        }
    }
}

fn string_slice_repr(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", q.join(", "))
}

/// Validates finalizers (qualified names; orphan and foregroundDeletion are
/// exclusive). `kube_names` adds the core-group "standard or fully
/// qualified" check per index.
pub fn validate_finalizers(ck: &mut Checker, finalizers: &[&str], path: &str, kube_names: bool) {
    let mut orphan = false;
    let mut foreground = false;
    for f in finalizers {
        ck.extend(path, f, names::is_qualified_name(f));
        orphan |= *f == "orphan";
        foreground |= *f == "foregroundDeletion";
    }
    if orphan && foreground {
        ck.push(FieldError::invalid(
            path,
            go_repr(string_slice_repr(finalizers)),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    if kube_names {
        for (i, f) in finalizers.iter().enumerate() {
            validate_kube_finalizer_name(ck, f, &index(path, i));
        }
    }
}

/// The core-group check that a finalizer without `/` is a standard one.
pub fn validate_kube_finalizer_name(ck: &mut Checker, f: &str, path: &str) {
    if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f) {
        ck.push(FieldError::invalid(
            path,
            f,
            "name is neither a standard finalizer name nor is it fully qualified",
        ));
    }
}

/// The rules of a managedFields entry, which the full check and the fast one share.
mod managed_rules {
    /// `operation` is one of kube's two.
    pub(super) fn operation(op: &str) -> bool {
        op == "Apply" || op == "Update"
    }
    /// `fieldsType`, when set, is the only one kube knows.
    pub(super) fn fields_type(ft: &str) -> bool {
        ft.is_empty() || ft == "FieldsV1"
    }
    /// The longest `manager`.
    pub(super) const MANAGER_MAX: usize = 128;
    /// The longest `subresource`.
    pub(super) const SUBRESOURCE_MAX: usize = 256;
}

fn validate_managed_fields(ck: &mut Checker, meta: &Obj) {
    // The usual list, every entry valid, has nothing to report: no field paths to build.
    if let Some(Value::Array(list)) = meta.get("managedFields")
        && list.iter().all(managed_fields_entry_is_valid)
    {
        return;
    }
    for (i, mf) in ck.obj_items(meta, "managedFields", "metadata") {
        let p = index("metadata.managedFields", i);
        let op = ck.string(mf, "operation", &p);
        if !managed_rules::operation(op) {
            ck.push(FieldError::invalid(
                child(&p, "operation"),
                op,
                "must be `Apply` or `Update`",
            ));
        }
        let ft = ck.string(mf, "fieldsType", &p);
        if !managed_rules::fields_type(ft) {
            ck.push(FieldError::invalid(
                child(&p, "fieldsType"),
                ft,
                "must be `FieldsV1`",
            ));
        }
        let mgr = ck.string(mf, "manager", &p);
        if mgr.len() > managed_rules::MANAGER_MAX {
            ck.push(FieldError::too_long(
                child(&p, "manager"),
                managed_rules::MANAGER_MAX,
            ));
        }
        let sub = ck.string(mf, "subresource", &p);
        if sub.len() > managed_rules::SUBRESOURCE_MAX {
            ck.push(FieldError::too_long(
                child(&p, "subresource"),
                managed_rules::SUBRESOURCE_MAX,
            ));
        }
    }
}

/// Whether [`validate_managed_fields`] finds nothing to report in an entry: an object whose
/// checked fields are absent or strings within the same rules ([`managed_rules`]).
fn managed_fields_entry_is_valid(entry: &Value) -> bool {
    let Value::Object(e) = entry else {
        return false;
    };
    let text = |k: &str| match e.get(k) {
        None => Some(""),
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => None,
    };
    text("operation").is_some_and(managed_rules::operation)
        && text("fieldsType").is_some_and(managed_rules::fields_type)
        && text("manager").is_some_and(|m| m.len() <= managed_rules::MANAGER_MAX)
        && text("subresource").is_some_and(|s| s.len() <= managed_rules::SUBRESOURCE_MAX)
}

/// Returns `metadata` of `root` (type-checked); an empty object when absent.
pub fn meta_of<'a>(ck: &mut Checker, root: &'a Obj) -> Option<&'a Obj> {
    ck.obj(root, "metadata", "")
}

/// ValidateObjectMeta for create: name/generateName via `name_fn`, namespace
/// per scope, generation, labels, annotations, ownerReferences, finalizers
/// (`kube_finalizers` adds the core-group check), managedFields.
pub fn validate_object_meta(
    ck: &mut Checker,
    root: &Obj,
    namespaced: bool,
    name_fn: NameFn,
    kube_finalizers: bool,
) {
    let empty = Obj::new();
    let meta = meta_of(ck, root).unwrap_or(&empty);
    let p = "metadata";
    let gen_name = ck.string(meta, "generateName", p);
    if !gen_name.is_empty() {
        ck.extend("metadata.generateName", gen_name, name_fn(gen_name, true));
    }
    let name = ck.string(meta, "name", p);
    if name.is_empty() {
        ck.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        ck.extend("metadata.name", name, name_fn(name, false));
    }
    let ns = ck.string(meta, "namespace", p);
    if namespaced {
        if ns.is_empty() {
            ck.push(FieldError::required("metadata.namespace", ""));
        } else {
            ck.extend(
                "metadata.namespace",
                ns,
                names::name_is_dns_label(ns, false),
            );
        }
    } else if !ns.is_empty() {
        ck.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    if let Some(g) = ck.i64(meta, "generation", p)
        && g < 0
    {
        ck.push(FieldError::invalid(
            "metadata.generation",
            g,
            "must be greater than or equal to 0",
        ));
    }
    let labels = ck.str_map(meta, "labels", p);
    validate_labels(ck, &labels, "metadata.labels");
    let ann = ck.str_map(meta, "annotations", p);
    validate_annotations(ck, &ann, "metadata.annotations");
    validate_owner_references(ck, meta, "metadata.ownerReferences");
    let fins = ck.str_list(meta, "finalizers", p);
    validate_finalizers(ck, &fins, "metadata.finalizers", false);
    validate_managed_fields(ck, meta);
    if kube_finalizers {
        for (i, f) in fins.iter().enumerate() {
            validate_kube_finalizer_name(ck, f, &index("metadata.finalizers", i));
        }
    }
}

/// Renders a JSON timestamp like Go prints a `metav1.Time`.
fn go_time(v: &Value) -> Value {
    match v {
        Value::Null => go_repr("<nil>"),
        Value::String(s) => {
            // "2006-01-02T15:04:05Z" -> "2006-01-02 15:04:05 +0000 UTC"
            if let Some(body) = s.strip_suffix('Z')
                && let Some((d, t)) = body.split_once('T')
            {
                return go_repr(format!("{d} {t} +0000 UTC"));
            }
            go_repr(s.clone())
        }
        other => other.clone(),
    }
}

fn value_or_null(m: &Obj, k: &str) -> Value {
    m.get(k).cloned().unwrap_or(Value::Null)
}

/// ValidateObjectMetaUpdate: no new finalizers while deleting, resourceVersion
/// required, generation not decremented, immutable identity fields, then
/// labels, annotations, ownerReferences and managedFields of the new object.
pub fn validate_object_meta_update(ck: &mut Checker, root: &Obj, old_root: &Obj) {
    let empty = Obj::new();
    let meta = meta_of(ck, root).unwrap_or(&empty);
    let mut scratch = Checker::default();
    let old = scratch.obj(old_root, "metadata", "").unwrap_or(&empty);
    let p = "metadata";
    if !matches!(old.get("deletionTimestamp"), None | Some(Value::Null)) {
        let new_f = ck.str_list(meta, "finalizers", p);
        let old_f = scratch.str_list(old, "finalizers", p);
        let mut extra: Vec<&str> = new_f
            .iter()
            .copied()
            .filter(|f| !old_f.contains(f))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        if !extra.is_empty() {
            ck.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    string_slice_repr(&extra)
                ),
            ));
        }
    }
    let rv = ck.string(meta, "resourceVersion", p);
    if rv.is_empty() {
        ck.push(FieldError::invalid(
            "metadata.resourceVersion",
            rv,
            "must be specified for an update",
        ));
    }
    let new_gen = ck.i64(meta, "generation", p).unwrap_or(0);
    let old_gen = scratch.i64(old, "generation", p).unwrap_or(0);
    if new_gen < old_gen {
        ck.push(FieldError::invalid(
            "metadata.generation",
            new_gen,
            "must not be decremented",
        ));
    }
    for f in ["name", "namespace", "uid"] {
        let n = meta.get(f).and_then(Value::as_str).unwrap_or("");
        let o = old.get(f).and_then(Value::as_str).unwrap_or("");
        if n != o {
            ck.push(FieldError::invalid(child(p, f), n, FIELD_IMMUTABLE));
        }
    }
    for f in ["creationTimestamp", "deletionTimestamp"] {
        let n = value_or_null(meta, f);
        let o = value_or_null(old, f);
        if n != o {
            ck.push(FieldError::invalid(
                child(p, f),
                go_time(&n),
                FIELD_IMMUTABLE,
            ));
        }
    }
    let n = value_or_null(meta, "deletionGracePeriodSeconds");
    if n != value_or_null(old, "deletionGracePeriodSeconds") {
        ck.push(FieldError::invalid(
            "metadata.deletionGracePeriodSeconds",
            n,
            FIELD_IMMUTABLE,
        ));
    }
    let labels = ck.str_map(meta, "labels", p);
    validate_labels(ck, &labels, "metadata.labels");
    let ann = ck.str_map(meta, "annotations", p);
    validate_annotations(ck, &ann, "metadata.annotations");
    validate_owner_references(ck, meta, "metadata.ownerReferences");
    validate_managed_fields(ck, meta);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value, namespaced: bool, f: NameFn) -> Vec<String> {
        let mut ck = Checker::default();
        let o = v.as_object().cloned().unwrap_or_default();
        validate_object_meta(&mut ck, &o, namespaced, f, true);
        ck.errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn name_rules() {
        assert_eq!(
            run(
                json!({"metadata": {"namespace": "default"}}),
                true,
                names::name_is_dns_subdomain
            ),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        let e = run(
            json!({"metadata": {"name": "Foo", "namespace": "default"}}),
            true,
            names::name_is_dns_subdomain,
        );
        assert_eq!(
            e,
            vec![
                "metadata.name: Invalid value: \"Foo\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            run(
                json!({"metadata": {"name": "a"}}),
                true,
                names::name_is_dns_subdomain
            ),
            vec!["metadata.namespace: Required value"]
        );
        assert_eq!(
            run(
                json!({"metadata": {"name": "a", "namespace": "x"}}),
                false,
                names::name_is_dns_subdomain
            ),
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
        assert!(
            run(
                json!({"metadata": {"generateName": "a-", "name": "a-x1"}}),
                false,
                names::name_is_dns_subdomain
            )
            .is_empty()
        );
    }

    #[test]
    fn labels_annotations_finalizers() {
        let e = run(
            json!({"metadata": {"name": "a", "labels": {"a/b/c": "x", "k": "-v"}}}),
            false,
            names::name_is_dns_subdomain,
        );
        assert_eq!(e.len(), 2);
        assert!(e[0].starts_with(
            "metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist"
        ));
        assert!(e[1].starts_with("metadata.labels: Invalid value: \"-v\": a valid label must be"));
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B);
        let e = run(
            json!({"metadata": {"name": "a", "annotations": {"K": big}}}),
            false,
            names::name_is_dns_subdomain,
        );
        assert_eq!(
            e,
            vec!["metadata.annotations: Too long: must have at most 262144 bytes"]
        );
        let e = run(
            json!({"metadata": {"name": "a", "finalizers": ["orphan", "foregroundDeletion", "custom"]}}),
            false,
            names::name_is_dns_subdomain,
        );
        assert_eq!(
            e,
            vec![
                "metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\", \"custom\"}: finalizer orphan and foregroundDeletion cannot be both set",
                "metadata.finalizers[2]: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified",
            ]
        );
    }

    #[test]
    fn managed_fields_entries() {
        let good = json!({"manager": "m", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}, "subresource": "status"});
        let with = |entries: Value| {
            run(
                json!({"metadata": {"name": "a", "managedFields": entries}}),
                false,
                names::name_is_dns_subdomain,
            )
        };
        assert!(with(json!([good, {"operation": "Apply", "manager": null}])).is_empty());
        assert_eq!(
            with(
                json!([good, {"operation": "Patch", "fieldsType": "FieldsV2",
                "manager": "m".repeat(129), "subresource": 5}, "x"])
            ),
            vec![
                "metadata.managedFields[2]: Invalid value: \"x\": must be of type object",
                "metadata.managedFields[1].operation: Invalid value: \"Patch\": must be `Apply` or `Update`",
                "metadata.managedFields[1].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`",
                "metadata.managedFields[1].manager: Too long: must have at most 128 bytes",
                "metadata.managedFields[1].subresource: Invalid value: 5: must be of type string",
            ]
        );
    }

    #[test]
    fn owner_refs() {
        let e = run(
            json!({"metadata": {"name": "a", "ownerReferences": [
                {"apiVersion": "", "kind": "", "name": "", "uid": ""},
            ]}}),
            false,
            names::name_is_dns_subdomain,
        );
        assert_eq!(
            e,
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
            ]
        );
        let e = run(
            json!({"metadata": {"name": "a", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r1", "uid": "1", "controller": true},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r2", "uid": "2", "controller": true},
            ]}}),
            false,
            names::name_is_dns_subdomain,
        );
        assert_eq!(e.len(), 1);
        assert!(e[0].ends_with("Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/r1 and ReplicaSet/r2"));
    }

    #[test]
    fn update_rules() {
        let old = json!({"metadata": {"name": "a", "uid": "u1", "resourceVersion": "1", "generation": 3,
            "creationTimestamp": "2024-01-02T03:04:05Z"}});
        let new = json!({"metadata": {"name": "b", "uid": "u2", "generation": 2,
            "creationTimestamp": "2024-01-02T03:04:06Z"}});
        let mut ck = Checker::default();
        validate_object_meta_update(
            &mut ck,
            new.as_object().unwrap_or(&Obj::new()),
            old.as_object().unwrap_or(&Obj::new()),
        );
        let e: Vec<String> = ck.errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            e,
            vec![
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                "metadata.generation: Invalid value: 2: must not be decremented",
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
                "metadata.creationTimestamp: Invalid value: 2024-01-02 03:04:06 +0000 UTC: field is immutable",
            ]
        );
        let old = json!({"metadata": {"name": "a", "resourceVersion": "1", "deletionTimestamp": "2024-01-02T03:04:05Z", "finalizers": ["a/x"]}});
        let new = json!({"metadata": {"name": "a", "resourceVersion": "1", "deletionTimestamp": "2024-01-02T03:04:05Z", "finalizers": ["a/x", "b/y"]}});
        let mut ck = Checker::default();
        validate_object_meta_update(
            &mut ck,
            new.as_object().unwrap_or(&Obj::new()),
            old.as_object().unwrap_or(&Obj::new()),
        );
        assert_eq!(
            ck.errs[0].to_string(),
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b/y\"}"
        );
    }

    #[test]
    fn wrong_types() {
        let e = run(
            json!({"metadata": {"name": 5, "labels": {"a": 1}}}),
            false,
            names::name_is_dns_subdomain,
        );
        assert_eq!(
            e[0],
            "metadata.name: Invalid value: 5: must be of type string"
        );
        assert!(
            e.contains(&"metadata.labels[a]: Invalid value: 1: must be of type string".to_string())
        );
        let e = run(
            json!({"metadata": "x"}),
            false,
            names::name_is_dns_subdomain,
        );
        assert_eq!(
            e[0],
            "metadata: Invalid value: \"x\": must be of type object"
        );
    }
}
