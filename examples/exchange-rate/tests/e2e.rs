//! The ExchangeRate operator against an in-process API server and an in-process `serve-rates`
//! stand-in: the CRD registered at startup, the rate in an adopted ConfigMap, refreshed by the
//! timer and following a currency change, garbage-collected with its owner; a currency that
//! is not an ISO 4217 code refused through kubectl by the validating handler; an unknown
//! currency failing for good with a Warning event; an unreachable API retried; the
//! `manifests` RBAC; and the `serve-rates` command.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use exchange_rate::rates::{RatesClient, RatesError};
use exchange_rate::server::{RateArg, RateTable};
use exchange_rate::{Config, ExchangeRate};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopr::kube::api::{Api, DeleteParams, Patch, PatchParams};
use kopr::kube::runtime::wait::Condition;
use kopr::testing::{TestCluster, capture_logs, manifest_documents, wait_for};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

fn rate(currency: &str, rate: f64) -> RateArg {
    RateArg {
        currency: currency.into(),
        rate,
    }
}

/// Serves `table` on a free loopback port for the rest of the test; returns the rates URL.
async fn rates_server(table: RateTable) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(exchange_rate::server::serve(
        listener,
        table,
        std::future::pending(),
    ));
    format!("http://{address}/latest")
}

/// Starts the operator (which registers its own CRD) and waits for the CRD.
async fn start(
    cluster: &TestCluster,
    rates_url: String,
    refresh_interval: u64,
) -> kopr::testing::RunningOperator {
    let config = Config {
        rates_url,
        refresh_interval,
    };
    let running = cluster
        .run_as_service_account(
            exchange_rate::operator(&config),
            &exchange_rate::manifests(),
        )
        .await
        .expect("runs as its ServiceAccount");
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    let established = kopr::kube::runtime::conditions::is_crd_established();
    wait_for(
        &crds,
        "exchangerates.operators.brennerm.github.io",
        WAIT,
        move |crd| established.matches_object(crd),
    )
    .await
    .expect("the operator registers its CRD at startup");
    running
}

fn status(rate: Option<&ExchangeRate>) -> exchange_rate::ExchangeRateStatus {
    rate.and_then(|r| r.status.clone()).unwrap_or_default()
}

