//! The Deployment a PulsarConsumer asks for, and what its status says about the consumers.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kopr::conditions;
use kube::ResourceExt;

use crate::{PulsarConsumer, PulsarConsumerStatus, READY, ReconcileError};

/// The name of the consumer container.
pub const CONTAINER: &str = "consumer";

/// The environment variable holding the Pulsar server's address.
pub const ENV_SERVER: &str = "PULSAR_SERVER";
/// The environment variable holding the topic.
pub const ENV_TOPIC: &str = "PULSAR_TOPIC";
/// The environment variable holding the subscription name.
pub const ENV_SUBSCRIPTION: &str = "PULSAR_SUBSCRIPTION";

/// The label naming the application, on the Deployment and its pods.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";
/// The label naming the PulsarConsumer, on the Deployment and its pods (and in the selector).
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

fn labels(consumer: &PulsarConsumer) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), "pulsar-consumer".to_owned()),
        (INSTANCE_LABEL.to_owned(), consumer.name_any()),
    ])
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        ..EnvVar::default()
    }
}

/// The Deployment `consumer` asks for: named after it, running `image` with the consumer's
/// settings in the environment, `spec.replicas` times. Only what matters is set: the server
/// defaults the rest, and `Context::apply` adds the owner reference.
pub fn desired(consumer: &PulsarConsumer, image: &str) -> Deployment {
    let spec = &consumer.spec;
    let labels = labels(consumer);
    let container = Container {
        name: CONTAINER.to_owned(),
        image: Some(image.to_owned()),
        env: Some(vec![
            env(ENV_SERVER, &spec.server_address),
            env(ENV_TOPIC, &spec.topic),
            env(ENV_SUBSCRIPTION, &spec.subscription_name),
        ]),
        ..Container::default()
    };
    Deployment {
        metadata: ObjectMeta {
            name: Some(consumer.name_any()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(spec.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

/// Where the consumers of a Deployment stand, from its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Readiness {
    /// Pods that are ready.
    pub ready: i32,
    /// Pods running the current pod template.
    pub updated: i32,
    /// Whether the Deployment controller has seen the current spec, and every pod it runs is
    /// of the current template: no rollout, scale-up or scale-down in progress.
    pub settled: bool,
}

impl Readiness {
    /// Reads the status of `deployment`, which should run `wanted` pods.
    pub fn of(deployment: &Deployment, wanted: i32) -> Readiness {
        let status = deployment.status.clone().unwrap_or_default();
        let observed =
            status.observed_generation.unwrap_or(0) >= deployment.metadata.generation.unwrap_or(0);
        let updated = status.updated_replicas.unwrap_or(0);
        let total = status.replicas.unwrap_or(0);
        Readiness {
            ready: status.ready_replicas.unwrap_or(0),
            updated,
            settled: observed && updated == wanted && total == wanted,
        }
    }

    /// Whether `wanted` consumers run the current spec and are ready.
    pub fn is_ready(&self, wanted: i32) -> bool {
        self.settled && self.ready == wanted
    }
}

/// The status `consumer` should have: its spec mirrored, its generation observed, the ready
/// consumers and a `Ready` condition from the Deployment (or from the failure to apply it).
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
                let message = format!("{}/{wanted} consumers ready", readiness.ready);
                (false, "ConsumersNotReady", message)
            } else {
                let (updated, ready) = (readiness.updated, readiness.ready);
                let message =
                    format!("rolling out: {updated}/{wanted} consumers updated, {ready} ready");
                (false, "RollingOut", message)
            };
            (readiness.ready, ready, reason, message)
        }
        Err(error) => {
            let ready = previous.ready_replicas.unwrap_or(0);
            (ready, false, error.reason(), error.to_string())
        }
    };
    let mut list = previous.conditions.clone();
    let update = conditions::Update::new(READY, ready)
        .reason(reason)
        .message(message)
        .observed_generation(consumer.metadata.generation);
    conditions::set(&mut list, update);
    PulsarConsumerStatus {
        server: Some(spec.server_address.clone()),
        topic: Some(spec.topic.clone()),
        subscription: Some(spec.subscription_name.clone()),
        replicas: Some(wanted),
        ready_replicas: Some(ready_replicas),
        observed_generation: consumer.metadata.generation,
        conditions: list,
    }
}
