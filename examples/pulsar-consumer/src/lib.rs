//! The PulsarConsumer operator of the "Extending Kubernetes, Part 1" walkthrough, in kopr.
//!
//! A `PulsarConsumer` (`pulsarconsumers.pulsar.pulsarconsumer.krvarma.com/v1`) asks for
//! `spec.replicas` copies of a Pulsar consumer application reading `spec.topic` on
//! `spec.serverAddress` under `spec.subscriptionName`. The operator keeps a Deployment of that
//! name for it, owned by it (deleting the PulsarConsumer garbage-collects the Deployment), whose
//! `consumer` container gets the settings as `PULSAR_SERVER`, `PULSAR_TOPIC` and
//! `PULSAR_SUBSCRIPTION`.
//!
//! The Deployment is compared with the spec semantically ([`drift`]): only what the operator
//! sets counts, not what the server fills in, so nothing is written while they agree. The
//! operator watches the Deployments that PulsarConsumers control as well, so a hand edit
//! (`kubectl scale`, a changed environment variable or image, a deleted Deployment) is put back
//! at once ([`reconcile`]), and the status follows the pods: `status` mirrors the spec (`server`,
//! `topic`, `subscription`, `replicas`) and adds `readyReplicas`, `observedGeneration` and a
//! `Ready` condition.
//!
//! A Deployment the server refuses (a PulsarConsumer whose name is too long for a label value,
//! say) fails that PulsarConsumer alone: a Warning event and a `Ready=False` condition say why,
//! and the others are served as usual.

#![warn(missing_docs)]

pub mod deployment;
pub mod drift;
pub mod reconcile;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kopr::manifests::Manifests;
use kopr::{Context, Filtered, Handler, HandlerResult, Matcher, Operator, Resource};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::reconcile::{Outcome, Reconciler};

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

/// What the operator observed. kopr keeps its own bookkeeping beside these fields, so the
/// schema keeps unknown fields.
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

/// How long to wait before retrying a reconciliation that failed on an API error.
pub const RETRY_BACKOFF: Duration = Duration::from_secs(10);

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

/// How the operator is deployed: it manages Deployments.
pub fn manifests() -> Manifests {
    Manifests::new("pulsar-consumer").child::<Deployment>()
}

/// Reconciles a PulsarConsumer that was created or changed, or found at startup.
async fn consumer_changed(
    reconciler: Arc<Reconciler>,
    ctx: Context<PulsarConsumer>,
) -> HandlerResult {
    let namespace = ctx.namespace().unwrap_or("default");
    let outcome = reconciler
        .reconcile(ctx.client(), namespace, ctx.name(), Some(ctx.uid()))
        .await
        .map_err(reconcile::ReconcileError::into_handler_error)?;
    if outcome == Outcome::InSync {
        tracing::info!(
            "PulsarConsumer {namespace}/{}: Deployment in sync with generation {}",
            ctx.name(),
            ctx.object.metadata.generation.unwrap_or_default()
        );
    }
    Ok(())
}

/// Reconciles the PulsarConsumer controlling a Deployment that was added, changed or deleted.
async fn deployment_changed(
    reconciler: Arc<Reconciler>,
    ctx: Context<Deployment>,
) -> HandlerResult {
    let Some(owner) = deployment::controlling_consumer(&ctx.object) else {
        return Ok(());
    };
    let namespace = ctx.namespace().unwrap_or("default");
    // Once the Deployment is gone, whichever PulsarConsumer has the name now may need a new one.
    let uid = (ctx.event_type() != Some("DELETED")).then_some(owner.uid.as_str());
    if let Err(error) = reconciler
        .reconcile(ctx.client(), namespace, &owner.name, uid)
        .await
    {
        tracing::warn!("PulsarConsumer {namespace}/{}: {error}", owner.name);
        let about = json!({
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "metadata": {"name": owner.name, "namespace": namespace, "uid": owner.uid},
        });
        kopr::warn(&about, error.reason(), &error.to_string());
    }
    Ok(())
}

/// Whether `references` (a Deployment's `metadata.ownerReferences`) has a PulsarConsumer as
/// the controller.
fn controlled_by_consumer(references: Option<&Value>) -> bool {
    references.and_then(Value::as_array).is_some_and(|refs| {
        refs.iter().any(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && deployment::is_consumer_reference(
                    r.get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                    r.get("kind").and_then(Value::as_str).unwrap_or_default(),
                )
        })
    })
}

/// The PulsarConsumer operator.
pub fn operator(config: &Config) -> Operator {
    let reconciler = Arc::new(Reconciler::new(config.consumer_image.clone()));
    let on_consumer = |id: &str| {
        let reconciler = reconciler.clone();
        Handler::new(move |ctx| consumer_changed(reconciler.clone(), ctx))
            .id(id)
            .backoff(RETRY_BACKOFF)
    };
    // A field filter is checked on the raw object before anything else, so the Deployments of
    // others cost nothing: no slot, no handler call. (kopr does not apply `.when` predicates to
    // `on_event` handlers, only label, annotation and field filters.)
    let on_deployment = {
        let reconciler = reconciler.clone();
        Handler::new(move |ctx| deployment_changed(reconciler.clone(), ctx))
            .id("deployment")
            .field_value(
                "metadata.ownerReferences",
                Matcher::check(controlled_by_consumer),
            )
    };
    Operator::new()
        .resource(
            Resource::<PulsarConsumer>::custom()
                .on_create(on_consumer("reconcile.create"))
                .on_update(on_consumer("reconcile.update"))
                .on_resume(on_consumer("reconcile.resume")),
        )
        .resource(Resource::<Deployment>::new().on_event(on_deployment))
}
