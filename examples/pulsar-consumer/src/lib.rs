//! The PulsarConsumer operator of the "Extending Kubernetes, Part 1" walkthrough, in kopr's
//! reconcile model.
//!
//! A `PulsarConsumer` (`pulsarconsumers.pulsar.pulsarconsumer.krvarma.com/v1`) asks for
//! `spec.replicas` copies of a Pulsar consumer application reading `spec.topic` on
//! `spec.serverAddress` under `spec.subscriptionName`. One reconcile keeps a Deployment of that
//! name for it, owned by it (deleting the PulsarConsumer garbage-collects the Deployment), whose
//! `consumer` container gets the settings as `PULSAR_SERVER`, `PULSAR_TOPIC` and
//! `PULSAR_SUBSCRIPTION`.
//!
//! The reconcile server-side-applies the Deployment it wants under the field manager
//! `pulsar-consumer` ([`Context::apply`]): the server merges it, so what it fills in is no
//! difference, and a field someone changed by hand (`kubectl scale`, an environment variable,
//! the image) is put back by applying again. It runs whenever the PulsarConsumer or the
//! Deployment it owns changes (`owns::<Deployment>()`), so hand edits and deletions are
//! repaired at once and the status follows the pods: `status` mirrors the spec (`server`,
//! `topic`, `subscription`, `replicas`) and adds `readyReplicas`, `observedGeneration` and a
//! `Ready` condition. Nothing is written when nothing differs, so there is no update loop.
//!
//! A Deployment the server refuses (a PulsarConsumer whose name is too long for a label value,
//! say) fails that PulsarConsumer alone: a Warning event and a `Ready=False` condition say why,
//! and the others are served as usual.

#![warn(missing_docs)]

pub mod deployment;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kopr::children::ApplyError;
use kopr::manifests::Manifests;
use kopr::reconcile::Action;
use kopr::{Context, HandlerError, HandlerResult, Operator, Resource};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The operator's name: its field manager, and the domain of its finalizer and annotations.
pub const FIELD_MANAGER: &str = "pulsar-consumer";

/// The desired state of a PulsarConsumer: where to consume what, and how many consumers.
// clippy takes the repeated `type_ = ...` of the printcolumn(...) arguments for duplicated
// attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "pulsar.pulsarconsumer.krvarma.com",
    version = "v1",
    kind = "PulsarConsumer",
    namespaced,
    doc = "Pulsar consumers: a Deployment of consumers of one topic, kept as the spec says",
    status = "PulsarConsumerStatus",
    printcolumn(name = "Server", type_ = "string", json_path = ".status.server"),
    printcolumn(name = "Topic", type_ = "string", json_path = ".status.topic"),
    printcolumn(
        name = "Subscription",
        type_ = "string",
        json_path = ".status.subscription"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".status.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PulsarConsumerSpec {
    /// The address of the Pulsar server, such as `pulsar://pulsar:6650`.
    #[schemars(length(min = 1))]
    pub server_address: String,
    /// The topic to consume.
    #[schemars(length(min = 1))]
    pub topic: String,
    /// The name of the subscription the consumers share.
    #[schemars(length(min = 1))]
    pub subscription_name: String,
    /// How many consumers to run.
    #[schemars(range(min = 0))]
    pub replicas: i32,
}

/// What the operator observed. kopr reports an object it cannot read under `status.kopr`, so
/// the schema keeps unknown fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct PulsarConsumerStatus {
    /// The Pulsar server the consumers use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The topic they consume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// Their subscription.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<String>,
    /// How many consumers the spec asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// How many consumers are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The `Ready` condition: `True` once every consumer runs the current spec and is ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The condition type the operator sets.
pub const READY: &str = "Ready";

/// The consumer application's image used unless `--consumer-image` says otherwise.
pub const DEFAULT_CONSUMER_IMAGE: &str = "pulsar-consumer-app:latest";

/// The operator's options.
#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    /// The consumer application's image; it reads PULSAR_SERVER, PULSAR_TOPIC and
    /// PULSAR_SUBSCRIPTION from its environment.
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_CONSUMER_IMAGE)]
    pub consumer_image: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            consumer_image: DEFAULT_CONSUMER_IMAGE.to_owned(),
        }
    }
}

/// How the operator is deployed. Its RBAC follows from the operator: the Deployments it owns
/// are children.
pub fn manifests() -> Manifests {
    Manifests::new("pulsar-consumer")
}

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
    /// The Deployment could not be applied for another reason (retried with a backoff).
    #[error(transparent)]
    Apply(ApplyError),
}

impl ReconcileError {
    fn of(name: &str, error: ApplyError) -> ReconcileError {
        let message = match &error {
            ApplyError::Api(kube::Error::Api(status)) if matches!(status.code, 400 | 422) => {
                status.message.clone()
            }
            ApplyError::Adopt(adopt) => adopt.to_string(),
            _ => return ReconcileError::Apply(error),
        };
        let name = name.to_owned();
        ReconcileError::Rejected { name, message }
    }

    /// The reason of the `Ready` condition reporting this error.
    pub fn reason(&self) -> &'static str {
        match self {
            ReconcileError::Rejected { .. } => "DeploymentRejected",
            ReconcileError::Apply(_) => "ReconcileFailed",
        }
    }
}

// ANCHOR: reconcile
/// Makes the Deployment of a PulsarConsumer match its spec, then its status match the
/// Deployment.
async fn reconcile(image: Arc<str>, ctx: Context<PulsarConsumer>) -> HandlerResult<Action> {
    let consumer = &ctx.object;
    let (key, name) = (
        format!("{}/{}", ctx.namespace().unwrap_or("default"), ctx.name()),
        ctx.name(),
    );
    let desired = deployment::desired(consumer, &image);
    let (status, result) = match ctx.apply(&desired).await {
        Ok(applied) => {
            let (reason, message) = if applied.created {
                let spec = &consumer.spec;
                let message = format!(
                    "created Deployment {name} ({} replicas consuming {})",
                    spec.replicas, spec.topic
                );
                ("DeploymentCreated", message)
            } else if applied.changed {
                (
                    "DeploymentUpdated",
                    format!("Deployment {name} differed from the spec; updated"),
                )
            } else {
                let generation = consumer.metadata.generation.unwrap_or_default();
                tracing::info!(
                    "PulsarConsumer {key}: Deployment in sync with generation {generation}"
                );
                ("", String::new())
            };
            if !reason.is_empty() {
                tracing::info!("PulsarConsumer {key}: {message}");
                ctx.info(reason, &message);
            }
            (deployment::observed(consumer, Ok(&applied.object)), Ok(()))
        }
        Err(error) => {
            let error = ReconcileError::of(name, error);
            (deployment::observed(consumer, Err(&error)), Err(error))
        }
    };
    if consumer.status.as_ref() != Some(&status) {
        ctx.patch().set("status", &status);
    }
    match result {
        Ok(()) => Ok(Action::await_change()),
        Err(error @ ReconcileError::Rejected { .. }) => {
            Err(HandlerError::permanent(error.to_string()))
        }
        Err(error) => Err(error.into()),
    }
}

/// The PulsarConsumer operator.
pub fn operator(config: &Config) -> Operator {
    let image: Arc<str> = Arc::from(config.consumer_image.as_str());
    Operator::new().name(FIELD_MANAGER).resource(
        Resource::<PulsarConsumer>::custom()
            .reconcile(move |ctx| reconcile(image.clone(), ctx))
            .owns::<Deployment>(),
    )
}
// ANCHOR_END: reconcile
