//! The Deployment controller, following kube-controller-manager's: one
//! ReplicaSet per pod template (`<deployment>-<pod-template-hash>`, the hash
//! also added to the template's labels and the selector), revisions in the
//! `deployment.kubernetes.io/revision` annotation, rolling updates within
//! `maxSurge`/`maxUnavailable` (25%/25% by default), `Recreate`,
//! proportional scaling during a rollout, pausing, history clean-up and the
//! status `kubectl rollout status` reads, with kube's conditions:
//!
//! - `Available`: `MinimumReplicasAvailable` ("Deployment has minimum
//!   availability.") or `MinimumReplicasUnavailable` ("Deployment does not
//!   have minimum availability.");
//! - `Progressing`: `NewReplicaSetCreated` ("Created new replica set "X""),
//!   `FoundNewReplicaSet` ("Found new replica set "X""), `ReplicaSetUpdated`
//!   ("ReplicaSet "X" is progressing."), `NewReplicaSetAvailable`
//!   ("ReplicaSet "X" has successfully progressed."),
//!   `ProgressDeadlineExceeded` ("ReplicaSet "X" has timed out
//!   progressing."), `DeploymentPaused` / `DeploymentResumed`.
//!
//! Events: `ScalingReplicaSet` ("Scaled up replica set X from 1 to 3").

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::informer::{Informer, Kind};
use super::podutil::{
    self, CONTROLLER_MANAGER, POD_TEMPLATE_HASH, int_at, int_or_percent, rfc3339,
};
use super::recorder::{Recorder, Source};
use super::replicaset::adopt;
use super::writes::{self, Part};
use crate::object;
use crate::registry::{Api, Target};
use crate::status::ApiError;

mod model;
mod replica_sets;
mod rollout;
mod status;

#[allow(unused_imports)]
pub use self::model::*;

/// The controller.
pub struct DeploymentController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
}

impl DeploymentController {
    /// A controller working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Self> {
        Arc::new(DeploymentController {
            api,
            informer,
            recorder,
            source: Source::component("deployment-controller"),
        })
    }

    fn target(&self, kind: Kind, ns: &str, name: &str) -> Option<Target> {
        writes::target(&self.api, kind, ns, name)
    }

    /// Rewrites the object at `t` (not its status) while it has `uid`.
    async fn update(
        &self,
        t: &Target,
        uid: &str,
        change: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        writes::update_same_uid(&self.api, t, Part::Object, CONTROLLER_MANAGER, uid, change).await
    }

    /// Reconciles one Deployment.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(obj) = self.informer.get_key(&key) else {
            return Ok(None);
        };
        let mut d = Dep::parse(obj);
        let Some(selector) = podutil::selector_of(&d.obj) else {
            return Ok(None);
        };
        if selector.is_everything() {
            self.recorder.warning(
                &d.obj,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
                &self.source,
            );
            if d.status_int("observedGeneration") < d.generation {
                let mut s = d.status.clone();
                s["observedGeneration"] = json!(d.generation);
                self.write_status(&mut d, s).await?;
            }
            return Ok(None);
        }
        let rs_list = self.replica_sets(&d, &selector).await?;
        if object::is_deleting(&d.obj) {
            let (new, old) = self.all_replica_sets(&mut d, rs_list, false).await?;
            self.sync_status(&mut d, &old, new.as_ref()).await?;
            return Ok(None);
        }
        self.check_paused_conditions(&mut d).await?;
        if d.paused {
            return self.sync_scale(&mut d, rs_list).await;
        }
        let scaling = self.is_scaling_event(&mut d, rs_list).await?;
        self.informer.catch_up().await;
        let rs_list = self.informer.controlled_by(Kind::ReplicaSet, &d.uid);
        if scaling {
            return self.sync_scale(&mut d, rs_list).await;
        }
        if d.recreate {
            self.rollout_recreate(&mut d, rs_list).await
        } else {
            self.rollout_rolling(&mut d, rs_list).await
        }
    }

    /// The ReplicaSets the Deployment controls, adopting matching orphans.
    async fn replica_sets(
        &self,
        d: &Dep,
        selector: &crate::selectors::LabelSelector,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        if !object::is_deleting(&d.obj) {
            let owner = podutil::new_controller_ref(&d.obj, "apps/v1", "Deployment");
            let mut adopted = false;
            for rs in self.informer.orphans(Kind::ReplicaSet, &d.ns) {
                if !object::is_deleting(&rs) && podutil::selects(selector, &rs) {
                    adopted |= adopt(&self.api, Kind::ReplicaSet, &rs, owner.clone())
                        .await?
                        .is_some();
                }
            }
            if adopted {
                self.informer.catch_up().await;
            }
        }
        Ok(self.informer.controlled_by(Kind::ReplicaSet, &d.uid))
    }

    async fn write_status(&self, d: &mut Dep, status: Value) -> Result<(), ApiError> {
        let Some(t) = self.target(Kind::Deployment, &d.ns, &d.name) else {
            return Ok(());
        };
        d.obj = writes::replace_status(&self.api, &t, &d.uid, &status).await?;
        d.status = status;
        Ok(())
    }

    /// Sets one condition of the Deployment's status and writes the status.
    async fn write_condition(&self, d: &mut Dep, cond: Value) -> Result<(), ApiError> {
        let mut s = d.status.clone();
        set_condition(&mut s, cond);
        self.write_status(d, s).await
    }

    /// Sets the Deployment's revision annotation (`SetDeploymentRevision`).
    async fn set_revision(&self, d: &mut Dep, rev: &str) -> Result<(), ApiError> {
        if annotation(&d.obj, REVISION) == Some(rev) {
            return Ok(());
        }
        let Some(t) = self.target(Kind::Deployment, &d.ns, &d.name) else {
            return Ok(());
        };
        d.obj = self
            .update(&t, &d.uid, |cur| {
                let mut new = cur.clone();
                set_annotations(&mut new, &[(REVISION, rev)]);
                Ok(new)
            })
            .await?;
        Ok(())
    }
}
