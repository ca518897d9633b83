//! Making an object a child of an owner.
//!
//! This module owns the rules for adopting a child object (given as a
//! `serde_json::Value`, before it is created): pointing an owner reference at
//! the owner so the child is garbage-collected with it, giving an unnamed
//! child a name prefix derived from the owner, placing the child in the
//! owner's namespace and passing the owner's labels down. Existing values on
//! the child are never overwritten, and nothing is changed when an error is
//! returned.
//!
//! [`adopt`](fn@adopt) takes typed objects; [`adopt_value`] takes JSON and chooses the rules.
//! A reconcile usually needs neither: [`Context::apply`](crate::Context::apply) adopts the
//! children it applies.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value, json};

/// The parts of an owner object that adoption needs.
#[derive(Debug, Clone)]
pub struct Owner {
    /// The owner's `apiVersion`, e.g. `"example.com/v1"`.
    pub api_version: String,
    /// The owner's `kind`.
    pub kind: String,
    /// The owner's `metadata.name`.
    pub name: String,
    /// The owner's `metadata.uid`.
    pub uid: String,
    /// The owner's `metadata.namespace`; `None` for cluster-scoped owners.
    pub namespace: Option<String>,
    /// The owner's `metadata.labels`.
    pub labels: BTreeMap<String, String>,
}

impl Owner {
    /// Reads an owner from a whole Kubernetes object.
    ///
    /// ```
    /// use kopr::adopt::Owner;
    /// let owner = Owner::from_value(&serde_json::json!({
    ///     "apiVersion": "example.com/v1",
    ///     "kind": "Greeting",
    ///     "metadata": {"name": "hello", "uid": "0a1b", "namespace": "team-a"},
    /// }))?;
    /// assert_eq!(owner.namespace.as_deref(), Some("team-a"));
    /// assert_eq!(owner.owner_reference()["controller"], true);
    /// # Ok::<(), kopr::adopt::AdoptError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Returns an [`AdoptError`] naming the field when `apiVersion`, `kind`,
    /// `metadata.name` or `metadata.uid` is missing, empty or not a string,
    /// when the value is not an object, or when `metadata.namespace` or
    /// `metadata.labels` has the wrong type. An empty namespace counts as
    /// none; `null` counts as absent everywhere.
    pub fn from_value(owner: &Value) -> Result<Owner, AdoptError> {
        let Some(root) = owner.as_object() else {
            return Err(AdoptError("owner is not a JSON object".into()));
        };
        let metadata = match root.get("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(AdoptError("owner metadata is not an object".into())),
        };
        let meta_field = |key: &str| metadata.and_then(|m| m.get(key));

        let api_version = required(root.get("apiVersion"), "apiVersion")?;
        let kind = required(root.get("kind"), "kind")?;
        let name = required(meta_field("name"), "metadata.name")?;
        let uid = required(meta_field("uid"), "metadata.uid")?;

        let namespace = match meta_field("namespace") {
            None | Some(Value::Null) => None,
            Some(Value::String(ns)) if ns.is_empty() => None,
            Some(Value::String(ns)) => Some(ns.clone()),
            Some(_) => {
                return Err(AdoptError(
                    "owner field metadata.namespace is not a string".into(),
                ));
            }
        };

        let mut labels = BTreeMap::new();
        match meta_field("labels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (key, value) in map {
                    let Some(text) = value.as_str() else {
                        return Err(AdoptError(format!("owner label {key:?} is not a string")));
                    };
                    labels.insert(key.clone(), text.to_owned());
                }
            }
            Some(_) => {
                return Err(AdoptError(
                    "owner field metadata.labels is not an object".into(),
                ));
            }
        }

        Ok(Owner {
            api_version,
            kind,
            name,
            uid,
            namespace,
            labels,
        })
    }

    /// The controller owner reference that points at this owner, as it is
    /// written into a child's `metadata.ownerReferences`.
    pub fn owner_reference(&self) -> Value {
        json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        })
    }
}

