//! The newest body a slot knows for its object, kept small while it waits.
//!
//! A burst of events leaves thousands of objects waiting for a worker, and every handled object
//! stays known at rest. As a tree of `serde_json` maps a small object takes several KiB (each
//! map is a B-tree node with room for eleven entries); as JSON text it takes a few hundred
//! bytes. So a slot keeps the text, with the two fields staleness checks need, and a worker
//! parses it when the object's turn comes. Objects with timers or daemons share the parsed body
//! with them anyway, so theirs stays parsed.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

/// The newest body of an object, parsed or packed as JSON text.
#[derive(Debug, Clone)]
pub(crate) enum Latest {
    /// Shared with timers and daemons, or not serializable (never for watch bodies).
    Parsed(Arc<Value>),
    /// JSON text plus what staleness checks read.
    Packed(Packed),
}

/// A body packed as JSON text.
#[derive(Debug, Clone)]
pub(crate) struct Packed {
    text: Arc<str>,
    resource_version: Option<u64>,
    uid: Option<Box<str>>,
}

impl Latest {
    /// Packs `body` as text.
    pub(crate) fn packed(body: &Value) -> Latest {
        match serde_json::to_string(body) {
            Ok(text) => Latest::Packed(Packed {
                text: text.into(),
                resource_version: resource_version(body),
                uid: uid(body).map(Box::from),
            }),
            Err(_) => Latest::Parsed(Arc::new(body.clone())),
        }
    }

    /// Keeps `body` parsed (it is shared anyway).
    pub(crate) fn parsed(body: Arc<Value>) -> Latest {
        Latest::Parsed(body)
    }

    /// The body as handlers see it, parsing packed text.
    pub(crate) fn body(&self) -> Arc<Value> {
        match self {
            Latest::Parsed(body) => body.clone(),
            // The text was written by `packed` from a `Value`, so it parses back; should it
            // not, the cycle sees no object and the next event brings a fresh body.
            Latest::Packed(packed) => match serde_json::from_str(&packed.text) {
                Ok(body) => Arc::new(body),
                Err(error) => {
                    tracing::error!(%error, "a packed body did not parse back");
                    Arc::new(Value::Null)
                }
            },
        }
    }

    /// What is kept of a body at rest: apiVersion, kind and the identifying metadata, packed.
    pub(crate) fn skeleton(&self) -> Latest {
        let identity = match self {
            Latest::Parsed(body) => Identity::deserialize(&**body).ok(),
            Latest::Packed(packed) => serde_json::from_str::<Identity>(&packed.text).ok(),
        };
        match identity.and_then(|i| serde_json::to_value(i).ok()) {
            Some(skeleton) => Latest::packed(&skeleton),
            None => self.clone(),
        }
    }

    /// The numeric resourceVersion, when the server uses numbers (etcd and kopr-apiserver do).
    pub(crate) fn resource_version(&self) -> Option<u64> {
        match self {
            Latest::Parsed(body) => resource_version(body),
            Latest::Packed(packed) => packed.resource_version,
        }
    }

    /// `metadata.uid`.
    pub(crate) fn uid(&self) -> Option<&str> {
        match self {
            Latest::Parsed(body) => uid(body),
            Latest::Packed(packed) => packed.uid.as_deref(),
        }
    }

    /// Whether `incoming` is older than (or the same as) this body of the same object.
    pub(crate) fn is_newer_or_same_as(&self, incoming: &Value) -> bool {
        match (resource_version(incoming), self.resource_version()) {
            (Some(new), Some(old)) => new <= old && uid(incoming) == self.uid(),
            _ => false,
        }
    }
}

/// The part of a body that identifies it.
#[derive(Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Identity {
    #[serde(default)]
    api_version: Value,
    #[serde(default)]
    kind: Value,
    #[serde(default)]
    metadata: IdentityMeta,
}

#[derive(Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct IdentityMeta {
    #[serde(default)]
    name: Value,
    #[serde(default)]
    namespace: Value,
    #[serde(default)]
    uid: Value,
    #[serde(default)]
    resource_version: Value,
}

/// Numeric resourceVersion, when the server uses numbers.
pub(crate) fn resource_version(body: &Value) -> Option<u64> {
    body.pointer("/metadata/resourceVersion")?
        .as_str()?
        .parse()
        .ok()
}

/// `metadata.uid`.
pub(crate) fn uid(body: &Value) -> Option<&str> {
    body.pointer("/metadata/uid")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(rv: &str, uid: &str) -> Value {
        json!({
            "apiVersion": "x/v1", "kind": "W",
            "metadata": {"name": "a", "namespace": "n", "uid": uid, "resourceVersion": rv,
                         "labels": {"k": "v"}},
            "spec": {"deep": {"er": [1, 2, 3]}},
        })
    }

    #[test]
    fn packed_bodies_round_trip_and_answer_staleness() {
        let original = body("7", "u1");
        for latest in [
            Latest::packed(&original),
            Latest::parsed(Arc::new(original.clone())),
        ] {
            assert_eq!(*latest.body(), original);
            assert_eq!(latest.resource_version(), Some(7));
            assert_eq!(latest.uid(), Some("u1"));
            assert!(latest.is_newer_or_same_as(&body("7", "u1")));
            assert!(latest.is_newer_or_same_as(&body("5", "u1")));
            assert!(!latest.is_newer_or_same_as(&body("8", "u1")));
            assert!(
                !latest.is_newer_or_same_as(&body("5", "u2")),
                "a recreated object is never stale"
            );
            assert!(
                !latest.is_newer_or_same_as(&body("x", "u1")),
                "opaque versions are never stale"
            );
        }
    }

    #[test]
    fn skeletons_keep_only_the_identity() {
        let skeleton = Latest::packed(&body("9", "u1")).skeleton();
        assert!(matches!(skeleton, Latest::Packed(_)));
        assert_eq!(
            *skeleton.body(),
            json!({"apiVersion": "x/v1", "kind": "W",
                   "metadata": {"name": "a", "namespace": "n", "uid": "u1", "resourceVersion": "9"}})
        );
        assert_eq!(skeleton.resource_version(), Some(9));
    }
}
