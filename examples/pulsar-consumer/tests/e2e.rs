//! The PulsarConsumer operator (kopr's reconcile model) against an in-process API server with its workload controllers
//! and simulated nodes: the owned Deployment with the settings in its environment, the status
//! following the pods to `Ready`, spec changes propagated, hand edits (scale, environment, image,
//! deletion) put back, no update loop, garbage collection with the owner, a broken
//! PulsarConsumer reported while others are served, invalid samples refused by the schema, and
//! the `manifests` RBAC.

use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event;
use kopr::kube::api::{Api, DeleteParams, Patch, PatchParams};
use kopr::kube::runtime::watcher;
use kopr::testing::{
    Logs, RunningOperator, TestCluster, capture_logs, manifest_documents, refusals, wait_for,
};
use pulsar_consumer::deployment::{CONTAINER, ENV_SERVER, ENV_SUBSCRIPTION, ENV_TOPIC};
use pulsar_consumer::{Config, PulsarConsumer, PulsarConsumerSpec, READY};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);
/// The sample's name; tests share the process's logs, so no other test uses it.
const SAMPLE: &str = "my-topic-consumer";

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

/// Starts a cluster with the CRD installed and the operator running.
async fn start() -> (TestCluster, RunningOperator) {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let operator = pulsar_consumer::operator(&Config::default());
    operator
        .install_crds(&cluster.client())
        .await
        .expect("CRD installs");
    let running = cluster
        .run_as_service_account(operator, &pulsar_consumer::manifests())
        .await
        .expect("runs as its ServiceAccount");
    (cluster, running)
}

async fn apply_sample(cluster: &TestCluster) {
    let applied = kopr::apply::apply_paths(
        &cluster.client(),
        &[samples().join("my-topic-consumer.yaml")],
    )
    .await
    .expect("sample loads");
    for outcome in &applied {
        assert!(outcome.result.is_ok(), "{outcome}");
    }
}

/// Creates a PulsarConsumer with these settings in `default`.
async fn create(consumers: &Api<PulsarConsumer>, name: &str, topic: &str, replicas: i32) {
    let spec = PulsarConsumerSpec {
        server_address: "pulsar://pulsar:6650".into(),
        topic: topic.into(),
        subscription_name: "sub".into(),
        replicas,
    };
    consumers
        .create(&Default::default(), &PulsarConsumer::new(name, spec))
        .await
        .expect("created");
}

/// The consumer container's environment, as `(name, value)` pairs.
fn environment(deployment: &Deployment) -> Vec<(String, String)> {
    deployment
        .spec
        .template
        .spec
        .iter()
        .flat_map(|pod| &pod.containers)
        .filter(|c| c.name == CONTAINER)
        .flat_map(|c| c.env.iter().flatten())
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

fn env_value(deployment: &Deployment, name: &str) -> Option<String> {
    environment(deployment)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
}

fn image(deployment: &Deployment) -> Option<String> {
    deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|pod| pod.containers.first())
        .and_then(|c| c.image.clone())
}

fn generation(deployment: &Deployment) -> i64 {
    deployment.metadata.generation.unwrap_or_default()
}

/// Whether `consumer` reports all `replicas` consumers ready for `generation`.
fn ready(consumer: Option<&PulsarConsumer>, generation: i64, replicas: i32) -> bool {
    let Some(status) = consumer.and_then(|c| c.status.as_ref()) else {
        return false;
    };
    status.observed_generation == Some(generation)
        && status.ready_replicas == Some(replicas)
        && status.replicas == Some(replicas)
        && status.conditions.iter().any(|c| {
            c.type_ == READY && c.status == "True" && c.observed_generation == Some(generation)
        })
}

async fn wait_ready(
    consumers: &Api<PulsarConsumer>,
    name: &str,
    generation: i64,
    replicas: i32,
) -> PulsarConsumer {
    wait_for(consumers, name, WAIT, move |c: Option<&PulsarConsumer>| {
        ready(c, generation, replicas)
    })
    .await
    .unwrap_or_else(|e| {
        panic!("{name} never Ready with {replicas} for generation {generation}: {e}")
    })
    .expect("exists")
}

