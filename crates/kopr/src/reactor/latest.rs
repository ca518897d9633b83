//! The newest body a slot knows for its object, kept small while it waits.
//!
//! A burst of events leaves thousands of objects waiting for a worker, and every handled object
//! stays known at rest. As a tree of `serde_json` maps a small object takes several KiB (each
//! map is a B-tree node with room for eleven entries); as JSON text it takes a few hundred
//! bytes. So a slot keeps the text, with the two fields staleness checks need, and a worker
//! parses it when the object's turn comes. Objects with timers or daemons share the parsed body
//! with them anyway, so theirs stays parsed.
//!
//! At rest, an object needs only what tells its events apart: its uid and resourceVersion.
//! Those are kept as numbers in the slot itself (no heap block at all), and the identity body
//! that a deletion noticed by a relist needs is rebuilt from them, the key and the resource.

use std::sync::Arc;

use kube::api::ApiResource;
use serde::Deserialize;
use serde_json::Value;

use super::ObjectKey;

/// The newest body of an object, parsed or packed as JSON text.
#[derive(Debug, Clone)]
pub(crate) enum Latest {
    /// Shared with timers and daemons, or not serializable (never for watch bodies).
    Parsed(Arc<Value>),
    /// JSON text plus what staleness checks read.
    Packed(Box<Packed>),
    /// At rest: the identity only, as numbers (a canonical UUID and a decimal resourceVersion).
    Identity(Identity),
}

/// An object's identity at rest; the rest of it is the slot's key and the resource.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Identity {
    resource_version: u64,
    uid: [u8; 16],
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
            Ok(text) => Latest::Packed(Box::new(Packed {
                text: text.into(),
                resource_version: resource_version(body),
                uid: uid(body).map(Box::from),
            })),
            Err(_) => Latest::Parsed(Arc::new(body.clone())),
        }
    }

    /// Keeps `body` parsed (it is shared anyway).
    pub(crate) fn parsed(body: Arc<Value>) -> Latest {
        Latest::Parsed(body)
    }

    /// The body as handlers see it, parsing packed text (`key` and `resource` complete an
    /// identity).
    pub(crate) fn body(&self, key: &ObjectKey, resource: &ApiResource) -> Arc<Value> {
        match self {
            Latest::Parsed(body) => body.clone(),
            Latest::Identity(identity) => Arc::new(serde_json::json!({
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                "metadata": {
                    "name": key.name(),
                    "namespace": key.namespace(),
                    "uid": format_uuid(&identity.uid),
                    "resourceVersion": identity.resource_version.to_string(),
                },
            })),
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

    /// What is kept of a body at rest: apiVersion, kind and the identifying metadata; as
    /// numbers when the rest is the key's and the resource's, else packed.
    pub(crate) fn skeleton(&self, key: &ObjectKey, resource: &ApiResource) -> Latest {
        let skeleton = match self {
            Latest::Parsed(body) => Skeleton::deserialize(&**body).ok(),
            Latest::Packed(packed) => serde_json::from_str::<Skeleton>(&packed.text).ok(),
            Latest::Identity(_) => return self.clone(),
        };
        let Some(skeleton) = skeleton else {
            return self.clone();
        };
        if let Some(identity) = skeleton.identity(key, resource) {
            return Latest::Identity(identity);
        }
        match serde_json::to_value(skeleton) {
            Ok(skeleton) => Latest::packed(&skeleton),
            Err(_) => self.clone(),
        }
    }

    /// The numeric resourceVersion, when the server uses numbers (etcd and kopr-apiserver do).
    pub(crate) fn resource_version(&self) -> Option<u64> {
        match self {
            Latest::Parsed(body) => resource_version(body),
            Latest::Packed(packed) => packed.resource_version,
            Latest::Identity(identity) => Some(identity.resource_version),
        }
    }

    /// Whether `metadata.uid` is `uid` (both absent: the same).
    pub(crate) fn has_uid(&self, uid: Option<&str>) -> bool {
        match self {
            Latest::Parsed(body) => self::uid(body) == uid,
            Latest::Packed(packed) => packed.uid.as_deref() == uid,
            Latest::Identity(identity) => uid.and_then(parse_uuid) == Some(identity.uid),
        }
    }

    /// Whether `incoming` is older than (or the same as) this body of the same object.
    pub(crate) fn is_newer_or_same_as(&self, incoming: &Value) -> bool {
        match (resource_version(incoming), self.resource_version()) {
            (Some(new), Some(old)) => new <= old && self.has_uid(uid(incoming)),
            _ => false,
        }
    }
}

/// The part of a body that identifies it.
#[derive(Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Skeleton {
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

impl Skeleton {
    /// The identity as numbers, when nothing else in it needs keeping: apiVersion and kind are
    /// the resource's, name and namespace the key's, the uid a canonical UUID and the
    /// resourceVersion a canonical decimal.
    fn identity(&self, key: &ObjectKey, resource: &ApiResource) -> Option<Identity> {
        let meta = &self.metadata;
        let matches = self.api_version.as_str() == Some(resource.api_version.as_str())
            && self.kind.as_str() == Some(resource.kind.as_str())
            && meta.name.as_str() == Some(key.name())
            && match key.namespace() {
                Some(namespace) => meta.namespace.as_str() == Some(namespace),
                None => meta.namespace.is_null(),
            };
        if !matches {
            return None;
        }
        let text = meta.resource_version.as_str()?;
        let resource_version: u64 = text.parse().ok()?;
        if resource_version.to_string() != text {
            return None;
        }
        Some(Identity {
            resource_version,
            uid: parse_uuid(meta.uid.as_str()?)?,
        })
    }
}

/// A UUID in its canonical form (lowercase, hyphenated 8-4-4-4-12) as its 16 bytes; `None` for
/// any other text, so that the bytes always format back to the same text.
fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let bytes = text.as_bytes();
    if bytes.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut digits = bytes
        .iter()
        .enumerate()
        .filter(|(i, _)| !matches!(i, 8 | 13 | 18 | 23));
    if [8, 13, 18, 23].iter().any(|&i| bytes.get(i) != Some(&b'-')) {
        return None;
    }
    for byte in &mut out {
        let mut value = 0u8;
        for _ in 0..2 {
            let (_, &digit) = digits.next()?;
            let nibble = match digit {
                b'0'..=b'9' => digit - b'0',
                b'a'..=b'f' => digit - b'a' + 10,
                _ => return None,
            };
            value = value << 4 | nibble;
        }
        *byte = value;
    }
    Some(out)
}

