//! Publishes the cluster's CA certificate as the `kube-root-ca.crt`
//! ConfigMap (key `ca.crt`) in every namespace, as kube-controller-manager's
//! root-ca-cert-publisher does; pods' service-account volumes mount it.

use std::sync::Arc;

use serde_json::json;

use crate::object;
use crate::registry::{Api, Target};
use crate::storage::{EventType, WatchEvent};

/// The ConfigMap's name.
pub const NAME: &str = "kube-root-ca.crt";
/// Its key holding the PEM certificate.
pub const KEY: &str = "ca.crt";

/// Creates or restores the ConfigMap of `namespace`.
async fn ensure(api: &Api, namespace: &str, ca: &str) {
    let Some(rt) = api.catalog.get("", "v1", "configmaps") else {
        return;
    };
    let target = Target {
        rt: rt.clone(),
        namespace: Some(namespace.to_string()),
        name: Some(NAME.to_string()),
    };
    let opts = crate::bootstrap::system_options();
    let result = match api.get(&target).await {
        Ok(current) if current["data"][KEY] == ca => return,
        Ok(current) => {
            let mut updated = (*current).clone();
            updated["data"] = json!({KEY: ca});
            api.update(&target, None, updated, &opts).await.map(|_| ())
        }
        Err(e) if e.code == 404 => {
            let obj = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": namespace},
                "data": {KEY: ca},
            });
            api.create(&rt, Some(namespace), obj, &opts)
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
    };
    // A namespace being deleted refuses new objects (403); a racing write
    // conflicts (409) and brings its own event.
    if let Err(e) = result
        && !matches!(e.code, 403 | 404 | 409)
    {
        tracing::warn!(namespace, error = %e, "could not publish the root CA");
    }
}

/// Publishes the CA in every namespace.
pub async fn resync(api: &Api, ca: &Arc<str>) {
    for ns in api.store.current_objects("/core/namespaces/") {
        ensure(api, object::name(&ns), ca).await;
    }
}

/// Reacts to new namespaces and to changes of the ConfigMap.
pub fn observe(api: &Api, ev: &WatchEvent, ca: &Arc<str>) {
    let namespace = if ev.key.starts_with("/core/namespaces/") && ev.event_type == EventType::Added
    {
        object::name(&ev.object).to_string()
    } else if ev.key.starts_with("/core/configmaps/")
        && ev.event_type != EventType::Added
        && object::name(&ev.object) == NAME
    {
        object::namespace(&ev.object).to_string()
    } else {
        return;
    };
    let (api, ca) = (api.clone(), ca.clone());
    tokio::spawn(async move { ensure(&api, &namespace, &ca).await });
}
