//! Structural differences between two versions of a Kubernetes object.
//!
//! This module owns the computation of a [`Diff`] (a flat list of
//! [`DiffItem`]s, one per added, changed or removed field) from two
//! `serde_json::Value`s, the narrowing of a diff to one field with
//! [`Diff::relative_to`], and the small path helpers [`resolve`] and
//! [`parse_path`] that go with it.
//!
//! Maps are compared key by key and recursed into; lists and scalars are
//! compared as a whole. A `null` value inside a map counts as an absent key.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// The kind of a single difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffOp {
    /// The field exists only in the new version.
    Add,
    /// The field exists in both versions with different values.
    Change,
    /// The field exists only in the old version.
    Remove,
}

impl DiffOp {
    /// The lowercase name of the operation: `"add"`, `"change"` or `"remove"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiffOp::Add => "add",
            DiffOp::Change => "change",
            DiffOp::Remove => "remove",
        }
    }

    /// Picks the operation that fits which sides of a difference are present,
    /// or `None` when neither is.
    fn from_sides(old: Option<&Value>, new: Option<&Value>) -> Option<DiffOp> {
        match (old, new) {
            (None, None) => None,
            (None, Some(_)) => Some(DiffOp::Add),
            (Some(_), None) => Some(DiffOp::Remove),
            (Some(_), Some(_)) => Some(DiffOp::Change),
        }
    }
}

impl fmt::Display for DiffOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference: a field at `path` that was added, changed or removed.
///
/// `old` is `None` for [`DiffOp::Add`], `new` is `None` for
/// [`DiffOp::Remove`]; both are set for [`DiffOp::Change`]. An empty `path`
/// means the whole object.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffItem {
    /// What happened to the field.
    pub op: DiffOp,
    /// Map keys leading from the object's root to the field.
    pub path: Vec<String>,
    /// The field's value in the old version, if it had one.
    pub old: Option<Value>,
    /// The field's value in the new version, if it has one.
    pub new: Option<Value>,
}

impl fmt::Display for DiffItem {
    /// Renders as `change spec.message: "a" -> "b"`, with values in JSON,
    /// `<none>` for a missing side and `<root>` for an empty path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "<root>".to_owned()
        } else {
            self.path.join(".")
        };
        write!(
            f,
            "{} {}: {} -> {}",
            self.op,
            path,
            Rendered(self.old.as_ref()),
            Rendered(self.new.as_ref())
        )
    }
}

/// Displays an optional value as compact JSON, or `<none>`.
struct Rendered<'a>(Option<&'a Value>);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(value) => write!(f, "{value}"),
            None => f.write_str("<none>"),
        }
    }
}

/// All differences between two versions of an object, in a deterministic
/// order (map keys sorted at every level).
///
/// Handlers get the diff of their cause from [`Context::diff`](crate::Context::diff).
///
/// ```
/// use kopr::diff::diff;
/// use kopr::DiffOp;
/// use serde_json::json;
///
/// let old = json!({"spec": {"size": 1, "zone": "a"}});
/// let new = json!({"spec": {"size": 2, "tier": "gold"}});
/// let changes = diff(Some(&old), Some(&new));
/// let rendered: Vec<String> = changes.iter().map(ToString::to_string).collect();
/// assert_eq!(rendered, [
///     r#"change spec.size: 1 -> 2"#,
///     r#"add spec.tier: <none> -> "gold""#,
///     r#"remove spec.zone: "a" -> <none>"#,
/// ]);
/// assert_eq!(changes.items()[2].op, DiffOp::Remove);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff(pub Vec<DiffItem>);

