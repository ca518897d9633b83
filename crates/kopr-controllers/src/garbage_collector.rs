//! The garbage collector: deletes objects whose owners are gone (background
//! propagation), deletes dependents before their owner (foreground, honouring
//! `blockOwnerDeletion`), and releases dependents of orphaning owners.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::object;
use crate::registry::{Api, DeleteOptions, ListOptions, Propagation, Target, WriteOptions};
use crate::storage::{EventType, WatchEvent};

const FOREGROUND: &str = "foregroundDeletion";
const ORPHAN: &str = "orphan";

/// The garbage collector's view of ownership.
pub struct GarbageCollector {
    api: Api,
    /// Live objects: uid → storage key.
    live: HashMap<String, String>,
    /// Owner uid → keys of objects referring to it.
    dependents: HashMap<String, HashSet<String>>,
    /// Key → owner uids it refers to.
    owners_of: HashMap<String, Vec<String>>,
}

fn owner_uids(obj: &Value) -> Vec<String> {
    object::owner_references(obj)
        .iter()
        .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn gc_options() -> WriteOptions {
    WriteOptions {
        field_manager: "generic-garbage-collector".into(),
        ..WriteOptions::default()
    }
}

impl GarbageCollector {
    /// A collector with an empty view; call [`GarbageCollector::resync`].
    pub fn new(api: Api) -> GarbageCollector {
        GarbageCollector {
            api,
            live: HashMap::new(),
            dependents: HashMap::new(),
            owners_of: HashMap::new(),
        }
    }

    /// Rebuilds the view from storage and processes what is pending.
    pub async fn resync(&mut self) {
        self.live.clear();
        self.dependents.clear();
        self.owners_of.clear();
        let mut seen = HashSet::new();
        let mut pending = Vec::new();
        for rt in self.api.catalog.all() {
            if !seen.insert(rt.storage.clone()) {
                continue;
            }
            let Ok(list) = self.api.list(&rt, None, &ListOptions::default()).await else {
                continue;
            };
            for item in list.items {
                let key = rt.key(Some(object::namespace(&item)), object::name(&item));
                self.index(&key, &item);
                if object::is_deleting(&item) {
                    pending.push(item);
                }
            }
        }
        // Owners that vanished while we were not looking.
        let dangling: Vec<String> = self
            .dependents
            .keys()
            .filter(|u| !self.live.contains_key(*u))
            .cloned()
            .collect();
        for uid in dangling {
            self.owner_gone(&uid).await;
        }
        for item in pending {
            self.owner_deleting(&item).await;
        }
    }

    fn index(&mut self, key: &str, obj: &Value) {
        self.unindex(key);
        let uid = object::uid(obj);
        // An update finds its uid there already (a uid never changes): no new strings.
        if !uid.is_empty() && self.live.get(uid).is_none_or(|k| k != key) {
            self.live.insert(uid.to_string(), key.to_string());
        }
        let owners = owner_uids(obj);
        for o in &owners {
            self.dependents
                .entry(o.clone())
                .or_default()
                .insert(key.to_string());
        }
        // Most objects have no owner: nothing to keep for them.
        if !owners.is_empty() {
            self.owners_of.insert(key.to_string(), owners);
        }
    }

    fn unindex(&mut self, key: &str) {
        if let Some(owners) = self.owners_of.remove(key) {
            for o in owners {
                if let Some(set) = self.dependents.get_mut(&o) {
                    set.remove(key);
                    if set.is_empty() {
                        self.dependents.remove(&o);
                    }
                }
            }
        }
    }

    /// Processes one committed change.
    pub async fn observe(&mut self, ev: &WatchEvent) {
        match ev.event_type {
            EventType::Deleted => {
                let uid = object::uid(&ev.object).to_string();
                let owners = self.owners_of.get(&ev.key).cloned().unwrap_or_default();
                self.unindex(&ev.key);
                self.live.remove(&uid);
                if self.dependents.contains_key(&uid) {
                    self.owner_gone(&uid).await;
                }
                // A dependent going away may unblock a foreground deletion.
                for o in owners {
                    self.recheck_owner(&o).await;
                }
            }
            _ => {
                self.index(&ev.key, &ev.object);
                // Owners that are not there (never were, or went before this object was
                // written): like kube's collector, delete the object, or only drop the dangling
                // references when another owner is alive.
                let dangling: Vec<String> = owner_uids(&ev.object)
                    .into_iter()
                    .filter(|uid| !self.live.contains_key(uid))
                    .collect();
                for uid in dangling {
                    self.owner_gone(&uid).await;
                }
                if object::is_deleting(&ev.object) {
                    self.owner_deleting(&ev.object).await;
                }
            }
        }
    }

    async fn recheck_owner(&mut self, owner_uid: &str) {
        let Some(key) = self.live.get(owner_uid).cloned() else {
            return;
        };
        let Some(t) = super::target_of_key(&self.api, &key) else {
            return;
        };
        if let Ok(owner) = self.api.get(&t).await
            && object::is_deleting(&owner)
        {
            self.owner_deleting(&owner).await;
        }
    }

    /// An owner was deleted: delete dependents that have no other live owner,
    /// and drop the dangling reference from the others.
    async fn owner_gone(&mut self, uid: &str) {
        let keys: Vec<String> = self
            .dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            let Some(t) = super::target_of_key(&self.api, &key) else {
                continue;
            };
            let Ok(dep) = self.api.get(&t).await else {
                continue;
            };
            let others_alive = owner_uids(&dep)
                .iter()
                .any(|o| o != uid && self.live.contains_key(o));
            if others_alive {
                self.remove_owner_ref(&t, uid).await;
            } else if !object::is_deleting(&dep) {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..DeleteOptions::default()
                };
                if let Err(e) = self.api.delete(&t, &opts).await
                    && e.code != 404
                {
                    tracing::debug!(key, error = %e, "garbage collection delete failed");
                }
            }
        }
    }

    /// An owner is being deleted with the foreground or orphan finalizer.
    async fn owner_deleting(&mut self, owner: &Value) {
        let finalizers = object::finalizers(owner);
        let uid = object::uid(owner).to_string();
        let Some(owner_key) = self.live.get(&uid).cloned() else {
            return;
        };
        let Some(owner_t) = super::target_of_key(&self.api, &owner_key) else {
            return;
        };
        let keys: Vec<String> = self
            .dependents
            .get(&uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        if finalizers.iter().any(|f| f == ORPHAN) {
            for key in &keys {
                if let Some(t) = super::target_of_key(&self.api, key) {
                    self.remove_owner_ref(&t, &uid).await;
                }
            }
            self.remove_finalizer(&owner_t, ORPHAN).await;
        } else if finalizers.iter().any(|f| f == FOREGROUND) {
            let mut blocking = 0;
            for key in &keys {
                let Some(t) = super::target_of_key(&self.api, key) else {
                    continue;
                };
                let Ok(dep) = self.api.get(&t).await else {
                    continue;
                };
                let blocks = object::owner_references(&dep).iter().any(|r| {
                    r.get("uid").and_then(Value::as_str) == Some(uid.as_str())
                        && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
                });
                if blocks {
                    blocking += 1;
                }
                if !object::is_deleting(&dep) {
                    let opts = DeleteOptions {
                        propagation: Some(Propagation::Foreground),
                        ..DeleteOptions::default()
                    };
                    let _ = self.api.delete(&t, &opts).await;
                }
            }
            if blocking == 0 {
                self.remove_finalizer(&owner_t, FOREGROUND).await;
            }
        }
    }

    async fn remove_owner_ref(&self, t: &Target, owner_uid: &str) {
        let owner_uid = owner_uid.to_string();
        let result = self
            .api
            .mutate(t, &gc_options(), move |obj| {
                let mut new = obj.clone();
                if let Some(refs) = object::meta_mut(&mut new)
                    .and_then(|m| m.get_mut("ownerReferences"))
                    .and_then(Value::as_array_mut)
                {
                    refs.retain(|r| {
                        r.get("uid").and_then(Value::as_str) != Some(owner_uid.as_str())
                    });
                    if refs.is_empty()
                        && let Some(m) = object::meta_mut(&mut new)
                    {
                        m.remove("ownerReferences");
                    }
                }
                Ok(new)
            })
            .await;
        if let Err(e) = result
            && e.code != 404
        {
            tracing::debug!(error = %e, "removing an owner reference failed");
        }
    }

    async fn remove_finalizer(&self, t: &Target, finalizer: &'static str) {
        let result = self
            .api
            .mutate(t, &gc_options(), move |obj| {
                Ok(super::podutil::without_finalizer(obj, finalizer))
            })
            .await;
        if let Err(e) = result
            && e.code != 404
        {
            tracing::debug!(error = %e, "removing a finalizer failed");
        }
    }
}