/// Reads a required, non-empty string field of the owner.
fn required(value: Option<&Value>, field: &str) -> Result<String, AdoptError> {
    match value {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        None | Some(Value::Null) => Err(AdoptError(format!("owner is missing {field}"))),
        Some(Value::String(_)) => Err(AdoptError(format!("owner field {field} is empty"))),
        Some(_) => Err(AdoptError(format!("owner field {field} is not a string"))),
    }
}

/// Why an owner could not be read or a child could not be adopted.
#[derive(Debug, Clone, PartialEq)]
pub struct AdoptError(pub String);

impl fmt::Display for AdoptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot adopt: {}", self.0)
    }
}

impl std::error::Error for AdoptError {}

/// Which adoption rules [`adopt_value`] applies. All are on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdoptOptions {
    /// Add (or refresh) a controller owner reference to the owner.
    pub owner_reference: bool,
    /// Give a child with neither `name` nor `generateName` the
    /// `generateName` `"<owner name>-"`.
    pub harmonize_name: bool,
    /// Put a child without a namespace into the owner's namespace.
    pub set_namespace: bool,
    /// Copy the owner's labels to the child for keys it does not have.
    pub copy_labels: bool,
}

impl Default for AdoptOptions {
    fn default() -> Self {
        Self {
            owner_reference: true,
            harmonize_name: true,
            set_namespace: true,
            copy_labels: true,
        }
    }
}

/// Makes `child` a child of `owner`, applying the rules enabled in `options`.
///
/// ```
/// use kopr::adopt::{AdoptOptions, Owner, adopt_value};
/// use serde_json::json;
///
/// let owner = Owner::from_value(&json!({
///     "apiVersion": "example.com/v1", "kind": "Greeting",
///     "metadata": {"name": "hello", "uid": "0a1b", "namespace": "team-a", "labels": {"app": "hi"}},
/// }))?;
/// let mut child = json!({"apiVersion": "v1", "kind": "ConfigMap"});
/// // Everything but the labels.
/// let options = AdoptOptions { copy_labels: false, ..AdoptOptions::default() };
/// adopt_value(&mut child, &owner, &options)?;
/// assert_eq!(child["metadata"]["generateName"], "hello-");
/// assert_eq!(child["metadata"]["namespace"], "team-a");
/// assert_eq!(child["metadata"]["ownerReferences"][0]["uid"], "0a1b");
/// assert!(child["metadata"].get("labels").is_none());
/// # Ok::<(), kopr::adopt::AdoptError>(())
/// ```
///
/// `metadata` is created on the child when missing (or `null`). The rules:
///
/// - `owner_reference`: appends the owner's controller reference (see
///   [`Owner::owner_reference`]) to `metadata.ownerReferences`, or replaces
///   in place an existing reference with the same `uid`.
/// - `harmonize_name`: when the child has neither `metadata.name` nor
///   `metadata.generateName` (empty strings count as absent), sets
///   `metadata.generateName` to `"<owner name>-"`.
/// - `set_namespace`: when the owner is namespaced and the child has no
///   `metadata.namespace`, sets it to the owner's namespace.
/// - `copy_labels`: adds the owner's labels to `metadata.labels` for keys
///   the child does not already have.
///
/// # Errors
///
/// Returns an [`AdoptError`], leaving the child untouched, when the child
/// is not an object; when `metadata`, `metadata.labels` or
/// `metadata.ownerReferences` has the wrong type; when the owner's
/// `api_version`, `kind`, `name` or `uid` is empty while an owner reference
/// is requested; or when another reference (different `uid`) already has
/// `controller: true`, since an object can have only one controller.
pub fn adopt_value(
    child: &mut Value,
    owner: &Owner,
    options: &AdoptOptions,
) -> Result<(), AdoptError> {
    let Some(root) = child.as_object_mut() else {
        return Err(AdoptError("child is not a JSON object".into()));
    };
    match root.get("metadata") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return Err(AdoptError("child metadata is not an object".into())),
    }

    // Check everything first so that an error leaves the child unchanged.
    let empty = Map::new();
    let meta = root
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if options.owner_reference {
        check_owner_fields(owner)?;
        check_owner_references(meta, owner)?;
    }
    if options.copy_labels && !owner.labels.is_empty() {
        match meta.get("labels") {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(_) => {
                return Err(AdoptError("child metadata.labels is not an object".into()));
            }
        }
    }

    let meta = object_entry(root, "metadata")?;

    if options.owner_reference {
        set_owner_reference(meta, owner);
    }
    if options.harmonize_name && is_unset(meta.get("name")) && is_unset(meta.get("generateName")) {
        meta.insert(
            "generateName".into(),
            Value::String(format!("{}-", owner.name)),
        );
    }
    if options.set_namespace
        && let Some(ns) = &owner.namespace
        && is_unset(meta.get("namespace"))
    {
        meta.insert("namespace".into(), Value::String(ns.clone()));
    }
    if options.copy_labels && !owner.labels.is_empty() {
        let labels = object_entry(meta, "labels")?;
        for (key, value) in &owner.labels {
            if is_unset_label(labels.get(key)) {
                labels.insert(key.clone(), Value::String(value.clone()));
            }
        }
    }
    Ok(())
}