impl Diff {
    /// True when the two versions had no differences.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of differences.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Iterates over the differences in order.
    pub fn iter(&self) -> std::slice::Iter<'_, DiffItem> {
        self.0.iter()
    }

    /// The differences as a slice.
    pub fn items(&self) -> &[DiffItem] {
        &self.0
    }

    /// Narrows the diff to the field at `path`, with paths made relative to it.
    ///
    /// Items at or below `path` are kept with the prefix stripped. Items above
    /// `path` (an ancestor that was added, removed or replaced as a whole)
    /// are turned into one item for the field itself by looking it up inside
    /// the ancestor's old and new values; such an item is dropped when both
    /// sides hold the same value (or neither holds one). Items on unrelated
    /// branches are dropped. An empty `path` returns the diff unchanged.
    ///
    /// ```
    /// use kopr::diff::{diff, parse_path};
    /// use serde_json::json;
    ///
    /// let whole = diff(Some(&json!({"spec": {"size": 1}})), Some(&json!({"spec": {"size": 2}})));
    /// let size = whole.relative_to(&parse_path("spec.size"));
    /// assert_eq!(size.items()[0].to_string(), "change <root>: 1 -> 2");
    /// assert!(whole.relative_to(&parse_path("spec.zone")).is_empty());
    /// ```
    pub fn relative_to(&self, path: &[String]) -> Diff {
        let mut out = Vec::new();
        for item in &self.0 {
            if let Some(rest) = item.path.strip_prefix(path) {
                out.push(DiffItem {
                    op: item.op,
                    path: rest.to_vec(),
                    old: item.old.clone(),
                    new: item.new.clone(),
                });
            } else if let Some(rest) = path.strip_prefix(item.path.as_slice()) {
                let old = item.old.as_ref().and_then(|v| resolve(v, rest));
                let new = item.new.as_ref().and_then(|v| resolve(v, rest));
                if old == new {
                    continue;
                }
                if let Some(op) = DiffOp::from_sides(old, new) {
                    out.push(DiffItem {
                        op,
                        path: Vec::new(),
                        old: old.cloned(),
                        new: new.cloned(),
                    });
                }
            }
        }
        Diff(out)
    }
}

impl<'a> IntoIterator for &'a Diff {
    type Item = &'a DiffItem;
    type IntoIter = std::slice::Iter<'a, DiffItem>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for Diff {
    type Item = DiffItem;
    type IntoIter = std::vec::IntoIter<DiffItem>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Computes the differences between an old and a new version of an object.
///
/// `None` stands for "no object": `None` vs `Some(v)` gives one
/// [`DiffOp::Add`] item with an empty path, the reverse one
/// [`DiffOp::Remove`]. A root `null` counts as `None`.
pub fn diff(old: Option<&Value>, new: Option<&Value>) -> Diff {
    let mut items = Vec::new();
    let mut path = Vec::new();
    diff_into(present(old), present(new), &mut path, &mut items);
    Diff(items)
}

/// Treats a JSON `null` as absent.
fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

fn diff_into(
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<String>,
    out: &mut Vec<DiffItem>,
) {
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                path.push(key.clone());
                diff_into(present(a.get(key)), present(b.get(key)), path, out);
                path.pop();
            }
        }
        (Some(a), Some(b)) if a == b => {}
        _ => {
            if let Some(op) = DiffOp::from_sides(old, new) {
                out.push(DiffItem {
                    op,
                    path: path.clone(),
                    old: old.cloned(),
                    new: new.cloned(),
                });
            }
        }
    }
}

/// Looks up the value at `path` (a list of map keys) inside `value`.
///
/// Returns `None` when a step is missing, when an intermediate value is not
/// a map, or when the value found is `null`. An empty path returns `value`
/// itself (unless it is `null`).
///
/// ```
/// use kopr::diff::{parse_path, resolve};
/// let object = serde_json::json!({"spec": {"replicas": 3, "paused": null}});
/// assert_eq!(resolve(&object, &parse_path("spec.replicas")), Some(&serde_json::json!(3)));
/// assert_eq!(resolve(&object, &parse_path("spec.paused")), None);
/// ```
pub fn resolve<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut current = value;
    for key in path {
        current = current.as_object()?.get(key)?;
    }
    present(Some(current))
}

