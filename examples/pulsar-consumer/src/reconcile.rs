//! Reconciling one PulsarConsumer: its Deployment is made to match the spec (created, or put
//! back where it drifted), then its status is made to match what the Deployment reports.
//!
//! Two things start a reconciliation: a change of the PulsarConsumer (kopr's create, update and
//! resume handlers) and any event of a Deployment a PulsarConsumer controls (an `on_event`
//! handler, which is how the operator notices `kubectl scale`, edits, deletions and pods
//! becoming ready). Both call [`Reconciler::reconcile`] with the consumer's name. The
//! reconciliations of one consumer run one at a time, and each reads the current PulsarConsumer
//! and Deployment from the server, so whichever runs last sees the newest state: an older view
//! never overwrites a newer one.
//!
//! Nothing is written when nothing differs, so the operator's own writes, which come back as
//! events, end in a reconciliation that changes nothing: there is no update loop.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kopr::HandlerError;
use kopr::adopt::AdoptError;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::deployment::{self, Readiness};
use crate::{PulsarConsumer, PulsarConsumerStatus, READY};

/// The field manager of the operator's writes.
pub const FIELD_MANAGER: &str = "pulsar-consumer";

/// How long to wait before trying again when the Deployment's name is taken.
pub const NAME_TAKEN_RETRY: Duration = Duration::from_secs(30);

/// Why a PulsarConsumer could not be reconciled.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The API server refused the Deployment as invalid (for example a label value too long):
    /// retrying the same spec cannot help.
    #[error("the API server refused the Deployment {name}: {message}")]
    Rejected {
        /// The Deployment's name.
        name: String,
        /// The server's explanation.
        message: String,
    },
    /// A Deployment of that name exists and some other owner (or none) controls it.
    #[error("the Deployment {0} exists and is not controlled by this PulsarConsumer")]
    NameTaken(String),
    /// The Deployment could not be made a child of the PulsarConsumer.
    #[error(transparent)]
    Adopt(#[from] AdoptError),
    /// The API server could not be reached or failed.
    #[error("kubernetes API: {0}")]
    Api(#[from] kube::Error),
    /// An object could not be turned into JSON.
    #[error("serialization: {0}")]
    Json(#[from] serde_json::Error),
}

impl ReconcileError {
    /// The reason of the `Ready` condition and of the Warning event reporting this error.
    pub fn reason(&self) -> &'static str {
        match self {
            ReconcileError::Rejected { .. } | ReconcileError::Adopt(_) => "DeploymentRejected",
            ReconcileError::NameTaken(_) => "DeploymentNameTaken",
            ReconcileError::Api(_) | ReconcileError::Json(_) => "ReconcileFailed",
        }
    }

    /// What kopr does about it: invalid Deployments fail for good (until the spec changes), a
    /// taken name is retried after [`NAME_TAKEN_RETRY`], anything else after the handler's
    /// backoff.
    pub fn into_handler_error(self) -> HandlerError {
        match self {
            ReconcileError::Rejected { .. } | ReconcileError::Adopt(_) => {
                HandlerError::permanent(self.to_string())
            }
            ReconcileError::NameTaken(_) => {
                HandlerError::temporary(self.to_string(), NAME_TAKEN_RETRY)
            }
            other => HandlerError::message(other.to_string()),
        }
    }
}

/// Turns a refusal of the Deployment (400 Bad Request, 422 Invalid) into
/// [`ReconcileError::Rejected`].
fn refused(name: &str, error: kube::Error) -> ReconcileError {
    match error {
        kube::Error::Api(status) if matches!(status.code, 400 | 422) => ReconcileError::Rejected {
            name: name.to_owned(),
            message: status.message,
        },
        other => ReconcileError::Api(other),
    }
}

/// What a reconciliation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The PulsarConsumer is gone or going (or the name now belongs to another one): nothing
    /// to do; the garbage collector removes the Deployment.
    Gone,
    /// The Deployment was missing and has been created.
    Created,
    /// The Deployment differed from the spec at these paths (the spec changed, or someone
    /// edited the Deployment) and has been updated.
    Updated(Vec<String>),
    /// The Deployment matched the spec; nothing was written to it.
    InSync,
}