/// True when a metadata field is absent, `null` or an empty string.
fn is_unset(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// True when a label key is absent or `null`. An empty string is a real
/// label value and is kept.
fn is_unset_label(value: Option<&Value>) -> bool {
    matches!(value, None | Some(Value::Null))
}

fn check_owner_fields(owner: &Owner) -> Result<(), AdoptError> {
    let fields = [
        ("apiVersion", &owner.api_version),
        ("kind", &owner.kind),
        ("name", &owner.name),
        ("uid", &owner.uid),
    ];
    for (field, value) in fields {
        if value.is_empty() {
            return Err(AdoptError(format!(
                "owner {field} is empty; cannot build an owner reference"
            )));
        }
    }
    Ok(())
}

fn check_owner_references(meta: &Map<String, Value>, owner: &Owner) -> Result<(), AdoptError> {
    let refs = match meta.get("ownerReferences") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(refs)) => refs,
        Some(_) => {
            return Err(AdoptError(
                "child metadata.ownerReferences is not a list".into(),
            ));
        }
    };
    for reference in refs {
        let uid = reference.get("uid").and_then(Value::as_str);
        let controller = reference.get("controller").and_then(Value::as_bool) == Some(true);
        if controller && uid != Some(owner.uid.as_str()) {
            let name = reference
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("<unnamed>");
            let kind = reference
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("<unknown kind>");
            return Err(AdoptError(format!(
                "child is already controlled by {kind} {name:?} (uid {}); an object can have only one controller",
                uid.unwrap_or("<none>")
            )));
        }
    }
    Ok(())
}

/// Writes the owner's reference, replacing one with the same uid in place.
/// The list's type was checked beforehand.
fn set_owner_reference(meta: &mut Map<String, Value>, owner: &Owner) {
    let reference = owner.owner_reference();
    let entry = meta
        .entry("ownerReferences")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        // Only reachable for `null`: start a fresh list.
        *entry = Value::Array(Vec::new());
    }
    if let Value::Array(refs) = entry {
        let existing = refs
            .iter_mut()
            .find(|r| r.get("uid").and_then(Value::as_str) == Some(owner.uid.as_str()));
        match existing {
            Some(slot) => *slot = reference,
            None => refs.push(reference),
        }
    }
}

/// Returns the map stored under `key`, creating it when absent or `null`.
/// Callers check beforehand that any existing value is a map, so the error
/// is not expected in practice.
fn object_entry<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, AdoptError> {
    let entry = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if entry.is_null() {
        *entry = Value::Object(Map::new());
    }
    entry
        .as_object_mut()
        .ok_or_else(|| AdoptError(format!("child field {key} is not an object")))
}