/// The canonical text of a UUID's bytes.
fn format_uuid(bytes: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(36);
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        for nibble in [byte >> 4, byte & 0xf] {
            text.push(char::from(HEX[usize::from(nibble)]));
        }
    }
    text
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

    const UID: &str = "0a1b2c3d-4e5f-6789-abcd-ef0123456789";

    fn body(rv: &str, uid: &str) -> Value {
        json!({
            "apiVersion": "x/v1", "kind": "W",
            "metadata": {"name": "a", "namespace": "n", "uid": uid, "resourceVersion": rv,
                         "labels": {"k": "v"}},
            "spec": {"deep": {"er": [1, 2, 3]}},
        })
    }

    fn key() -> ObjectKey {
        ObjectKey::new(Some("n"), "a")
    }

    fn resource() -> ApiResource {
        ApiResource {
            group: "x".into(),
            version: "v1".into(),
            api_version: "x/v1".into(),
            kind: "W".into(),
            plural: "ws".into(),
        }
    }

    #[test]
    fn packed_bodies_round_trip_and_answer_staleness() {
        for uid in ["u1", UID] {
            let other = if uid == UID { "u2" } else { UID };
            let original = body("7", uid);
            let whole = [
                Latest::packed(&original),
                Latest::parsed(Arc::new(original.clone())),
            ];
            for latest in &whole {
                assert_eq!(*latest.body(&key(), &resource()), original);
            }
            let skeleton = Latest::packed(&original).skeleton(&key(), &resource());
            for latest in whole.iter().chain([&skeleton]) {
                assert_eq!(latest.resource_version(), Some(7));
                assert!(latest.has_uid(Some(uid)));
                assert!(!latest.has_uid(Some(other)));
                assert!(!latest.has_uid(None));
                assert!(latest.is_newer_or_same_as(&body("7", uid)));
                assert!(latest.is_newer_or_same_as(&body("5", uid)));
                assert!(!latest.is_newer_or_same_as(&body("8", uid)));
                assert!(
                    !latest.is_newer_or_same_as(&body("5", other)),
                    "a recreated object is never stale"
                );
                assert!(
                    !latest.is_newer_or_same_as(&body("x", uid)),
                    "opaque versions are never stale"
                );
            }
        }
    }

    #[test]
    fn skeletons_keep_only_the_identity() {
        for uid in ["u1", UID, "0A1B2C3D-4E5F-6789-ABCD-EF0123456789"] {
            for rv in ["9", "09", "x"] {
                let skeleton = Latest::packed(&body(rv, uid)).skeleton(&key(), &resource());
                let canonical = uid == UID && rv == "9";
                assert_eq!(
                    matches!(skeleton, Latest::Identity(_)),
                    canonical,
                    "{uid} {rv}"
                );
                assert_eq!(
                    *skeleton.body(&key(), &resource()),
                    json!({"apiVersion": "x/v1", "kind": "W",
                           "metadata": {"name": "a", "namespace": "n", "uid": uid,
                                        "resourceVersion": rv}})
                );
                assert_eq!(skeleton.resource_version(), rv.parse().ok());
            }
        }
    }

    #[test]
    fn skeletons_of_other_kinds_or_cluster_objects_stay_exact() {
        let mut other = body("9", UID);
        other["kind"] = json!("V");
        let skeleton = Latest::packed(&other).skeleton(&key(), &resource());
        assert!(matches!(skeleton, Latest::Packed(_)));
        assert_eq!(skeleton.body(&key(), &resource())["kind"], "V");

        let cluster = json!({"apiVersion": "x/v1", "kind": "W",
                             "metadata": {"name": "a", "uid": UID, "resourceVersion": "3"}});
        let key = ObjectKey::new(None, "a");
        let skeleton = Latest::packed(&cluster).skeleton(&key, &resource());
        assert!(matches!(skeleton, Latest::Identity(_)));
        assert_eq!(
            *skeleton.body(&key, &resource()),
            json!({"apiVersion": "x/v1", "kind": "W",
                   "metadata": {"name": "a", "namespace": null, "uid": UID,
                                "resourceVersion": "3"}})
        );
    }

    #[test]
    fn uuids_round_trip_in_canonical_form_only() {
        let bytes = parse_uuid(UID);
        assert_eq!(bytes.map(|b| format_uuid(&b)).as_deref(), Some(UID));
        for text in [
            "0A1B2C3D-4E5F-6789-ABCD-EF0123456789",
            "0a1b2c3d4e5f6789abcdef0123456789",
            "0a1b2c3d-4e5f-6789-abcd-ef012345678g",
            "0a1b2c3d-4e5f-6789-abcd_ef0123456789",
            "",
        ] {
            assert_eq!(parse_uuid(text), None, "{text}");
        }
    }

    #[test]
    fn a_latest_is_small() {
        assert!(std::mem::size_of::<Option<Latest>>() <= 32);
    }
}
