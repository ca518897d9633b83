//! The CRD controllers: accept names and establish new CRDs (status
//! conditions), serve their versions, and on deletion remove every custom
//! resource before letting the CRD go.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::crd::conversion::Webhook;
use crate::crd::{CRD_GROUP, CustomVersion};
use crate::object;
use crate::registry::strategy::CustomResourceStrategy;
use crate::registry::{Api, DeleteOptions, ListOptions, Propagation, Target, WriteOptions};
use crate::resources::kind::Sub;
use crate::resources::{Catalog, ResourceType};
use crate::storage::{EventType, WatchEvent};

/// The finalizer that holds a CRD until its custom resources are gone.
pub use crate::registry::strategy::CLEANUP_FINALIZER;

const KEY_PREFIX: &str = "/apiextensions.k8s.io/customresourcedefinitions/";

fn crd_target(api: &Api, name: &str) -> Option<Target> {
    Some(Target {
        rt: api
            .catalog
            .get(CRD_GROUP, "v1", "customresourcedefinitions")?,
        namespace: None,
        name: Some(name.to_string()),
    })
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a CRD's status says it is established.
pub fn is_established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| text(c, "/type") == "Established" && text(c, "/status") == "True")
        })
}

/// Registers every served version of an established CRD in the catalog.
pub fn serve(catalog: &Catalog, crd: &Value) {
    let group = text(crd, "/spec/group");
    let plural = text(crd, "/spec/names/plural");
    if group.is_empty() || plural.is_empty() {
        return;
    }
    catalog.unregister(group, plural);
    if !is_established(crd) || object::is_deleting(crd) {
        return;
    }
    let kind = text(crd, "/spec/names/kind");
    let singular = match text(crd, "/spec/names/singular") {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let namespaced = text(crd, "/spec/scope") != "Cluster";
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .unwrap_or("");
    let conversion = Webhook::of_crd(crd).map(Arc::new);
    for (i, v) in versions.iter().enumerate() {
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let Ok(mut info) = CustomVersion::from_version(v, i) else {
            tracing::warn!(
                crd = object::name(crd),
                "a version's rules do not compile; not serving it"
            );
            continue;
        };
        let mut rt =
            ResourceType::new(group, text(v, "/name"), plural, &singular, kind, namespaced)
                .strategy(CustomResourceStrategy);
        rt.short_names = strings(crd, "/spec/names/shortNames");
        rt.categories = strings(crd, "/spec/names/categories");
        if v.pointer("/subresources/status").is_some() {
            rt.subresources.insert(Sub::Status);
        }
        if v.pointer("/subresources/scale").is_some() {
            rt.subresources.insert(Sub::Scale);
        }
        rt.storage_api_version = format!("{group}/{storage_version}");
        info.conversion = conversion.clone();
        rt.custom = Some(Arc::new(info));
        catalog.register(rt);
    }
}

fn cleaning() -> &'static Mutex<HashSet<String>> {
    static SET: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    SET.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Serves every established CRD (at start-up).
pub async fn resync(api: &Api) {
    let Some(rt) = api
        .catalog
        .get(CRD_GROUP, "v1", "customresourcedefinitions")
    else {
        return;
    };
    if let Ok(list) = api.list(&rt, None, &ListOptions::default()).await {
        for crd in list.items {
            react(api, &crd);
        }
    }
}

/// Reacts to a change of a CRD.
pub fn observe(api: &Api, ev: &WatchEvent) {
    if !ev.key.starts_with(KEY_PREFIX) {
        return;
    }
    if ev.event_type == EventType::Deleted {
        let group = text(&ev.object, "/spec/group");
        let plural = text(&ev.object, "/spec/names/plural");
        api.catalog.unregister(group, plural);
        return;
    }
    react(api, &ev.object);
}

fn react(api: &Api, crd: &Value) {
    if object::is_deleting(crd) {
        api.catalog
            .unregister(text(crd, "/spec/group"), text(crd, "/spec/names/plural"));
        start_cleanup(api, crd);
        return;
    }
    let accepted = accepted_status_for(api, crd);
    if crd.get("status") != Some(&accepted) && needs_status(crd, &accepted) {
        let api = api.clone();
        let name = object::name(crd).to_string();
        tokio::spawn(async move { write_status(&api, &name, accepted).await });
        return;
    }
    serve(&api.catalog, crd);
}

/// Whether the computed status differs in substance (ignoring timestamps).
fn needs_status(crd: &Value, accepted: &Value) -> bool {
    let summary = |s: Option<&Value>| -> Vec<(String, String, String)> {
        s.and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .map(|c| {
                        (
                            text(c, "/type").into(),
                            text(c, "/status").into(),
                            text(c, "/reason").into(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let current = crd.get("status");
    summary(current) != summary(Some(accepted))
        || current.and_then(|s| s.get("acceptedNames")) != accepted.get("acceptedNames")
        || current.and_then(|s| s.get("storedVersions")) != accepted.get("storedVersions")
}

fn accepted_status_for(api: &Api, crd: &Value) -> Value {
    let others: Vec<Arc<Value>> = api
        .catalog
        .all()
        .iter()
        .filter(|r| {
            r.group == text(crd, "/spec/group") && r.plural != text(crd, "/spec/names/plural")
        })
        .map(|r| {
            Arc::new(serde_json::json!({"spec": {"group": r.group, "names": {
                "plural": r.plural, "singular": r.singular, "kind": r.kind,
                "listKind": format!("{}List", r.kind), "shortNames": r.short_names}}}))
        })
        .collect();
    let refs: Vec<&Value> = others.iter().map(|a| a.as_ref()).collect();
    let mut status = crate::crd::definition::accepted_status(crd, &refs, &object::now_rfc3339());
    // Stored versions accumulate; they are never dropped by the server.
    let mut stored = strings(crd, "/status/storedVersions");
    for v in strings(&status, "/storedVersions") {
        if !stored.contains(&v) {
            stored.push(v);
        }
    }
    if let Some(m) = status.as_object_mut() {
        m.insert("storedVersions".into(), Value::from(stored));
    }
    status
}

async fn write_status(api: &Api, name: &str, status: Value) {
    let Some(t) = crd_target(api, name) else {
        return;
    };
    let opts = WriteOptions {
        field_manager: "kube-apiserver".into(),
        ..WriteOptions::default()
    };
    let catalog = api.catalog.clone();
    let result = api
        .mutate_status(&t, &opts, move |crd| {
            let mut new = crd.clone();
            if let Some(m) = new.as_object_mut() {
                m.insert("status".into(), status.clone());
            }
            // Served before the write commits, so that a client which sees `Established`
            // finds the resource in discovery at once.
            serve(&catalog, &new);
            Ok(new)
        })
        .await;
    if let Err(e) = result
        && e.code != 404
    {
        tracing::warn!(crd = name, error = %e, "could not update the CRD status");
    }
}

fn start_cleanup(api: &Api, crd: &Value) {
    if !object::finalizers(crd)
        .iter()
        .any(|f| f == CLEANUP_FINALIZER)
    {
        return;
    }
    let name = object::name(crd).to_string();
    // Keyed by server too: several servers can run in one process.
    let slot = format!("{}/{name}", api.store.instance_id());
    let Ok(mut set) = cleaning().lock() else {
        return;
    };
    if !set.insert(slot.clone()) {
        return;
    }
    let api = api.clone();
    let crd = crd.clone();
    tokio::spawn(async move {
        delete_all_instances(&api, &crd).await;
        if let Some(t) = crd_target(&api, &name) {
            let opts = WriteOptions {
                field_manager: "kube-apiserver".into(),
                ..WriteOptions::default()
            };
            let _ = api
                .mutate(&t, &opts, |obj| {
                    let mut new = obj.clone();
                    let kept: Vec<String> = object::finalizers(obj)
                        .into_iter()
                        .filter(|f| f != CLEANUP_FINALIZER)
                        .collect();
                    object::set_finalizers(&mut new, &kept);
                    Ok(new)
                })
                .await;
        }
        if let Ok(mut set) = cleaning().lock() {
            set.remove(&slot);
        }
    });
}

/// Deletes every stored custom resource of a CRD, whatever its version.
async fn delete_all_instances(api: &Api, crd: &Value) {
    let group = text(crd, "/spec/group");
    let plural = text(crd, "/spec/names/plural");
    let kind = text(crd, "/spec/names/kind");
    let namespaced = text(crd, "/spec/scope") != "Cluster";
    // A plain resource type over the CRD's storage, without schema checks.
    let rt = Arc::new(
        ResourceType::new(group, "v1", plural, plural, kind, namespaced)
            .strategy(CustomResourceStrategy),
    );
    let mut delay = Duration::from_millis(10);
    for _ in 0..600 {
        let Ok(list) = api.list(&rt, None, &ListOptions::default()).await else {
            return;
        };
        if list.items.is_empty() {
            return;
        }
        for item in list.items {
            let t = Target {
                rt: rt.clone(),
                namespace: Some(object::namespace(&item).to_string()).filter(|s| !s.is_empty()),
                name: Some(object::name(&item).to_string()),
            };
            if object::is_deleting(&item) {
                continue;
            }
            let opts = DeleteOptions {
                propagation: Some(Propagation::Background),
                ..DeleteOptions::default()
            };
            let _ = api.delete(&t, &opts).await;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}