/// Adopts `child` (a k8s-openapi struct, a `DynamicObject`, a custom resource or a
/// `serde_json::Value`) into `owner`'s lifecycle with every [`AdoptOptions`] rule: a controller
/// owner reference with `blockOwnerDeletion`, `generateName: <owner>-` for an unnamed child, the
/// owner's namespace, and the owner's labels.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::ObjectMeta;
///
/// let owner = ConfigMap {
///     metadata: ObjectMeta {
///         name: Some("settings".into()),
///         namespace: Some("team-a".into()),
///         uid: Some("0a1b".into()),
///         ..Default::default()
///     },
///     ..Default::default()
/// };
/// let mut child = ConfigMap::default();
/// kopr::adopt(&mut child, &owner)?;
/// assert_eq!(child.metadata.namespace.as_deref(), Some("team-a"));
/// assert_eq!(child.metadata.generate_name.as_deref(), Some("settings-"));
/// let reference = &child.metadata.owner_references.as_ref().unwrap()[0];
/// assert_eq!((reference.kind.as_str(), reference.controller), ("ConfigMap", Some(true)));
/// # Ok::<(), kopr::adopt::AdoptError>(())
/// ```
///
/// # Errors
/// An [`AdoptError`] when the owner lacks `apiVersion`, `kind`, a name or a uid (an object
/// not read from the server has no uid), when the child already has another controller, or
/// when either does not serialize as a Kubernetes object; the child is then unchanged.
pub fn adopt<C, O>(child: &mut C, owner: &O) -> Result<(), AdoptError>
where
    C: serde::Serialize + serde::de::DeserializeOwned,
    O: serde::Serialize,
{
    let owner = serde_json::to_value(owner).map_err(|e| AdoptError(e.to_string()))?;
    let owner = Owner::from_value(&owner)?;
    let mut value = serde_json::to_value(&*child).map_err(|e| AdoptError(e.to_string()))?;
    adopt_value(&mut value, &owner, &AdoptOptions::default())?;
    *child = serde_json::from_value(value).map_err(|e| AdoptError(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner_value() -> Value {
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {
                "name": "parent",
                "uid": "uid-1",
                "namespace": "team-a",
                "labels": {"app": "shop", "tier": "web"},
            },
        })
    }

    fn owner() -> Owner {
        match Owner::from_value(&owner_value()) {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        }
    }

    fn only(rule: &str) -> AdoptOptions {
        AdoptOptions {
            owner_reference: rule == "owner_reference",
            harmonize_name: rule == "harmonize_name",
            set_namespace: rule == "set_namespace",
            copy_labels: rule == "copy_labels",
        }
    }

    fn adopt(child: &mut Value, options: &AdoptOptions) -> Result<(), AdoptError> {
        adopt_value(child, &owner(), options)
    }

    #[test]
    fn owner_from_value_reads_fields() {
        let o = owner();
        assert_eq!(o.api_version, "example.com/v1");
        assert_eq!(o.kind, "Widget");
        assert_eq!(o.name, "parent");
        assert_eq!(o.uid, "uid-1");
        assert_eq!(o.namespace.as_deref(), Some("team-a"));
        assert_eq!(o.labels.get("app").map(String::as_str), Some("shop"));
        assert_eq!(o.labels.len(), 2);
    }

    #[test]
    fn owner_from_value_cluster_scoped_without_labels() {
        let v = json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "n", "uid": "u"}});
        let o = Owner::from_value(&v);
        assert!(o.is_ok_and(|o| o.namespace.is_none() && o.labels.is_empty()));
    }

    #[test]
    fn owner_from_value_names_missing_field() {
        let cases = [
            ("/apiVersion", "apiVersion"),
            ("/kind", "kind"),
            ("/metadata/name", "metadata.name"),
            ("/metadata/uid", "metadata.uid"),
        ];
        for (pointer, field) in cases {
            let mut v = owner_value();
            if let Some(slot) = v.pointer_mut(pointer) {
                *slot = Value::Null;
            }
            let err = Owner::from_value(&v).err();
            assert_eq!(err, Some(AdoptError(format!("owner is missing {field}"))));
        }
        let no_meta = json!({"apiVersion": "v1", "kind": "X"});
        assert_eq!(
            Owner::from_value(&no_meta).err(),
            Some(AdoptError("owner is missing metadata.name".into()))
        );
    }

    #[test]
    fn owner_from_value_rejects_bad_types() {
        assert!(Owner::from_value(&json!([])).is_err());
        let mut v = owner_value();
        v["kind"] = json!(5);
        assert!(Owner::from_value(&v).is_err_and(|e| e.0.contains("kind")));
        let mut v = owner_value();
        v["metadata"]["uid"] = json!("");
        assert!(Owner::from_value(&v).is_err_and(|e| e.0.contains("metadata.uid")));
        let mut v = owner_value();
        v["metadata"]["labels"] = json!({"a": 1});
        assert!(Owner::from_value(&v).is_err());
        let mut v = owner_value();
        v["metadata"]["labels"] = json!("x");
        assert!(Owner::from_value(&v).is_err());
        let mut v = owner_value();
        v["metadata"]["namespace"] = json!(1);
        assert!(Owner::from_value(&v).is_err());
        let mut v = owner_value();
        v["metadata"] = json!("x");
        assert!(Owner::from_value(&v).is_err());
    }

    #[test]
    fn defaults_apply_every_rule() {
        let mut child = json!({"kind": "ConfigMap"});
        assert!(adopt(&mut child, &AdoptOptions::default()).is_ok());
        assert_eq!(
            child,
            json!({
                "kind": "ConfigMap",
                "metadata": {
                    "generateName": "parent-",
                    "namespace": "team-a",
                    "labels": {"app": "shop", "tier": "web"},
                    "ownerReferences": [{
                        "apiVersion": "example.com/v1",
                        "kind": "Widget",
                        "name": "parent",
                        "uid": "uid-1",
                        "controller": true,
                        "blockOwnerDeletion": true,
                    }],
                },
            })
        );
    }

    #[test]
    fn owner_reference_appends_after_others() {
        let other = json!({"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "uid-0"});
        let mut child = json!({"metadata": {"ownerReferences": [other.clone()]}});
        assert!(adopt(&mut child, &only("owner_reference")).is_ok());
        assert_eq!(
            child["metadata"]["ownerReferences"],
            json!([other, owner().owner_reference()])
        );
    }

    #[test]
    fn owner_reference_replaces_same_uid_in_place() {
        let first = json!({"apiVersion": "v1", "kind": "A", "name": "a", "uid": "uid-0"});
        let stale = json!({"apiVersion": "old/v0", "kind": "Widget", "name": "parent",
                           "uid": "uid-1", "controller": true});
        let last = json!({"apiVersion": "v1", "kind": "B", "name": "b", "uid": "uid-2"});
        let mut child =
            json!({"metadata": {"ownerReferences": [first.clone(), stale, last.clone()]}});
        assert!(adopt(&mut child, &only("owner_reference")).is_ok());
        assert_eq!(
            child["metadata"]["ownerReferences"],
            json!([first, owner().owner_reference(), last])
        );
        // Adopting twice does not duplicate.
        let before = child.clone();
        assert!(adopt(&mut child, &only("owner_reference")).is_ok());
        assert_eq!(child, before);
    }

    #[test]
    fn owner_reference_rejects_second_controller() {
        let controller = json!({"apiVersion": "v1", "kind": "Boss", "name": "boss",
                                "uid": "uid-9", "controller": true});
        let mut child = json!({"metadata": {"ownerReferences": [controller]}});
        let before = child.clone();
        let result = adopt(&mut child, &AdoptOptions::default());
        assert!(result.is_err_and(|e| e.0.contains("only one controller") && e.0.contains("boss")));
        assert_eq!(child, before, "child must be unchanged on error");

        // A non-controller reference with another uid is fine.
        let mut child = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Boss", "name": "boss", "uid": "uid-9", "controller": false}
        ]}});
        assert!(adopt(&mut child, &only("owner_reference")).is_ok());
    }

    #[test]
    fn owner_reference_rejects_bad_list_and_empty_owner() {
        let mut child = json!({"metadata": {"ownerReferences": {}}});
        assert!(adopt(&mut child, &only("owner_reference")).is_err());

        let mut child = json!({"metadata": {"ownerReferences": null}});
        assert!(adopt(&mut child, &only("owner_reference")).is_ok());
        assert_eq!(
            child["metadata"]["ownerReferences"],
            json!([owner().owner_reference()])
        );

        let mut o = owner();
        o.uid.clear();
        let mut child = json!({});
        assert!(adopt_value(&mut child, &o, &only("owner_reference")).is_err());
        assert_eq!(child, json!({}));
        // Without owner references the empty uid does not matter.
        assert!(adopt_value(&mut child, &o, &only("harmonize_name")).is_ok());
    }

    #[test]
    fn harmonize_name_only_when_unnamed() {
        let mut child = json!({});
        assert!(adopt(&mut child, &only("harmonize_name")).is_ok());
        assert_eq!(child, json!({"metadata": {"generateName": "parent-"}}));

        let mut named = json!({"metadata": {"name": "fixed"}});
        assert!(adopt(&mut named, &only("harmonize_name")).is_ok());
        assert_eq!(named, json!({"metadata": {"name": "fixed"}}));

        let mut generated = json!({"metadata": {"generateName": "mine-"}});
        assert!(adopt(&mut generated, &only("harmonize_name")).is_ok());
        assert_eq!(generated, json!({"metadata": {"generateName": "mine-"}}));
    }

    #[test]
    fn set_namespace_never_overwrites() {
        let mut child = json!({"metadata": {}});
        assert!(adopt(&mut child, &only("set_namespace")).is_ok());
        assert_eq!(child, json!({"metadata": {"namespace": "team-a"}}));

        let mut placed = json!({"metadata": {"namespace": "elsewhere"}});
        assert!(adopt(&mut placed, &only("set_namespace")).is_ok());
        assert_eq!(placed, json!({"metadata": {"namespace": "elsewhere"}}));

        let mut o = owner();
        o.namespace = None;
        let mut child = json!({"metadata": {}});
        assert!(adopt_value(&mut child, &o, &only("set_namespace")).is_ok());
        assert_eq!(child, json!({"metadata": {}}));
    }

    #[test]
    fn copy_labels_never_overwrites() {
        let mut child = json!({"metadata": {"labels": {"app": "mine", "own": "x"}}});
        assert!(adopt(&mut child, &only("copy_labels")).is_ok());
        assert_eq!(
            child["metadata"]["labels"],
            json!({"app": "mine", "own": "x", "tier": "web"})
        );

        let mut bare = json!({"metadata": {}});
        assert!(adopt(&mut bare, &only("copy_labels")).is_ok());
        assert_eq!(
            bare["metadata"]["labels"],
            json!({"app": "shop", "tier": "web"})
        );

        let mut o = owner();
        o.labels.clear();
        let mut child = json!({"metadata": {}});
        assert!(adopt_value(&mut child, &o, &only("copy_labels")).is_ok());
        assert_eq!(child, json!({"metadata": {}}));

        let mut bad = json!({"metadata": {"labels": ["x"]}});
        assert!(adopt(&mut bad, &only("copy_labels")).is_err());
    }

    #[test]
    fn disabled_rules_do_nothing() {
        let none = AdoptOptions {
            owner_reference: false,
            harmonize_name: false,
            set_namespace: false,
            copy_labels: false,
        };
        let mut child = json!({"metadata": {}});
        assert!(adopt(&mut child, &none).is_ok());
        assert_eq!(child, json!({"metadata": {}}));
    }

    #[test]
    fn child_shape_errors() {
        let mut not_object = json!("nope");
        assert_eq!(
            adopt(&mut not_object, &AdoptOptions::default()),
            Err(AdoptError("child is not a JSON object".into()))
        );
        let mut bad_meta = json!({"metadata": 3});
        assert_eq!(
            adopt(&mut bad_meta, &AdoptOptions::default()),
            Err(AdoptError("child metadata is not an object".into()))
        );
        let mut null_meta = json!({"metadata": null});
        assert!(adopt(&mut null_meta, &only("set_namespace")).is_ok());
        assert_eq!(null_meta, json!({"metadata": {"namespace": "team-a"}}));
    }

    #[test]
    fn error_display_and_std_error() {
        let e = AdoptError("x".into());
        assert_eq!(e.to_string(), "cannot adopt: x");
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert!(boxed.to_string().contains('x'));
    }
}
