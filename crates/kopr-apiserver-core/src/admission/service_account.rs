//! The ServiceAccount admission plugin, as kube-apiserver runs it on every
//! new Pod: `spec.serviceAccountName` defaults to `default`, the service
//! account must exist (a namespace's `default` one may still be on its
//! way), and unless automounting is turned off (on the pod or
//! the service account) the pod gets the projected `kube-api-access-*`
//! volume (a bound token, the cluster's CA from `kube-root-ca.crt`, the
//! namespace) mounted read-only in every container at
//! `/var/run/secrets/kubernetes.io/serviceaccount`.

use serde_json::{Value, json};

use super::plugin::Mutating;
use crate::registry::{AdmissionRequest, Operation};
use crate::status::{ApiError, ResourceRef};
use crate::storage::Store;

/// Where the token, CA and namespace are mounted.
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the projected volume's name.
pub const VOLUME_PREFIX: &str = "kube-api-access-";
/// The ConfigMap holding the cluster's CA in every namespace.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

/// The plugin, reading service accounts from the store.
pub struct ServiceAccountAdmission {
    store: Store,
}

impl ServiceAccountAdmission {
    /// The plugin over `store`.
    pub fn new(store: Store) -> ServiceAccountAdmission {
        ServiceAccountAdmission { store }
    }
}

/// The projected volume kube adds.
fn projected_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    })
}

/// Five characters from kube's random-string alphabet.
fn suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Mounts `volume` in each container of `list` that mounts nothing at the
/// service-account path yet.
fn mount_in(containers: Option<&mut Value>, volume: &str) {
    let Some(Value::Array(list)) = containers else {
        return;
    };
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        let mounts = c
            .entry("volumeMounts")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(mounts) = mounts.as_array_mut() else {
            continue;
        };
        if mounts.iter().any(|m| m["mountPath"] == MOUNT_PATH) {
            continue;
        }
        mounts.push(json!({"name": volume, "readOnly": true, "mountPath": MOUNT_PATH}));
    }
}

impl Mutating for ServiceAccountAdmission {
    fn admit(&self, request: &AdmissionRequest<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let rt = request.rt;
        if !rt.group.is_empty()
            || rt.kind != "Pod"
            || request.operation != Operation::Create
            || request.subresource.is_some()
        {
            return Ok(());
        }
        // Mirror pods of static manifests are left as they are.
        if obj["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string() {
            return Ok(());
        }
        let namespace = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        let account = match spec.get("serviceAccountName").and_then(Value::as_str) {
            Some(a) if !a.is_empty() => a.to_string(),
            _ => {
                spec.insert("serviceAccountName".into(), json!("default"));
                "default".to_string()
            }
        };
        let key = format!("/core/serviceaccounts/{namespace}/{account}");
        let sa = self.store.current(&key).map(|s| s.object);
        // A namespace's `default` account is made by a controller just after
        // the namespace; a pod created in between is not refused for it.
        if sa.is_none() && account != "default" {
            return Err(ApiError::forbidden(
                ResourceRef {
                    group: "",
                    resource: "pods",
                },
                &name,
                &format!(
                    "error looking up service account {namespace}/{account}: serviceaccount \"{account}\" not found"
                ),
            ));
        }
        let automount = spec
            .get("automountServiceAccountToken")
            .and_then(Value::as_bool)
            .or_else(|| {
                sa.as_ref()
                    .and_then(|a| a["automountServiceAccountToken"].as_bool())
            })
            .unwrap_or(true);
        if !automount {
            return Ok(());
        }
        let has_volume = spec
            .get("volumes")
            .and_then(Value::as_array)
            .is_some_and(|v| {
                v.iter().any(|v| {
                    v["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with(VOLUME_PREFIX))
                })
            });
        if has_volume {
            return Ok(());
        }
        let volume = format!("{VOLUME_PREFIX}{}", suffix());
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = volumes.as_array_mut() {
            list.push(projected_volume(&volume));
        } else {
            *volumes = Value::Array(vec![projected_volume(&volume)]);
        }
        mount_in(spec.get_mut("initContainers"), &volume);
        mount_in(spec.get_mut("containers"), &volume);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_go_to_containers_without_one_at_the_path() {
        let mut containers = json!([
            {"name": "a"},
            {"name": "b", "volumeMounts": [{"name": "own", "mountPath": MOUNT_PATH}]},
        ]);
        mount_in(Some(&mut containers), "kube-api-access-x");
        assert_eq!(
            containers[0]["volumeMounts"],
            json!([{"name": "kube-api-access-x", "readOnly": true, "mountPath": MOUNT_PATH}])
        );
        assert_eq!(
            containers[1]["volumeMounts"].as_array().map(Vec::len),
            Some(1)
        );
        let s = suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
