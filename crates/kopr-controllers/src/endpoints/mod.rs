//! The endpoints of Services: kube-controller-manager's endpoints
//! controller ([`endpoints_controller`]) and endpointslice controller
//! ([`slice_controller`], planning with [`slice_reconciler`]), and the
//! Endpoints and EndpointSlice of the `kubernetes` Service that the API
//! server writes for itself ([`apiserver`]). This module turns cache
//! changes into the Services to sync, as the controllers' informer event
//! handlers do: Service changes; pod changes that can move endpoints
//! (labels, readiness, IPs, deletion); deleted Endpoints; managed slices
//! changed by someone else.

pub mod apiserver;
mod endpoints_controller;
mod pods;
mod slice_controller;
mod slice_reconciler;
mod subsets;
mod trigger;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

use super::informer::{Change, Informer, Kind};
use super::workqueue::WorkQueue;
use crate::object;

pub use endpoints_controller::EndpointsController;
pub use slice_controller::EndpointSliceController;

/// How long after a managed slice changed its Service is synced
/// (`endpointSliceChangeMinSyncDelay`).
const SLICE_CHANGE_DELAY: Duration = Duration::from_secs(1);

/// The annotation of leader-election records kept in Endpoints, which
/// have no Service and must stay.
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

/// The slice writes the endpointslice controller expects to see: the
/// generation it wrote, or its own deletion (kube's EndpointSliceTracker),
/// so that only changes made by others trigger a sync.
#[derive(Default)]
pub struct SliceTracker {
    expected: Mutex<HashMap<String, Option<i64>>>,
}

impl SliceTracker {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Option<i64>>> {
        match self.expected.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Records a write of the slice at `key` that left it at `generation`.
    pub fn written(&self, key: &str, generation: i64) {
        self.lock().insert(key.to_string(), Some(generation));
    }

    /// Records that the controller is deleting the slice at `key`.
    pub fn deleting(&self, key: &str) {
        self.lock().insert(key.to_string(), None);
    }

    /// Forgets the slice at `key`.
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Whether a change of a managed slice was made by someone else.
    fn unexpected(&self, key: &str, new: Option<&Value>) -> bool {
        let mut expected = self.lock();
        match new {
            None => !matches!(expected.remove(key), Some(None)),
            Some(slice) => match expected.get(key) {
                Some(Some(generation)) => object::generation(slice) > *generation,
                _ => true,
            },
        }
    }
}

/// The work queues of the two controllers and what feeds them.
pub struct Routes {
    informer: Arc<Informer>,
    /// Service keys for the endpoints controller.
    pub endpoints: Arc<WorkQueue>,
    /// Service keys for the endpointslice controller.
    pub slices: Arc<WorkQueue>,
    /// The endpointslice controller's own writes.
    pub tracker: Arc<SliceTracker>,
}

impl Routes {
    /// Routes over the cache into the two queues.
    pub fn new(informer: Arc<Informer>, endpoints: Arc<WorkQueue>, slices: Arc<WorkQueue>) -> Self {
        Routes {
            informer,
            endpoints,
            slices,
            tracker: Arc::new(SliceTracker::default()),
        }
    }

    fn both(&self, key: &str) {
        self.endpoints.add(key);
        self.slices.add(key);
    }

    /// Queues the Services a cache change concerns.
    pub fn route(&self, ch: &Change) {
        match ch.kind {
            Kind::Service => self.both(&ch.key),
            Kind::Pod => {
                for key in
                    pods::services_to_update(&self.informer, ch.old.as_deref(), ch.new.as_deref())
                {
                    self.both(&key);
                }
            }
            Kind::Endpoints => {
                if let (Some(old), None) = (ch.old.as_deref(), &ch.new) {
                    self.endpoints
                        .add(Kind::Service.key(object::namespace(old), object::name(old)));
                }
            }
            Kind::EndpointSlice => self.route_slice(ch),
            _ => {}
        }
    }

    fn route_slice(&self, ch: &Change) {
        let later = |key: Option<String>| {
            if let Some(k) = key {
                self.slices.add_after(k, SLICE_CHANGE_DELAY);
            }
        };
        let service_key = slice_controller::service_key;
        let managed = slice_controller::managed;
        match (ch.old.as_deref(), ch.new.as_deref()) {
            (Some(old), Some(new)) if service_key(old) != service_key(new) => {
                later(service_key(old));
                later(service_key(new));
            }
            (old, Some(new)) => {
                let moved = old.is_some_and(|o| managed(o) != managed(new));
                if moved || (managed(new) && self.tracker.unexpected(&ch.key, Some(new))) {
                    later(service_key(new));
                }
            }
            (Some(old), None) => {
                if managed(old) && self.tracker.unexpected(&ch.key, None) {
                    later(service_key(old));
                }
            }
            (None, None) => {}
        }
    }

    /// Queues the Service of every Endpoints object once, so that Endpoints
    /// left behind by Services deleted while the controller was not running
    /// are deleted (`checkLeftoverEndpoints`).
    pub fn leftovers(&self) {
        for ep in self.informer.list(Kind::Endpoints, None) {
            let leader = object::meta(&ep)
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get(LEADER_ANNOTATION))
                .is_some();
            if !leader {
                self.endpoints
                    .add(Kind::Service.key(object::namespace(&ep), object::name(&ep)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_changes_by_others_are_unexpected() {
        let t = SliceTracker::default();
        let at = |g: i64| json!({"metadata": {"generation": g}});
        assert!(t.unexpected("k", Some(&at(1))));
        t.written("k", 2);
        assert!(!t.unexpected("k", Some(&at(2))));
        assert!(t.unexpected("k", Some(&at(3))));
        t.deleting("k");
        assert!(!t.unexpected("k", None));
        assert!(t.unexpected("k", None));
    }
}
