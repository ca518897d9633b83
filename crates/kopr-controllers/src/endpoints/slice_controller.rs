//! kube-controller-manager's endpointslice controller: for every Service
//! with a selector (not ExternalName) it keeps the EndpointSlices labelled
//! `kubernetes.io/service-name: <service>` and
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`
//! as [`super::slice_reconciler`] plans them, writing creates, updates and
//! deletes (a create whose slice would otherwise be deleted becomes an
//! update of it), each created or updated slice with the
//! `endpoints.kubernetes.io/last-change-trigger-time` annotation. Slices
//! of a deleted Service go with it (they are owned by it). Event:
//! `FailedToUpdateEndpointSlices`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::SliceTracker;
use super::endpoints_controller::{split_key, terminating_namespace};
use super::pods::{self, TRIGGER_TIME};
use super::slice_reconciler::{self, CONTROLLER_NAME, MANAGED_BY, Plan, SERVICE_NAME};
use super::trigger::{self, TriggerTimes};
use crate::informer::{Informer, Kind};
use crate::object;
use crate::podutil::{self, CONTROLLER_MANAGER, str_at};
use crate::recorder::{Recorder, Source};
use crate::registry::Api;
use crate::status::ApiError;
use crate::writes::{self, Part};

/// Why writing a Service's slices failed; the messages are kube's (the Service as
/// `namespace/name`, the slice by name).
#[derive(Debug, thiserror::Error)]
enum SliceWriteError {
    #[error("failed to create EndpointSlice for Service {service}: {}", .error.message)]
    Create { service: String, error: ApiError },
    #[error("failed to update {slice} EndpointSlice for Service {service}: {}", .error.message)]
    Update {
        slice: String,
        service: String,
        error: ApiError,
    },
    #[error("failed to delete {slice} EndpointSlice for Service {service}: {}", .error.message)]
    Delete {
        slice: String,
        service: String,
        error: ApiError,
    },
}

/// The controller.
pub struct EndpointSliceController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
    triggers: TriggerTimes,
    tracker: Arc<SliceTracker>,
}

fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    object::labels(obj)?.get(key)?.as_str()
}

/// Whether a slice is managed by this controller.
pub fn managed(slice: &Value) -> bool {
    label(slice, MANAGED_BY) == Some(CONTROLLER_NAME)
}

/// The storage key of the Service a slice belongs to.
pub fn service_key(slice: &Value) -> Option<String> {
    let name = label(slice, SERVICE_NAME).filter(|n| !n.is_empty())?;
    Some(Kind::Service.key(object::namespace(slice), name))
}

fn set_meta(obj: &mut Value, field: &str, value: Option<&Value>) {
    if let Some(meta) = object::meta_mut(obj) {
        match value {
            Some(v) if v.as_object().is_none_or(|m| !m.is_empty()) => {
                meta.insert(field.into(), v.clone());
            }
            _ => {
                meta.remove(field);
            }
        }
    }
}

/// Sets or clears the trigger time annotation (`addTriggerTimeAnnotation`).
fn annotate(slice: &mut Value, triggered: Option<jiff::Timestamp>) {
    let mut annotations: Map<String, Value> = object::meta(slice)
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    match triggered {
        Some(t) => annotations.insert(TRIGGER_TIME.into(), json!(trigger::format(t))),
        None => annotations.remove(TRIGGER_TIME),
    };
    set_meta(slice, "annotations", Some(&Value::Object(annotations)));
}

/// The stored slice `cur` with the planned content of `want`.
fn apply(cur: &Value, want: &Value) -> Value {
    let mut new = cur.clone();
    for field in ["addressType", "endpoints", "ports"] {
        new[field] = want.get(field).cloned().unwrap_or_else(|| json!([]));
    }
    let meta = |f: &str| object::meta(want).and_then(|m| m.get(f));
    for field in ["labels", "annotations", "ownerReferences"] {
        set_meta(&mut new, field, meta(field));
    }
    new
}

impl EndpointSliceController {
    /// A controller working from the cache; `tracker` learns its writes.
    pub fn new(
        api: Api,
        informer: Arc<Informer>,
        recorder: Recorder,
        tracker: Arc<SliceTracker>,
    ) -> Arc<Self> {
        Arc::new(EndpointSliceController {
            api,
            informer,
            recorder,
            source: Source::component("endpoint-slice-controller"),
            triggers: TriggerTimes::default(),
            tracker,
        })
    }

    /// Reconciles the slices of one Service (keyed by its storage key).
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some((ns, name)) = split_key(&key) else {
            return Ok(None);
        };
        let Some(svc) = self.informer.get_key(&key) else {
            self.triggers.forget(ns, name);
            return Ok(None);
        };
        if !pods::managed(&svc) {
            return Ok(None);
        }
        let selected = pods::selected_pods(&self.informer, &svc).unwrap_or_default();
        let existing: Vec<Arc<Value>> = self
            .informer
            .list(Kind::EndpointSlice, Some(ns))
            .into_iter()
            .filter(|s| {
                managed(s) && label(s, SERVICE_NAME) == Some(name) && !object::is_deleting(s)
            })
            .collect();
        let triggered = self.triggers.compute(&svc, &selected);
        let plans = slice_reconciler::plan(&svc, &selected, &existing, |node| {
            self.informer.get(Kind::Node, "", node)
        });
        let mut errors = Vec::new();
        for mut plan in plans {
            errors.append(&mut plan.errors);
            if let Err(e) = self.finalize(&svc, plan, triggered).await {
                errors.push(e.to_string());
            }
        }
        if errors.is_empty() {
            return Ok(None);
        }
        let message = match errors.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        self.recorder.warning(
            &svc,
            "FailedToUpdateEndpointSlices",
            format!("Error updating Endpoint Slices for Service {ns}/{name}: {message}"),
            &self.source,
        );
        Err(ApiError::internal(message))
    }

    /// Writes one plan (`finalize`); stops at the first write that fails.
    async fn finalize(
        &self,
        svc: &Value,
        mut plan: Plan,
        triggered: Option<jiff::Timestamp>,
    ) -> Result<(), SliceWriteError> {
        let ns = object::namespace(svc);
        let name = object::name(svc);
        let service = || format!("{ns}/{name}");
        // Creates become updates of slices that would be deleted.
        let mut i = 0;
        while i < plan.delete.len() {
            let Some(last) = plan.create.last() else {
                break;
            };
            let doomed = &plan.delete[i];
            if str_at(doomed, "/addressType") == str_at(last, "/addressType")
                && slice_reconciler::owned_by(doomed, svc)
            {
                let doomed = plan.delete.remove(i);
                if let Some(mut slice) = plan.create.pop() {
                    if let Some(meta) = object::meta_mut(&mut slice) {
                        meta.remove("generateName");
                        meta.insert("name".into(), json!(object::name(&doomed)));
                        meta.insert("uid".into(), json!(object::uid(&doomed)));
                    }
                    plan.update.push(slice);
                }
            } else {
                i += 1;
            }
        }
        // No new slices for a Service being deleted (they would race the
        // garbage collector).
        if !object::is_deleting(svc)
            && let Some(rt) = self
                .api
                .catalog
                .get("discovery.k8s.io", "v1", "endpointslices")
        {
            let opts = podutil::writer(CONTROLLER_MANAGER);
            for mut slice in plan.create {
                annotate(&mut slice, triggered);
                match self.api.create(&rt, Some(ns), slice, &opts).await {
                    Ok(w) => self.track(&w.object),
                    Err(e) if e.code == 403 && terminating_namespace(&e) => return Ok(()),
                    Err(error) => {
                        return Err(SliceWriteError::Create {
                            service: service(),
                            error,
                        });
                    }
                }
            }
        }
        for mut slice in plan.update {
            annotate(&mut slice, triggered);
            let failed = |error: ApiError| SliceWriteError::Update {
                slice: object::name(&slice).to_string(),
                service: service(),
                error,
            };
            let Some(t) = writes::target_of(&self.api, Kind::EndpointSlice, &slice) else {
                continue;
            };
            let written = writes::update_same_uid(
                &self.api,
                &t,
                Part::Object,
                CONTROLLER_MANAGER,
                object::uid(&slice),
                |cur| Ok(apply(cur, &slice)),
            )
            .await;
            match writes::unless_gone(written) {
                Ok(Some(w)) => self.track(&w),
                Ok(None) => {}
                Err(e) => return Err(failed(e)),
            }
        }
        for slice in plan.delete {
            let Some(t) = writes::target_of(&self.api, Kind::EndpointSlice, &slice) else {
                continue;
            };
            let key = Kind::EndpointSlice.key(ns, object::name(&slice));
            self.tracker.deleting(&key);
            if let Err(error) =
                writes::delete_same_uid(&self.api, &t, object::uid(&slice), None).await
            {
                self.tracker.forget(&key);
                return Err(SliceWriteError::Delete {
                    slice: object::name(&slice).to_string(),
                    service: service(),
                    error,
                });
            }
        }
        Ok(())
    }

    fn track(&self, written: &Value) {
        let key = Kind::EndpointSlice.key(object::namespace(written), object::name(written));
        self.tracker.written(&key, object::generation(written));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_content_replaces_the_stored_one() {
        let cur = json!({"metadata": {"name": "s", "uid": "u", "resourceVersion": "5",
            "labels": {"old": "x"}, "annotations": {"a": "b"}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]});
        let want = json!({"metadata": {"labels": {"new": "y"}},
            "addressType": "IPv4", "endpoints": [], "ports": []});
        let new = apply(&cur, &want);
        assert_eq!(new["metadata"]["uid"], "u");
        assert_eq!(new["metadata"]["labels"], json!({"new": "y"}));
        assert!(new["metadata"].get("annotations").is_none());
        assert_eq!(new["endpoints"], json!([]));
    }

    #[test]
    fn trigger_annotations_are_set_and_cleared() {
        let mut s = json!({"metadata": {"annotations": {TRIGGER_TIME: "old"}}});
        annotate(&mut s, None);
        assert!(s["metadata"].get("annotations").is_none());
        let t: jiff::Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        annotate(&mut s, Some(t));
        assert_eq!(
            s["metadata"]["annotations"][TRIGGER_TIME],
            "2024-05-01T10:00:00Z"
        );
    }
}