async fn wait_rate(configmaps: &Api<ConfigMap>, name: &str, expected: &'static str) -> ConfigMap {
    wait_for(configmaps, name, WAIT, move |cm: Option<&ConfigMap>| {
        cm.and_then(|cm| cm.data.as_ref())
            .and_then(|d| d.get("rate"))
            .map(String::as_str)
            == Some(expected)
    })
    .await
    .unwrap_or_else(|e| panic!("ConfigMap {name} never had rate {expected}: {e}"))
    .expect("exists")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_lives_in_an_adopted_configmap_that_follows_the_currency() {
    let logs = capture_logs();
    let table = RateTable::new([rate("USD", 1.1901), rate("GBP", 0.8602)]);
    let url = rates_server(table.clone()).await;
    let cluster = TestCluster::start().await.expect("cluster starts");
    let running = start(&cluster, url, 1).await;
    cluster
        .apply(samples().join("exchange-rate-usd.yaml"))
        .await
        .expect("applied");

    let rates: Api<ExchangeRate> = Api::namespaced(cluster.client(), "default");
    let owner = wait_for(
        &rates,
        "exchange-rate-usd",
        WAIT,
        |r: Option<&ExchangeRate>| status(r).configmap.is_some(),
    )
    .await
    .expect("the create handler records the ConfigMap")
    .expect("exists");
    let name = status(Some(&owner)).configmap.expect("name");
    assert!(
        name.starts_with("exchange-rate-usd-"),
        "generateName from the owner: {name}"
    );
    logs.wait_for(&[&format!("ConfigMap {name} created: USD = 1.1901")], WAIT)
        .await
        .expect("logged");

    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let configmap = wait_rate(&configmaps, &name, "1.1901").await;
    let references = configmap.metadata.owner_references.unwrap_or_default();
    assert_eq!(references.len(), 1);
    assert_eq!(references[0].kind, "ExchangeRate");
    assert_eq!(references[0].name, "exchange-rate-usd");
    assert_eq!(
        Some(references[0].uid.as_str()),
        owner.metadata.uid.as_deref()
    );
    assert_eq!(references[0].controller, Some(true));

    // The timer picks up a new rate.
    table.set("USD", 1.2034);
    wait_rate(&configmaps, &name, "1.2034").await;

    // A new currency goes into the same ConfigMap.
    let change = Patch::Merge(json!({"spec": {"currency": "GBP"}}));
    rates
        .patch("exchange-rate-usd", &PatchParams::default(), &change)
        .await
        .expect("patched");
    logs.wait_for(
        &["Currency changed to GBP", "default/exchange-rate-usd"],
        WAIT,
    )
    .await
    .expect("field handler");
    wait_rate(&configmaps, &name, "0.8602").await;
    let after = wait_for(
        &rates,
        "exchange-rate-usd",
        WAIT,
        |r: Option<&ExchangeRate>| status(r).rate.as_deref() == Some("0.8602"),
    )
    .await
    .expect("status follows")
    .expect("exists");
    assert_eq!(
        status(Some(&after)).configmap.as_deref(),
        Some(name.as_str()),
        "the same ConfigMap"
    );
    let owned = configmaps.list(&Default::default()).await.expect("listed");
    let children = owned
        .items
        .iter()
        .filter(|cm| {
            cm.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| Some(r.uid.as_str()) == owner.metadata.uid.as_deref())
        })
        .count();
    assert_eq!(children, 1, "no second ConfigMap");

    // Deleting the owner garbage-collects the ConfigMap.
    rates
        .delete("exchange-rate-usd", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_for(&configmaps, &name, WAIT, |cm: Option<&ConfigMap>| {
        cm.is_none()
    })
    .await
    .expect("the ConfigMap is garbage-collected");

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_currency_fails_for_good_with_a_warning() {
    let url = rates_server(RateTable::new([rate("USD", 1.1901)])).await;
    let cluster = TestCluster::start().await.expect("cluster starts");
    let running = start(&cluster, url, 3600).await;

    // The schema refuses a currency of the wrong type outright.
    let refused = kopr::apply::apply_paths(
        &cluster.client(),
        &[samples().join("invalid/wrong-type.yaml")],
    )
    .await
    .expect("loads");
    let error = refused[0].result.as_ref().expect_err("refused").to_string();
    assert!(
        error.contains("spec.currency") && error.contains("must be of type string"),
        "{error}"
    );

    cluster
        .apply(samples().join("invalid/unknown-currency.yaml"))
        .await
        .expect("applied");
    let message = cluster
        .wait_for_warning("default", "exchange-rate-xts", WAIT, |e| {
            e.reason.as_deref() == Some("HandlerFailed")
        })
        .await
        .expect("a HandlerFailed warning")
        .message
        .unwrap_or_default();
    assert!(message.contains("failed permanently"), "{message}");
    assert!(
        message.contains("unknown currency XTS: Symbols 'XTS' are invalid for date"),
        "{message}"
    );
    let rates: Api<ExchangeRate> = Api::namespaced(cluster.client(), "default");
    wait_for(
        &rates,
        "exchange-rate-xts",
        WAIT,
        |r: Option<&ExchangeRate>| {
            status(r)
                .message
                .is_some_and(|m| m.starts_with("unknown currency XTS"))
        },
    )
    .await
    .expect("status.message says why");
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let owned = configmaps.list(&Default::default()).await.expect("listed");
    assert!(
        owned
            .items
            .iter()
            .all(|cm| cm.metadata.owner_references.is_none()),
        "no ConfigMap made"
    );

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_api_is_retried() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/latest", closed.local_addr().expect("address"));
    drop(closed);
    let cluster = TestCluster::start().await.expect("cluster starts");
    let running = start(&cluster, url, 3600).await;
    cluster
        .apply(samples().join("exchange-rate-gbp.yaml"))
        .await
        .expect("applied");
    let message = cluster
        .wait_for_warning("default", "exchange-rate-gbp", WAIT, |e| {
            e.reason.as_deref() == Some("HandlerRetrying")
        })
        .await
        .expect("a HandlerRetrying warning")
        .message
        .unwrap_or_default();
    assert!(message.contains("is unreachable"), "{message}");
    let rates: Api<ExchangeRate> = Api::namespaced(cluster.client(), "default");
    wait_for(
        &rates,
        "exchange-rate-gbp",
        WAIT,
        |r: Option<&ExchangeRate>| {
            status(r)
                .message
                .is_some_and(|m| m.contains("is unreachable"))
        },
    )
    .await
    .expect("status.message says why");
    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[test]
fn manifests_grant_configmaps_and_crd_registration() {
    let documents = manifest_documents(
        env!("CARGO_BIN_EXE_exchange-rate"),
        &[
            "--namespace",
            "rates",
            "--",
            "--rates-url",
            "http://rates.rates.svc/latest",
        ],
    )
    .expect("manifests");
    let kinds: Vec<&str> = documents
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Service",
            "Service",
            "Deployment"
        ]
    );
    assert_eq!(
        documents[3]["rules"],
        json!([
            {"apiGroups": ["operators.brennerm.github.io"], "resources": ["exchangerates"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": ["operators.brennerm.github.io"], "resources": ["exchangerates/status"], "verbs": ["patch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"], "verbs": ["get", "create", "patch", "delete"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch", "create", "patch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "list", "watch", "patch", "delete"]},
        ])
    );
    // The validating handler is served through a Service, on the container's `webhooks` port.
    assert_eq!(documents[8]["metadata"]["name"], "exchange-rate-webhooks");
    assert_eq!(
        documents[8]["spec"]["ports"],
        json!([{"name": "webhooks", "port": 443, "targetPort": "webhooks"}])
    );
    let container = &documents[9]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["ports"],
        json!([{"name": "health", "containerPort": 8081}, {"name": "metrics", "containerPort": 8080},
               {"name": "webhooks", "containerPort": 9443}])
    );
    assert_eq!(
        container["args"],
        json!([
            "run",
            "-A",
            "--health-listen",
            "0.0.0.0:8081",
            "--metrics-listen",
            "0.0.0.0:8080",
            "--webhook-service",
            "rates/exchange-rate-webhooks",
            "--rates-url",
            "http://rates.rates.svc/latest"
        ])
    );
    assert_eq!(documents[9]["metadata"]["namespace"], "rates");
}

/// Kills the child process when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_rates_answers_like_the_real_api() {
    let child = Command::new(env!("CARGO_BIN_EXE_exchange-rate"))
        .args([
            "serve-rates",
            "--listen",
            "127.0.0.1:0",
            "--rate",
            "USD=1.1901",
            "--rate",
            "GBP=0.8602",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve-rates starts");
    let mut child = Running(child);
    let stdout = child.0.stdout.take().expect("stdout");
    let (lines, mut received) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        // Reads every line, so the child never writes to a closed pipe.
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let line = tokio::time::timeout(WAIT, received.recv())
        .await
        .expect("a first line")
        .expect("a line");
    assert!(
        line.starts_with("serving GBP, USD against EUR at http://127.0.0.1:"),
        "{line}"
    );
    let url = line.split(" at ").nth(1).expect("URL").trim().to_owned();

    let client = RatesClient::new(&url);
    let quote = client.fetch("usd").await.expect("USD quoted");
    assert_eq!(
        (
            quote.currency.as_str(),
            quote.rate.as_str(),
            quote.base.as_str()
        ),
        ("USD", "1.1901", "EUR")
    );
    match client.fetch("XYZ").await {
        Err(RatesError::UnknownCurrency { currency, message }) => {
            assert_eq!(currency, "XYZ");
            assert!(
                message.starts_with("Symbols 'XYZ' are invalid for date "),
                "{message}"
            );
        }
        other => panic!("expected an unknown currency, got {other:?}"),
    }
    assert!(matches!(
        client.fetch("US").await,
        Err(RatesError::InvalidCurrency(_))
    ));
}

/// A sample edited and applied again with kubectl, client-side and server-side: each
/// currency change reaches the object, the field handler and the ConfigMap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_sample_applied_again_with_kubectl_changes_the_currency() {
    let logs = capture_logs();
    let table = RateTable::new([rate("USD", 1.25), rate("GBP", 0.85), rate("CHF", 0.95)]);
    let url = rates_server(table).await;
    let cluster = TestCluster::start().await.expect("cluster starts");
    let running = start(&cluster, url, 3600).await;
    let kubectl = cluster.kubectl().expect("kubectl");
    let sample = samples().join("exchange-rate-gbp.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    assert_eq!(
        kubectl.apply(&text, false).await.expect("applied"),
        "exchangerate.operators.brennerm.github.io/exchange-rate-gbp created\n"
    );
    let rates: Api<ExchangeRate> = Api::namespaced(cluster.client(), "default");
    let rate_is = |expected: &'static str| {
        move |r: Option<&ExchangeRate>| status(r).rate.as_deref() == Some(expected)
    };
    wait_for(&rates, "exchange-rate-gbp", WAIT, rate_is("0.85"))
        .await
        .expect("create handler");

    for (currency, server_side, said, rate) in [
        ("USD", false, "configured", "1.25"),
        ("CHF", true, "serverside-applied", "0.95"),
    ] {
        let edited = kopr::testing::edited(
            &sample,
            &[("currency: GBP", &format!("currency: {currency}"))],
        )
        .expect("edit");
        assert_eq!(
            kubectl
                .apply(&edited, server_side)
                .await
                .expect("applied again"),
            format!("exchangerate.operators.brennerm.github.io/exchange-rate-gbp {said}\n")
        );
        logs.wait_for(
            &[
                &format!("Currency changed to {currency}"),
                "default/exchange-rate-gbp",
            ],
            WAIT,
        )
        .await
        .expect("field handler");
        let changed = wait_for(&rates, "exchange-rate-gbp", WAIT, rate_is(rate))
            .await
            .expect("status follows")
            .expect("exists");
        assert_eq!(changed.spec.currency, currency);
    }

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_is_refused_a_currency_that_is_not_an_iso_code() {
    let url = rates_server(RateTable::new([rate("USD", 1.1901)])).await;
    let cluster = TestCluster::start().await.expect("cluster starts");
    let running = start(&cluster, url, 3600).await;
    let kubectl = cluster.kubectl().expect("kubectl");
    let manifest = std::fs::read_to_string(samples().join("invalid/not-iso.yaml")).expect("sample");
    // The webhook is registered once the operator's startup (the CRD) is done.
    let mut refused = String::new();
    for _ in 0..200 {
        match kubectl.apply(&manifest, false).await {
            Err(e) => {
                refused = e.to_string();
                break;
            }
            Ok(_) => {
                kubectl
                    .run(&["delete", "exchangerate", "exchange-rate-abc"], None)
                    .await
                    .expect("deleted");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    assert!(
        refused.ends_with(
            "Error from server (Forbidden): error when creating \"STDIN\": admission webhook \"currency.exchangerates.operators.brennerm.github.io\" denied the request: spec.currency: \"ABC\" is not an ISO 4217 currency code\n"
        ),
        "{refused}"
    );
    // An ISO code is accepted.
    kubectl
        .apply(&manifest.replace("currency: ABC", "currency: USD"), false)
        .await
        .expect("USD accepted");
    running.stop().await.expect("stops");
    cluster.shutdown().await;
}