async fn wait_deployment(
    deployments: &Api<Deployment>,
    name: &str,
    condition: impl Fn(&Deployment) -> bool + Send + 'static,
) -> Deployment {
    wait_for(deployments, name, WAIT, move |d: Option<&Deployment>| {
        d.is_some_and(&condition)
    })
    .await
    .unwrap_or_else(|e| panic!("Deployment {name}: {e}"))
    .expect("exists")
}

/// Makes the operator reconcile `name` once more (an annotation is part of what kopr watches,
/// and leaves the spec and its generation alone) and waits until that reconciliation found the
/// Deployment in sync.
async fn reconcile_again(logs: &Logs, consumers: &Api<PulsarConsumer>, name: &str, token: &str) {
    let line = format!("PulsarConsumer default/{name}: Deployment in sync with generation");
    let before = logs.count(&[&line]);
    let touch = Patch::Merge(json!({"metadata": {"annotations": {"example.com/touched": token}}}));
    consumers
        .patch(name, &PatchParams::default(), &touch)
        .await
        .expect("annotated");
    let deadline = tokio::time::Instant::now() + WAIT;
    while logs.count(&[&line]) == before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no reconciliation of {name} after the annotation"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How many times the operator updated the Deployment of the PulsarConsumer `name`.
fn updates(logs: &Logs, name: &str) -> usize {
    logs.count(&[
        &format!("PulsarConsumer default/{name}: Deployment {name} differed from the spec"),
        "; updated",
    ])
}

/// A watch of one PulsarConsumer, established before whatever the test does next, so that it
/// sees every state the object goes through from then on.
struct Watch {
    events:
        Pin<Box<dyn Stream<Item = Result<watcher::Event<PulsarConsumer>, watcher::Error>> + Send>>,
}

impl Watch {
    async fn start(consumers: &Api<PulsarConsumer>, name: &str) -> Watch {
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut watch = Watch {
            events: Box::pin(watcher::watcher(consumers.clone(), config)),
        };
        // Watching starts once the initial listing is done.
        let listed = async {
            while let Some(event) = watch.events.next().await {
                if matches!(event, Ok(watcher::Event::InitDone)) {
                    return;
                }
            }
        };
        tokio::time::timeout(WAIT, listed)
            .await
            .expect("the watch starts");
        watch
    }

    /// Waits for a state of the object that satisfies `condition`.
    async fn until(&mut self, condition: impl Fn(&PulsarConsumer) -> bool) {
        let found = async {
            while let Some(event) = self.events.next().await {
                if let Ok(watcher::Event::Apply(consumer)) = event
                    && condition(&consumer)
                {
                    return;
                }
            }
            panic!("the watch ended");
        };
        tokio::time::timeout(WAIT, found)
            .await
            .expect("the state is reached");
    }
}

/// Waits for an event of `type_` (`Normal` or `Warning`) about `name` with `reason`; returns the
/// messages of all such events.
async fn events(cluster: &TestCluster, name: &str, type_: &str, reason: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = events
            .list(&Default::default())
            .await
            .expect("events listed");
        let found: Vec<String> = list
            .items
            .into_iter()
            .filter(|e| {
                e.involved_object.name.as_deref() == Some(name)
                    && e.type_.as_deref() == Some(type_)
                    && e.reason.as_deref() == Some(reason)
            })
            .map(|e| e.message.unwrap_or_default())
            .collect();
        if !found.is_empty() {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {type_} {reason} event about {name}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployment_follows_the_spec_and_goes_with_its_owner() {
    let logs = capture_logs();
    let (cluster, running) = start().await;
    apply_sample(&cluster).await;
    let consumers: Api<PulsarConsumer> = Api::namespaced(cluster.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");

    // The Deployment: the settings in the environment, the replicas, owned by the consumer.
    let deployment = wait_deployment(&deployments, SAMPLE, |_| true).await;
    assert_eq!(deployment.spec.replicas, Some(2));
    assert_eq!(
        environment(&deployment),
        [
            (ENV_SERVER.into(), "pulsar://pulsar.pulsar.svc:6650".into()),
            (ENV_TOPIC.into(), "my-topic".into()),
            (ENV_SUBSCRIPTION.into(), "my-subscription".into()),
        ]
    );
    assert_eq!(
        image(&deployment).as_deref(),
        Some(pulsar_consumer::DEFAULT_CONSUMER_IMAGE)
    );
    let owner = consumers.get(SAMPLE).await.expect("consumer");
    let references = deployment
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    assert_eq!(references.len(), 1);
    assert_eq!(references[0].kind, "PulsarConsumer");
    assert_eq!(Some(&references[0].uid), owner.metadata.uid.as_ref());
    assert_eq!(references[0].controller, Some(true));
    logs.wait_for(&["PulsarConsumer default/my-topic-consumer: created Deployment my-topic-consumer (2 replicas consuming my-topic)"], WAIT)
        .await
        .expect("creation logged");

    // The status mirrors the spec and follows the simulated pods to Ready.
    let consumer = wait_ready(&consumers, SAMPLE, 1, 2).await;
    let status = consumer.status.clone().expect("status");
    assert_eq!(
        status.server.as_deref(),
        Some("pulsar://pulsar.pulsar.svc:6650")
    );
    assert_eq!(status.topic.as_deref(), Some("my-topic"));
    assert_eq!(status.subscription.as_deref(), Some("my-subscription"));
    assert_eq!(status.conditions[0].reason, "ConsumersReady");
    assert_eq!(status.conditions[0].message, "2/2 consumers ready");

    // No update loop: reconciling a settled consumer again writes nothing to the Deployment.
    let settled = deployments.get(SAMPLE).await.expect("deployment");
    reconcile_again(&logs, &consumers, SAMPLE, "1").await;
    let after = deployments.get(SAMPLE).await.expect("deployment");
    assert_eq!(
        generation(&after),
        generation(&settled),
        "no Deployment update"
    );
    assert_eq!(after.spec, settled.spec);
    assert_eq!(
        logs.count(&["PulsarConsumer default/my-topic-consumer: created"]),
        1
    );
    assert_eq!(
        updates(&logs, SAMPLE),
        0,
        "the Deployment was never updated"
    );

    // A spec change reaches the Deployment, and the status follows it.
    let change = Patch::Merge(json!({"spec": {"replicas": 3, "topic": "other-topic"}}));
    consumers
        .patch(SAMPLE, &PatchParams::default(), &change)
        .await
        .expect("patched");
    let changed = wait_deployment(&deployments, SAMPLE, |d| {
        d.spec.replicas == Some(3) && env_value(d, ENV_TOPIC).as_deref() == Some("other-topic")
    })
    .await;
    assert_eq!(
        env_value(&changed, ENV_SUBSCRIPTION).as_deref(),
        Some("my-subscription")
    );
    logs.wait_for(
        &["PulsarConsumer default/my-topic-consumer: Deployment my-topic-consumer differed from the spec; updated"],
        WAIT,
    )
    .await
    .expect("update logged");
    let consumer = wait_ready(&consumers, SAMPLE, 2, 3).await;
    let status = consumer.status.expect("status");
    assert_eq!(status.topic.as_deref(), Some("other-topic"));
    assert_eq!(status.conditions[0].message, "3/3 consumers ready");
    let rolled_out = deployments.get(SAMPLE).await.expect("deployment");
    reconcile_again(&logs, &consumers, SAMPLE, "2").await;
    let after = deployments.get(SAMPLE).await.expect("deployment");
    assert_eq!(
        generation(&after),
        generation(&rolled_out),
        "no Deployment update"
    );
    assert_eq!(updates(&logs, SAMPLE), 1, "one update, for the spec change");

    // Deleting the PulsarConsumer garbage-collects its Deployment.
    consumers
        .delete(SAMPLE, &DeleteParams::default())
        .await
        .expect("deleted");
    wait_for(&deployments, SAMPLE, WAIT, |d: Option<&Deployment>| {
        d.is_none()
    })
    .await
    .expect("the Deployment is garbage-collected");

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_edits_of_the_deployment_are_put_back() {
    let logs = capture_logs();
    let (cluster, running) = start().await;
    let name = "edited-consumer";
    let consumers: Api<PulsarConsumer> = Api::namespaced(cluster.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    create(&consumers, name, "orders", 2).await;
    wait_ready(&consumers, name, 1, 2).await;
    let original = deployments.get(name).await.expect("deployment");
    let first = generation(&original);

    // `kubectl scale deployment edited-consumer --replicas 5`: the scale subresource.
    deployments
        .patch_scale(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("scaled");
    let repaired = wait_deployment(&deployments, name, move |d| {
        d.spec.replicas == Some(2) && generation(d) >= first + 2
    })
    .await;
    assert_eq!(generation(&repaired), first + 2, "one edit, one repair");
    logs.wait_for(
        &[
            "PulsarConsumer default/edited-consumer: Deployment edited-consumer differed from the spec; updated",
        ],
        WAIT,
    )
    .await
    .expect("repair logged");
    wait_ready(&consumers, name, 1, 2).await;
    reconcile_again(&logs, &consumers, name, "1").await;
    let settled = deployments.get(name).await.expect("deployment");
    assert_eq!(
        generation(&settled),
        first + 2,
        "no update after the repair"
    );

    // Another environment value and another image, in one edit.
    let edit = Patch::Json::<()>(
        serde_json::from_value(json!([
            {"op": "replace", "path": "/spec/template/spec/containers/0/env/1/value", "value": "hijacked"},
            {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "someone-else:1"},
        ]))
        .expect("a JSON patch"),
    );
    deployments
        .patch(name, &PatchParams::default(), &edit)
        .await
        .expect("edited");
    let repaired = wait_deployment(&deployments, name, move |d| {
        generation(d) >= first + 4
            && env_value(d, ENV_TOPIC).as_deref() == Some("orders")
            && image(d).as_deref() == Some(pulsar_consumer::DEFAULT_CONSUMER_IMAGE)
    })
    .await;
    assert_eq!(generation(&repaired), first + 4, "one edit, one repair");
    logs.wait_for(
        &["PulsarConsumer default/edited-consumer: Deployment edited-consumer differed from the spec; updated"],
        WAIT,
    )
    .await
    .expect("repair logged");
    wait_ready(&consumers, name, 1, 2).await;
    reconcile_again(&logs, &consumers, name, "2").await;
    let settled = deployments.get(name).await.expect("deployment");
    assert_eq!(
        generation(&settled),
        first + 4,
        "no update after the repair"
    );
    assert_eq!(updates(&logs, name), 2, "exactly two repairs");
    let told = events(&cluster, name, "Normal", "DeploymentUpdated").await;
    assert!(
        told.iter()
            .any(|m| m == &format!("Deployment {name} differed from the spec; updated")),
        "{told:?}"
    );

    // A deleted Deployment comes back, and the status goes through not ready back to Ready.
    let mut watch = Watch::start(&consumers, name).await;
    deployments
        .delete(name, &DeleteParams::default())
        .await
        .expect("deleted");
    let old_uid = original.metadata.uid.clone();
    let recreated = wait_deployment(&deployments, name, move |d| d.metadata.uid != old_uid).await;
    assert_eq!(recreated.spec.replicas, Some(2));
    assert_eq!(env_value(&recreated, ENV_TOPIC).as_deref(), Some("orders"));
    watch.until(|c| !ready(Some(c), 1, 2)).await;
    watch.until(|c| ready(Some(c), 1, 2)).await;

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_consumer_is_reported_while_others_are_served() {
    let (cluster, running) = start().await;
    let consumers: Api<PulsarConsumer> = Api::namespaced(cluster.client(), "default");
    // A valid name for a PulsarConsumer, but too long for the label value its pods get.
    let long = format!("consumer-{}", "x".repeat(60));
    create(&consumers, &long, "orders", 1).await;
    create(&consumers, "healthy-consumer", "orders", 2).await;

    let message = events(&cluster, &long, "Warning", "ReconcileFailed")
        .await
        .remove(0);
    assert!(message.contains("failed permanently"), "{message}");
    assert!(
        message.contains("the API server refused the Deployment"),
        "{message}"
    );
    let broken = wait_for(&consumers, &long, WAIT, |c: Option<&PulsarConsumer>| {
        c.and_then(|c| c.status.as_ref()).is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == READY && c.status == "False")
        })
    })
    .await
    .expect("status says why")
    .expect("exists");
    let condition = &broken.status.expect("status").conditions[0];
    assert_eq!(condition.reason, "DeploymentRejected");
    assert!(
        condition
            .message
            .contains("must be no more than 63 characters"),
        "{}",
        condition.message
    );

    wait_ready(&consumers, "healthy-consumer", 1, 2).await;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    assert!(deployments.get_opt(&long).await.expect("get").is_none());

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_consumers_are_refused_by_the_schema() {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let client = cluster.client();
    pulsar_consumer::operator(&Config::default())
        .install_crds(&client)
        .await
        .expect("CRD installs");
    let errors = refusals(&client, samples().join("invalid"))
        .await
        .expect("every invalid sample refused");
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].contains("missing-topic.yaml:2: PulsarConsumer no-topic:")
            && errors[0].contains("spec.topic: Required value"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("negative-replicas.yaml:2: PulsarConsumer negative-replicas:")
            && errors[1].contains("spec.replicas")
            && errors[1].contains("greater than or equal to 0"),
        "{}",
        errors[1]
    );
    let consumers: Api<PulsarConsumer> = Api::namespaced(client, "default");
    assert!(
        consumers
            .list(&Default::default())
            .await
            .expect("listed")
            .items
            .is_empty()
    );
    cluster.shutdown().await;
}

#[test]
fn manifests_grant_what_the_operator_uses() {
    let documents = manifest_documents(
        env!("CARGO_BIN_EXE_pulsar-consumer"),
        &["--", "--consumer-image", "registry.example/consumer:2"],
    )
    .expect("manifests");
    let kinds: Vec<&str> = documents
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Service",
            "Deployment"
        ]
    );
    assert_eq!(
        documents[2]["rules"],
        json!([
            {"apiGroups": ["pulsar.pulsarconsumer.krvarma.com"], "resources": ["pulsarconsumers"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": ["pulsar.pulsarconsumer.krvarma.com"], "resources": ["pulsarconsumers/status"], "verbs": ["patch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "get", "list", "watch", "patch", "delete"]},
        ])
    );
    let container = &documents[7]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["args"],
        json!([
            "run",
            "-A",
            "--health-listen",
            "0.0.0.0:8081",
            "--metrics-listen",
            "0.0.0.0:8080",
            "--consumer-image",
            "registry.example/consumer:2"
        ])
    );
}

/// The sample edited and applied again with kubectl, client-side and server-side: each
/// change of `replicas` reaches the object, the reconcile, the
/// Deployment and the status. (The name is changed too: tests share the process's logs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_sample_applied_again_with_kubectl_rescales_the_consumers() {
    const NAME: &str = "kubectl-consumer";
    let (cluster, running) = start().await;
    let kubectl = cluster.kubectl().expect("kubectl");
    let consumers: Api<PulsarConsumer> = Api::namespaced(cluster.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let sample = samples().join("my-topic-consumer.yaml");
    let renamed = ("name: my-topic-consumer", "name: kubectl-consumer");
    let text = kopr::testing::edited(&sample, &[renamed]).expect("edit");
    assert_eq!(
        kubectl.apply(&text, false).await.expect("applied"),
        format!("pulsarconsumer.pulsar.pulsarconsumer.krvarma.com/{NAME} created\n")
    );
    wait_ready(&consumers, NAME, 1, 2).await;

    for (generation, replicas, server_side, said) in [
        (2, 3, false, "configured"),
        (3, 1, true, "serverside-applied"),
    ] {
        let edited = kopr::testing::edited(
            &sample,
            &[renamed, ("replicas: 2", &format!("replicas: {replicas}"))],
        )
        .expect("edit");
        assert_eq!(
            kubectl
                .apply(&edited, server_side)
                .await
                .expect("applied again"),
            format!("pulsarconsumer.pulsar.pulsarconsumer.krvarma.com/{NAME} {said}\n")
        );
        let consumer = wait_ready(&consumers, NAME, generation, replicas).await;
        assert_eq!(consumer.spec.replicas, replicas);
        wait_deployment(&deployments, NAME, move |d| {
            d.spec.replicas == Some(replicas)
        })
        .await;
    }

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}
