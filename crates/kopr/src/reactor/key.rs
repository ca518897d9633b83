//! An object's identity within a resource, kept without a heap allocation when its namespace
//! and name are short (as most are).
//!
//! Every object the operator has seen keeps its key in the reactor's slot map for as long as it
//! exists. Two `String`s would cost two heap allocations per object, and those small blocks,
//! allocated in the middle of a burst of handling, pin the pages around them: the memory the
//! burst freed could not go back to the system. So the key keeps `namespace/name` inline in the
//! map entry, and only a longer pair is boxed.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use serde_json::Value;

/// The longest `namespace` + `name` kept inline.
const INLINE: usize = 45;
/// `Inline::namespace_len` of a cluster-scoped object.
const NO_NAMESPACE: u8 = u8::MAX;

/// An object's identity within a resource: its namespace (none when cluster-scoped) and name.
#[derive(Clone)]
pub(crate) struct ObjectKey(Repr);

#[derive(Clone)]
enum Repr {
    /// `namespace` followed by `name` in `bytes`.
    Inline {
        namespace_len: u8,
        len: u8,
        bytes: [u8; INLINE],
    },
    Boxed {
        namespace: Option<Box<str>>,
        name: Box<str>,
    },
}

impl ObjectKey {
    /// The key of `name` in `namespace`.
    pub(crate) fn new(namespace: Option<&str>, name: &str) -> ObjectKey {
        let ns = namespace.unwrap_or_default();
        let total = ns.len() + name.len();
        if total <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..ns.len()].copy_from_slice(ns.as_bytes());
            bytes[ns.len()..total].copy_from_slice(name.as_bytes());
            // Both fit in a byte: `total` is at most `INLINE`.
            let namespace_len = match namespace {
                Some(ns) => u8::try_from(ns.len()).unwrap_or(NO_NAMESPACE),
                None => NO_NAMESPACE,
            };
            ObjectKey(Repr::Inline {
                namespace_len,
                len: u8::try_from(total).unwrap_or(u8::MAX),
                bytes,
            })
        } else {
            ObjectKey(Repr::Boxed {
                namespace: namespace.map(Box::from),
                name: name.into(),
            })
        }
    }

    /// The key of the object `body` is, if it has a name.
    pub(crate) fn of(body: &Value) -> Option<ObjectKey> {
        let meta = body.get("metadata")?;
        let namespace = meta.get("namespace").and_then(Value::as_str);
        let name = meta.get("name")?.as_str()?;
        Some(ObjectKey::new(namespace, name))
    }

    /// The namespace (none when cluster-scoped).
    pub(crate) fn namespace(&self) -> Option<&str> {
        match &self.0 {
            Repr::Inline {
                namespace_len,
                bytes,
                ..
            } => {
                if *namespace_len == NO_NAMESPACE {
                    return None;
                }
                text(bytes.get(..usize::from(*namespace_len)))
            }
            Repr::Boxed { namespace, .. } => namespace.as_deref(),
        }
    }

    /// The name.
    pub(crate) fn name(&self) -> &str {
        match &self.0 {
            Repr::Inline {
                namespace_len,
                len,
                bytes,
            } => {
                let start = match *namespace_len {
                    NO_NAMESPACE => 0,
                    n => usize::from(n),
                };
                text(bytes.get(start..usize::from(*len))).unwrap_or_default()
            }
            Repr::Boxed { name, .. } => name,
        }
    }
}

/// Inline bytes as text: they were copied from `&str`s whole, so they always are.
fn text(bytes: Option<&[u8]>) -> Option<&str> {
    std::str::from_utf8(bytes?).ok()
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        self.namespace() == other.namespace() && self.name() == other.name()
    }
}

impl Eq for ObjectKey {}

impl Hash for ObjectKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.namespace().hash(state);
        self.name().hash(state);
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.namespace(), self.name()).cmp(&(other.namespace(), other.name()))
    }
}

impl std::fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectKey")
            .field("namespace", &self.namespace())
            .field("name", &self.name())
            .finish()
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.namespace() {
            Some(ns) => write!(f, "{ns}/{}", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_inline_and_boxed() {
        let long = "n".repeat(60);
        for (namespace, name) in [
            (Some("default"), "web"),
            (None, "cluster-wide"),
            (Some(""), "empty-namespace"),
            (Some("ns"), long.as_str()),
            (None, long.as_str()),
            (Some(long.as_str()), "x"),
        ] {
            let key = ObjectKey::new(namespace, name);
            assert_eq!(key.namespace(), namespace);
            assert_eq!(key.name(), name);
        }
        assert!(matches!(
            ObjectKey::new(Some("default"), "web").0,
            Repr::Inline { .. }
        ));
        assert!(matches!(
            ObjectKey::new(Some("ns"), &long).0,
            Repr::Boxed { .. }
        ));
        assert_eq!(std::mem::size_of::<ObjectKey>(), 48);
    }

    #[test]
    fn equality_and_order_follow_namespace_then_name() {
        let a = ObjectKey::new(Some("a"), "bc");
        let b = ObjectKey::new(Some("ab"), "c");
        assert_ne!(a, b, "the split is part of the identity");
        assert!(a < b);
        assert_ne!(ObjectKey::new(None, "x"), ObjectKey::new(Some(""), "x"));
        assert_eq!(ObjectKey::new(Some("n"), "x").to_string(), "n/x");
        assert_eq!(ObjectKey::new(None, "x").to_string(), "x");
    }
}