/// One lock per key, held while a task runs; a key nobody holds or waits for takes no memory.
#[derive(Debug, Default)]
struct Locks {
    held: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Locks {
    /// Runs `work` while holding the lock of `key`.
    async fn exclusive<T>(&self, key: &str, work: impl Future<Output = T>) -> T {
        let lock = {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            held.entry(key.to_owned()).or_default().clone()
        };
        let result = {
            let _guard = lock.lock().await;
            work.await
        };
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        // Clones are only taken under `held`: two references (the map's and ours) mean that no
        // other task holds or waits for this lock.
        if Arc::strong_count(&lock) == 2 {
            held.remove(key);
        }
        result
    }
}

/// Reconciles PulsarConsumers, one at a time per consumer.
#[derive(Debug)]
pub struct Reconciler {
    image: String,
    locks: Locks,
}

impl Reconciler {
    /// A reconciler whose Deployments run the consumer application `image`.
    pub fn new(image: impl Into<String>) -> Self {
        Reconciler {
            image: image.into(),
            locks: Locks::default(),
        }
    }

    /// Reconciles the PulsarConsumer `namespace/name`, if it still exists, is not being deleted,
    /// and (when `uid` is given) is that object rather than a newer one of the same name.
    ///
    /// A failure is also reported in the consumer's status (a `Ready` condition that is `False`
    /// with the error as its message) before it is returned.
    pub async fn reconcile(
        &self,
        client: &Client,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<Outcome, ReconcileError> {
        let key = format!("{namespace}/{name}");
        self.locks
            .exclusive(&key, self.reconcile_now(client, namespace, name, uid))
            .await
    }

    async fn reconcile_now(
        &self,
        client: &Client,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<Outcome, ReconcileError> {
        let consumers: Api<PulsarConsumer> = Api::namespaced(client.clone(), namespace);
        let Some(consumer) = consumers.get_opt(name).await? else {
            return Ok(Outcome::Gone);
        };
        let other_object = uid.is_some_and(|uid| consumer.metadata.uid.as_deref() != Some(uid));
        if consumer.metadata.deletion_timestamp.is_some() || other_object {
            return Ok(Outcome::Gone);
        }
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        let (outcome, status) = match self.converge(&deployments, &consumer).await {
            Ok((outcome, deployment)) => (Ok(outcome), observed(&consumer, Ok(&deployment))),
            Err(error) => {
                let status = observed(&consumer, Err(&error));
                (Err(error), status)
            }
        };
        let written = write_status(&consumers, &consumer, status).await;
        match (outcome, written) {
            (Ok(outcome), written) => written.map(|()| outcome).map_err(ReconcileError::from),
            (Err(error), Ok(())) => Err(error),
            (Err(error), Err(unwritten)) => {
                tracing::warn!(
                    "PulsarConsumer {namespace}/{name}: cannot report the failure in status: {unwritten}"
                );
                Err(error)
            }
        }
    }

    /// Makes the Deployment match the consumer's spec; returns what was done and the
    /// Deployment as it now is.
    async fn converge(
        &self,
        deployments: &Api<Deployment>,
        consumer: &PulsarConsumer,
    ) -> Result<(Outcome, Deployment), ReconcileError> {
        let key = format!(
            "{}/{}",
            consumer.namespace().unwrap_or_default(),
            consumer.name_any()
        );
        let name = consumer.name_any();
        let desired = deployment::desired(consumer, &self.image)?;
        let Some(actual) = deployments.get_opt(&name).await? else {
            let params = PostParams {
                field_manager: Some(FIELD_MANAGER.to_owned()),
                ..PostParams::default()
            };
            let created = deployments
                .create(&params, &desired)
                .await
                .map_err(|e| refused(&name, e))?;
            let message = format!(
                "created Deployment {name} ({} replicas consuming {})",
                consumer.spec.replicas, consumer.spec.topic
            );
            tracing::info!("PulsarConsumer {key}: {message}");
            kopr::info(
                &serde_json::to_value(consumer)?,
                "DeploymentCreated",
                &message,
            );
            return Ok((Outcome::Created, created));
        };
        let ours = deployment::controlling_consumer(&actual)
            .is_some_and(|r| Some(r.uid.as_str()) == consumer.metadata.uid.as_deref());
        if !ours {
            return Err(ReconcileError::NameTaken(name));
        }
        let wanted = serde_json::to_value(&desired.spec)?;
        let drifted =
            crate::drift::differences("spec", &wanted, &serde_json::to_value(&actual.spec)?);
        if drifted.is_empty() {
            return Ok((Outcome::InSync, actual));
        }
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let updated = deployments
            .patch(&name, &params, &Patch::Merge(json!({ "spec": wanted })))
            .await
            .map_err(|e| refused(&name, e))?;
        let message = format!(
            "Deployment {name} differed from the spec at {}; updated",
            drifted.join(", ")
        );
        tracing::info!("PulsarConsumer {key}: {message}");
        kopr::info(
            &serde_json::to_value(consumer)?,
            "DeploymentUpdated",
            &message,
        );
        Ok((Outcome::Updated(drifted), updated))
    }
}

/// The status `consumer` should have: its spec mirrored, its generation observed, the ready
/// consumers and a `Ready` condition from the Deployment (or from the failure to reconcile it).
pub fn observed(
    consumer: &PulsarConsumer,
    deployment: Result<&Deployment, &ReconcileError>,
) -> PulsarConsumerStatus {
    let spec = &consumer.spec;
    let previous = consumer.status.clone().unwrap_or_default();
    let wanted = spec.replicas;
    let (ready_replicas, ready, reason, message) = match deployment {
        Ok(deployment) => {
            let readiness = Readiness::of(deployment, wanted);
            let (ready, reason, message) = if readiness.is_ready(wanted) {
                (
                    true,
                    "ConsumersReady",
                    format!("{wanted}/{wanted} consumers ready"),
                )
            } else if readiness.settled {
                (
                    false,
                    "ConsumersNotReady",
                    format!("{}/{wanted} consumers ready", readiness.ready),
                )
            } else {
                (
                    false,
                    "RollingOut",
                    format!(
                        "rolling out: {}/{wanted} consumers updated, {} ready",
                        readiness.updated, readiness.ready
                    ),
                )
            };
            (readiness.ready, ready, reason, message)
        }
        Err(error) => (
            previous.ready_replicas.unwrap_or(0),
            false,
            error.reason(),
            error.to_string(),
        ),
    };
    let status = if ready { "True" } else { "False" };
    let since = previous
        .conditions
        .iter()
        .find(|c| c.type_ == READY && c.status == status)
        .map_or_else(
            || Time(k8s_openapi::jiff::Timestamp::now()),
            |c| c.last_transition_time.clone(),
        );
    PulsarConsumerStatus {
        server: Some(spec.server_address.clone()),
        topic: Some(spec.topic.clone()),
        subscription: Some(spec.subscription_name.clone()),
        replicas: Some(wanted),
        ready_replicas: Some(ready_replicas),
        observed_generation: consumer.metadata.generation,
        conditions: vec![Condition {
            type_: READY.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            last_transition_time: since,
            observed_generation: consumer.metadata.generation,
        }],
    }
}

/// Writes `status` to the consumer's status subresource, unless it already says that.
async fn write_status(
    consumers: &Api<PulsarConsumer>,
    consumer: &PulsarConsumer,
    status: PulsarConsumerStatus,
) -> Result<(), kube::Error> {
    if consumer.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let patch = Patch::Merge(json!({ "status": status }));
    consumers
        .patch_status(&consumer.name_any(), &params, &patch)
        .await?;
    Ok(())
}
