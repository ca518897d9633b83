//! The list and map merge rules of the built-in kinds, as kube-apiserver
//! derives them from Go struct tags: one table keyed by type and field
//! ([`rules`]), walked along a kind's type graph (the protobuf message tables,
//! `crate::protobuf::schema`), so a type's rules apply wherever the type
//! appears. It answers strategic merge patch and server-side apply
//! ([`BuiltinSchema`], a [`MergeSchema`]) and the OpenAPI extensions
//! ([`property_rules`], [`atomic_structs`]).
//!
//! Paths are field paths from the object root without list indices, e.g.
//! `["spec","template","spec","containers","ports"]` for the ports of any
//! container of a Deployment; for list items the path is the list's path.
//!
//! Custom resources take their rules from their CRD's structural schema
//! instead (`crate::crd::StructuralMergeSchema`) and refuse strategic merge
//! patch; a kind without a message table (e.g. CustomResourceDefinition)
//! gets the rules of `metadata` only, shared by every kind.

pub mod rules;
#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::patch::schema::{ListStrategy, MergeSchema};
use crate::protobuf::schema::{MESSAGES, OBJECT_META};
use crate::protobuf::{Card, Field, Ty};

pub use rules::FieldRule;

/// Which semantics a [`BuiltinSchema`] answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Strategic merge patch (`patchStrategy`/`patchMergeKey` tags).
    Strategic,
    /// Server-side apply (`listType`/`listMapKey`/`mapType`/`structType`).
    Apply,
}

/// The merge schema of a built-in kind, for one [`Flavor`]: the kind's
/// message table (if it has one) walked along a path, consulting [`rules`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinSchema {
    /// The kind's message, an index into `MESSAGES`; `None` when the kind
    /// has no message table (only `metadata` is known).
    root: Option<u16>,
    /// Which semantics to answer with.
    flavor: Flavor,
}

/// Schema for strategic merge patch of a built-in kind, by the object's
/// `apiVersion` and `kind`. Whether a kind accepts strategic merge patch at
/// all is its strategy's to say (custom resources do not).
pub fn strategic_schema(api_version: &str, kind: &str) -> BuiltinSchema {
    BuiltinSchema::new(api_version, kind, Flavor::Strategic)
}

/// Schema for server-side apply of a built-in kind, by `apiVersion` and
/// `kind`. A kind without a message table gets the schemaless fallback
/// (atomic lists, granular maps) except for `metadata`.
pub fn apply_schema(api_version: &str, kind: &str) -> BuiltinSchema {
    BuiltinSchema::new(api_version, kind, Flavor::Apply)
}

impl BuiltinSchema {
    /// The schema of the kind `kind` in `api_version`, for `flavor`.
    pub fn new(api_version: &str, kind: &str, flavor: Flavor) -> BuiltinSchema {
        BuiltinSchema {
            root: crate::protobuf::kind_message(api_version, kind),
            flavor,
        }
    }

    /// Where `path` leads in the type graph, if it names known fields.
    fn resolve(&self, path: &[&str]) -> Option<Site> {
        let mut site = Site {
            field: None,
            ty: self.root,
        };
        let mut segments = path.iter();
        if self.root.is_none() {
            // Without a message table, only the shared metadata is known.
            if segments.next() != Some(&"metadata") {
                return None;
            }
            site.ty = Some(OBJECT_META);
        }
        let mut map_key_next = false;
        for segment in segments {
            if map_key_next {
                // A key of a map field: the site is the map's value.
                site.field = None;
                map_key_next = false;
                continue;
            }
            let (owner, field) = find_field(site.ty?, segment)?;
            site = Site {
                field: Some((message_name(owner)?, field.name)),
                ty: match field.ty {
                    Ty::Msg(m) => Some(m),
                    _ => None,
                },
            };
            map_key_next = matches!(field.card, Card::Map);
        }
        Some(site)
    }

    /// The rule of the field `path` ends at.
    fn rule(&self, path: &[&str]) -> Option<&'static FieldRule> {
        let (owner, field) = self.resolve(path)?.field?;
        rules::field_rule(owner, field)
    }
}

/// What a path leads to: the field it ends at (declaring type, JSON name)
/// and the message of its value (for lists: of its items).
struct Site {
    field: Option<(&'static str, &'static str)>,
    ty: Option<u16>,
}

fn message_name(msg: u16) -> Option<&'static str> {
    MESSAGES.get(usize::from(msg)).map(|m| m.name)
}

/// The fields of message `msg` as its JSON object has them, embedded
/// structs' fields inlined, each with the message declaring it.
pub(crate) fn json_fields(msg: u16) -> Vec<(u16, &'static Field)> {
    let mut out = Vec::new();
    collect_fields(msg, &mut out, 0);
    out
}

fn collect_fields(msg: u16, out: &mut Vec<(u16, &'static Field)>, depth: usize) {
    let Some(m) = MESSAGES.get(usize::from(msg)) else {
        return;
    };
    for field in m.fields {
        match field.ty {
            // Embedded structs nest a few levels at most; the bound guards
            // against a malformed table.
            Ty::Msg(inner) if field.inline && depth < 8 => collect_fields(inner, out, depth + 1),
            _ => out.push((msg, field)),
        }
    }
}

/// The field named `name` in message `msg`'s JSON object, with the message
/// declaring it (an embedded struct's, for inlined fields).
fn find_field(msg: u16, name: &str) -> Option<(u16, &'static Field)> {
    json_fields(msg).into_iter().find(|(_, f)| f.name == name)
}

impl MergeSchema for BuiltinSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match (self.rule(path), self.flavor) {
            (Some(rule), Flavor::Strategic) => rule.strategic(),
            (Some(rule), Flavor::Apply) => rule.apply(),
            (None, _) => ListStrategy::Atomic,
        }
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        if self.flavor != Flavor::Apply {
            return false;
        }
        let Some(site) = self.resolve(path) else {
            return false;
        };
        let map_atomic = site
            .field
            .and_then(|(owner, field)| rules::field_rule(owner, field))
            .is_some_and(FieldRule::map_is_atomic);
        map_atomic
            || site
                .ty
                .and_then(message_name)
                .is_some_and(rules::struct_is_atomic)
    }

    fn retain_keys_allowed(&self, path: &[&str]) -> bool {
        self.rule(path).is_some_and(FieldRule::retains_keys)
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        if self.flavor != Flavor::Apply {
            return None;
        }
        let item = message_name(self.resolve(path)?.ty?)?;
        rules::key_default(item, key).map(|d| Value::String(d.to_string()))
    }
}

/// Every property of the type graph's types that has a rule, as
/// `(definition name, property, rule)`: embedded structs' rules appear
/// under each type embedding them, as kube's OpenAPI flattens them.
pub fn property_rules() -> Vec<(&'static str, &'static str, &'static FieldRule)> {
    let mut out = Vec::new();
    for (index, msg) in MESSAGES.iter().enumerate() {
        let Ok(index) = u16::try_from(index) else {
            break;
        };
        for (owner, field) in json_fields(index) {
            let rule = message_name(owner).and_then(|o| rules::field_rule(o, field.name));
            if let Some(rule) = rule {
                out.push((msg.name, field.name, rule));
            }
        }
    }
    out
}

/// The types tagged `+structType=atomic`, by definition name.
pub fn atomic_structs() -> &'static [&'static str] {
    rules::ATOMIC_STRUCTS
}
