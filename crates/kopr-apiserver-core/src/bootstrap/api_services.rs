//! The APIServices of the served group versions, as kube-aggregator's
//! autoregister and CRD-registration controllers keep them: one per
//! built-in group version (label `kube-aggregator.kubernetes.io/automanaged:
//! onstart`) and one per custom resource group version (`"true"`), all
//! local and `Available`; those whose group version is no longer served
//! are removed, and a deleted one comes back.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::kinds::API_SERVICE_PRIORITIES;
use crate::object;
use crate::registry::{Api, Target};
use crate::resources::kind::Known;
use crate::storage::{EventType, WatchEvent};

const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";
const PREFIX: &str = "/apiregistration.k8s.io/apiservices/";
const CRD_PREFIX: &str = "/apiextensions.k8s.io/customresourcedefinitions/";
/// The priorities kube-aggregator gives custom resource group versions.
const CRD_GROUP_PRIORITY: u32 = 1000;
const CRD_VERSION_PRIORITY: u32 = 100;

/// One wanted APIService: name → (group, version, priorities, label).
type Wanted = BTreeMap<String, (String, String, u32, u32, &'static str)>;

fn wanted(api: &Api) -> Wanted {
    let mut out = Wanted::new();
    for (group, version, gp, vp) in API_SERVICE_PRIORITIES {
        if api.catalog.serves_group_version(group, version) {
            out.insert(
                format!("{version}.{group}"),
                (group.to_string(), version.to_string(), *gp, *vp, "onstart"),
            );
        }
    }
    for rt in api.catalog.all() {
        if rt.custom.is_some() {
            out.entry(format!("{}.{}", rt.version, rt.group))
                .or_insert_with(|| {
                    (
                        rt.group.clone(),
                        rt.version.clone(),
                        CRD_GROUP_PRIORITY,
                        CRD_VERSION_PRIORITY,
                        "true",
                    )
                });
        }
    }
    out
}

fn api_service(name: &str, w: &(String, String, u32, u32, &'static str)) -> Value {
    let (group, version, gp, vp, label) = w;
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name, "labels": {AUTOMANAGED: label}},
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": gp,
            "versionPriority": vp,
        },
    })
}

/// Brings the APIServices in line with the served group versions.
pub async fn resync(api: &Api) {
    let Some(rt) = api.catalog.known(Known::ApiServices) else {
        return;
    };
    let wanted = wanted(api);
    let opts = crate::bootstrap::system_options();
    let existing = api.store.current_objects(PREFIX);
    for obj in &existing {
        let name = object::name(obj);
        let managed = obj
            .pointer("/metadata/labels")
            .and_then(|l| l.get(AUTOMANAGED))
            .is_some();
        if managed && !wanted.contains_key(name) {
            let t = Target {
                rt: rt.clone(),
                namespace: None,
                name: Some(name.to_string()),
            };
            if let Err(e) = api
                .delete(&t, &crate::registry::DeleteOptions::default())
                .await
                && e.code != 404
            {
                tracing::warn!(name, error = %e, "could not remove an APIService");
            }
        }
    }
    for (name, w) in &wanted {
        let t = Target {
            rt: rt.clone(),
            namespace: None,
            name: Some(name.clone()),
        };
        let current = existing.iter().find(|o| object::name(o) == name);
        if current.is_none() {
            // A local APIService is created available (its strategy says so).
            match api.create(&rt, None, api_service(name, w), &opts).await {
                Ok(_) => continue,
                Err(e) if e.code == 409 => {}
                Err(e) => {
                    tracing::warn!(name, error = %e, "could not register an APIService");
                    continue;
                }
            }
        }
        let is_available = current
            .and_then(|c| c.pointer("/status/conditions"))
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
            });
        if !is_available {
            let result = api
                .mutate_status(&t, &opts, |cur| {
                    let mut new = cur.clone();
                    new["status"] = crate::registry::strategy::local_available();
                    Ok(new)
                })
                .await;
            if let Err(e) = result
                && e.code != 404
            {
                tracing::warn!(name, error = %e, "could not mark an APIService available");
            }
        }
    }
}

/// Resyncs when a CustomResourceDefinition changes or an APIService goes.
pub fn observe(api: &Api, ev: &WatchEvent) {
    let deleted = matches!(ev.event_type, EventType::Deleted);
    if ev.key.starts_with(CRD_PREFIX) || (deleted && ev.key.starts_with(PREFIX)) {
        let api = api.clone();
        tokio::spawn(async move { resync(&api).await });
    }
}