/// Splits a dotted field path such as `"spec.replicas"` into its keys.
///
/// The empty string gives an empty path (the whole object). No escaping is
/// supported: every dot separates two keys.
pub fn parse_path(dotted: &str) -> Vec<String> {
    if dotted.is_empty() {
        Vec::new()
    } else {
        dotted.split('.').map(str::to_owned).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(dotted: &str) -> Vec<String> {
        parse_path(dotted)
    }

    fn item(op: DiffOp, path: &str, old: Option<Value>, new: Option<Value>) -> DiffItem {
        DiffItem {
            op,
            path: p(path),
            old,
            new,
        }
    }

    #[test]
    fn equal_values_give_empty_diff() {
        let v = json!({"spec": {"a": [1, 2], "b": "x"}});
        let d = diff(Some(&v), Some(&v));
        assert!(d.is_empty());
        assert_eq!(d.len(), 0);
        assert!(diff(None, None).is_empty());
    }

    #[test]
    fn root_creation_and_deletion() {
        let v = json!({"a": 1});
        assert_eq!(
            diff(None, Some(&v)).0,
            vec![item(DiffOp::Add, "", None, Some(v.clone()))]
        );
        assert_eq!(
            diff(Some(&v), None).0,
            vec![item(DiffOp::Remove, "", Some(v.clone()), None)]
        );
    }

    #[test]
    fn root_null_is_absent() {
        let v = json!({"a": 1});
        assert_eq!(diff(Some(&Value::Null), Some(&v)).0[0].op, DiffOp::Add);
        assert!(diff(Some(&Value::Null), None).is_empty());
    }

    #[test]
    fn scalar_roots_are_compared_whole() {
        let d = diff(Some(&json!(1)), Some(&json!(2)));
        assert_eq!(
            d.0,
            vec![item(DiffOp::Change, "", Some(json!(1)), Some(json!(2)))]
        );
    }

    #[test]
    fn add_change_remove_in_sorted_order() {
        let old = json!({"b": 1, "c": 3, "a": {"x": 1}});
        let new = json!({"b": 2, "d": 4, "a": {"x": 1}});
        let d = diff(Some(&old), Some(&new));
        assert_eq!(
            d.0,
            vec![
                item(DiffOp::Change, "b", Some(json!(1)), Some(json!(2))),
                item(DiffOp::Remove, "c", Some(json!(3)), None),
                item(DiffOp::Add, "d", None, Some(json!(4))),
            ]
        );
    }

    #[test]
    fn nested_maps_are_recursed() {
        let old = json!({"spec": {"message": "a", "keep": true}});
        let new = json!({"spec": {"message": "b", "keep": true, "extra": {"k": 1}}});
        let d = diff(Some(&old), Some(&new));
        assert_eq!(
            d.0,
            vec![
                item(DiffOp::Add, "spec.extra", None, Some(json!({"k": 1}))),
                item(
                    DiffOp::Change,
                    "spec.message",
                    Some(json!("a")),
                    Some(json!("b"))
                ),
            ]
        );
    }

    #[test]
    fn lists_are_compared_whole() {
        let old = json!({"items": [1, {"a": 1}]});
        let new = json!({"items": [1, {"a": 2}]});
        let d = diff(Some(&old), Some(&new));
        assert_eq!(
            d.0,
            vec![item(
                DiffOp::Change,
                "items",
                Some(json!([1, {"a": 1}])),
                Some(json!([1, {"a": 2}]))
            )]
        );
    }

    #[test]
    fn map_replaced_by_scalar_is_a_change() {
        let old = json!({"spec": {"a": 1}});
        let new = json!({"spec": "flat"});
        let d = diff(Some(&old), Some(&new));
        assert_eq!(
            d.0,
            vec![item(
                DiffOp::Change,
                "spec",
                Some(json!({"a": 1})),
                Some(json!("flat"))
            )]
        );
    }

    #[test]
    fn null_in_map_is_absent() {
        assert!(diff(Some(&json!({"a": null})), Some(&json!({}))).is_empty());
        assert_eq!(
            diff(Some(&json!({"a": null})), Some(&json!({"a": 1}))).0,
            vec![item(DiffOp::Add, "a", None, Some(json!(1)))]
        );
        assert_eq!(
            diff(Some(&json!({"a": 1})), Some(&json!({"a": null}))).0,
            vec![item(DiffOp::Remove, "a", Some(json!(1)), None)]
        );
    }

    #[test]
    fn iteration_forms_agree() {
        let d = diff(Some(&json!({"a": 1, "b": 1})), Some(&json!({"a": 2})));
        let by_iter: Vec<_> = d.iter().cloned().collect();
        let by_ref: Vec<_> = (&d).into_iter().cloned().collect();
        let mut by_loop = Vec::new();
        for it in &d {
            by_loop.push(it.clone());
        }
        assert_eq!(by_iter, d.items());
        assert_eq!(by_ref, d.items());
        assert_eq!(by_loop, d.items());
        let owned: Vec<_> = d.clone().into_iter().collect();
        assert_eq!(owned, d.items());
    }

    #[test]
    fn relative_to_keeps_items_at_or_below_path() {
        let old = json!({"spec": {"a": {"x": 1}, "b": 1}, "status": {"s": 1}});
        let new = json!({"spec": {"a": {"x": 2}, "b": 2}, "status": {"s": 2}});
        let d = diff(Some(&old), Some(&new));
        let r = d.relative_to(&p("spec"));
        assert_eq!(
            r.0,
            vec![
                item(DiffOp::Change, "a.x", Some(json!(1)), Some(json!(2))),
                item(DiffOp::Change, "b", Some(json!(1)), Some(json!(2))),
            ]
        );
        let exact = d.relative_to(&p("spec.b"));
        assert_eq!(
            exact.0,
            vec![item(DiffOp::Change, "", Some(json!(1)), Some(json!(2)))]
        );
        assert_eq!(d.relative_to(&[]), d);
        assert!(d.relative_to(&p("metadata")).is_empty());
    }

    #[test]
    fn relative_to_descends_into_added_ancestor() {
        let d = diff(Some(&json!({})), Some(&json!({"spec": {"x": 5, "y": 6}})));
        assert_eq!(
            d.relative_to(&p("spec.x")).0,
            vec![item(DiffOp::Add, "", None, Some(json!(5)))]
        );
        assert!(d.relative_to(&p("spec.z")).is_empty());
    }

    #[test]
    fn relative_to_descends_into_removed_ancestor() {
        let d = diff(Some(&json!({"spec": {"x": 5}})), Some(&json!({})));
        assert_eq!(
            d.relative_to(&p("spec.x")).0,
            vec![item(DiffOp::Remove, "", Some(json!(5)), None)]
        );
    }

    #[test]
    fn relative_to_descends_into_replaced_ancestor() {
        // Whole object created: the root item is above every field.
        let d = diff(None, Some(&json!({"spec": {"x": 1}})));
        assert_eq!(
            d.relative_to(&p("spec.x")).0,
            vec![item(DiffOp::Add, "", None, Some(json!(1)))]
        );

        // A map replaced by a scalar, and back.
        let d = diff(Some(&json!({"spec": {"x": 1}})), Some(&json!({"spec": 7})));
        assert_eq!(
            d.relative_to(&p("spec.x")).0,
            vec![item(DiffOp::Remove, "", Some(json!(1)), None)]
        );

        // Root changed wholesale from a scalar to a map.
        let d = diff(Some(&json!(3)), Some(&json!({"spec": {"x": 1}})));
        assert_eq!(
            d.relative_to(&p("spec")).0,
            vec![item(DiffOp::Add, "", None, Some(json!({"x": 1})))]
        );
    }

    #[test]
    fn relative_to_drops_ancestor_items_with_equal_field() {
        let d = Diff(vec![item(
            DiffOp::Change,
            "spec",
            Some(json!({"x": 1, "y": 1})),
            Some(json!({"x": 1, "y": 2})),
        )]);
        assert!(d.relative_to(&p("spec.x")).is_empty());
        assert_eq!(
            d.relative_to(&p("spec.y")).0,
            vec![item(DiffOp::Change, "", Some(json!(1)), Some(json!(2)))]
        );
    }

    #[test]
    fn resolve_walks_maps() {
        let v = json!({"spec": {"a": {"b": 1}, "n": null, "l": [1]}});
        assert_eq!(resolve(&v, &p("spec.a.b")), Some(&json!(1)));
        assert_eq!(resolve(&v, &[]), Some(&v));
        assert_eq!(resolve(&v, &p("spec.missing")), None);
        assert_eq!(resolve(&v, &p("spec.n")), None);
        assert_eq!(resolve(&v, &p("spec.l.0")), None);
        assert_eq!(resolve(&v, &p("spec.a.b.c")), None);
        assert_eq!(resolve(&Value::Null, &[]), None);
    }

    #[test]
    fn parse_path_splits_on_dots() {
        assert_eq!(parse_path("spec.replicas"), vec!["spec", "replicas"]);
        assert_eq!(parse_path("spec"), vec!["spec"]);
        assert!(parse_path("").is_empty());
    }

    #[test]
    fn display_renders_json_and_none() {
        let c = item(
            DiffOp::Change,
            "spec.message",
            Some(json!("a")),
            Some(json!("b")),
        );
        assert_eq!(c.to_string(), r#"change spec.message: "a" -> "b""#);
        let a = item(DiffOp::Add, "spec.n", None, Some(json!({"k": [1]})));
        assert_eq!(a.to_string(), r#"add spec.n: <none> -> {"k":[1]}"#);
        let r = item(DiffOp::Remove, "", Some(json!(1)), None);
        assert_eq!(r.to_string(), "remove <root>: 1 -> <none>");
    }

    #[test]
    fn op_serializes_lowercase() {
        assert_eq!(serde_json::to_value(DiffOp::Add).ok(), Some(json!("add")));
        assert_eq!(
            serde_json::to_value(DiffOp::Change).ok(),
            Some(json!("change"))
        );
        assert_eq!(
            serde_json::to_value(DiffOp::Remove).ok(),
            Some(json!("remove"))
        );
    }
}
