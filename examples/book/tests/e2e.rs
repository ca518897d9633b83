//! The Book operator against an in-process API server: samples applied through
//! `kopr::apply`, the `Ready` condition and `observedGeneration` on create and update,
//! `kubectl wait --for=condition=Ready` and the printer columns, the invalid samples refused,
//! and the `manifests` RBAC.

use std::path::PathBuf;
use std::time::Duration;

use book::{Book, READY};
use kopr::kube::api::{Api, Patch, PatchParams};
use kopr::testing::{TestCluster, capture_logs, manifest_documents, refusals, wait_for};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

/// Whether `book` is Ready for its current generation.
fn ready_for_generation(book: &Book, generation: i64) -> bool {
    let Some(status) = &book.status else {
        return false;
    };
    status.observed_generation == Some(generation)
        && status.conditions.iter().any(|c| {
            c.type_ == READY && c.status == "True" && c.observed_generation == Some(generation)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn books_become_ready_and_follow_their_generation() {
    let logs = capture_logs();
    let cluster = TestCluster::start().await.expect("cluster starts");
    let client = cluster.client();
    let operator = book::operator();
    operator.install_crds(&client).await.expect("CRDs install");
    let mut running = cluster
        .run_as_service_account(operator, &kopr::manifests::Manifests::new("book"))
        .await
        .expect("runs as its ServiceAccount");
    running.webhooks_ready().await;

    let applied = kopr::apply::apply_paths(&client, &[samples()])
        .await
        .expect("samples load");
    let names: Vec<&str> = applied.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "david-copperfield",
            "good-omens",
            "bleak-house",
            "persuasion"
        ]
    );
    assert_eq!(
        applied[3].source.line, 10,
        "the second document of more-books.yaml"
    );
    for outcome in &applied {
        assert!(outcome.result.is_ok(), "{outcome}");
    }

    logs.wait_for(
        &[
            "Book: \"David Copperfield\" by Dickens",
            "default/david-copperfield",
        ],
        WAIT,
    )
    .await
    .expect("create handler");
    let books: Api<Book> = Api::namespaced(client.clone(), "default");
    let book = wait_for(&books, "david-copperfield", WAIT, |b: Option<&Book>| {
        b.is_some_and(|b| ready_for_generation(b, 1))
    })
    .await
    .expect("Ready for generation 1")
    .expect("exists");
    let condition = book
        .status
        .as_ref()
        .and_then(|s| s.conditions.first())
        .cloned()
        .expect("condition");
    assert_eq!(condition.reason, "Catalogued");
    assert_eq!(
        condition.message,
        "\"David Copperfield\" by Dickens is catalogued"
    );

    // kubectl sees what a user would: the condition to wait for, and the printer columns.
    let kubectl = cluster.kubectl().expect("kubectl");
    let said = kubectl
        .run(
            &[
                "wait",
                "--for=condition=Ready",
                "book/persuasion",
                "--timeout=20s",
            ],
            None,
        )
        .await
        .expect("kubectl wait");
    assert_eq!(
        said.trim(),
        "book.christianb93.github.com/persuasion condition met"
    );
    let table = kubectl
        .run(&["get", "books", "--sort-by=.metadata.name"], None)
        .await
        .expect("kubectl get");
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "AUTHORS", "TITLE", "AGE"], "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("persuasion")
            && l.contains("Austen")
            && l.contains("Persuasion")),
        "{table}"
    );

    // A change of the spec is a new generation, observed and reported again.
    let change =
        Patch::Merge(json!({"spec": {"title": "David Copperfield, the Personal History"}}));
    books
        .patch("david-copperfield", &PatchParams::default(), &change)
        .await
        .expect("patched");
    logs.wait_for(
        &["Update: \"David Copperfield, the Personal History\" by Dickens"],
        WAIT,
    )
    .await
    .expect("update handler");
    let updated = wait_for(&books, "david-copperfield", WAIT, |b: Option<&Book>| {
        b.is_some_and(|b| ready_for_generation(b, 2))
    })
    .await
    .expect("Ready for generation 2")
    .expect("exists");
    let after = updated
        .status
        .as_ref()
        .and_then(|s| s.conditions.first())
        .cloned()
        .expect("condition");
    assert_eq!(
        after.message,
        "\"David Copperfield, the Personal History\" by Dickens is catalogued"
    );
    assert_eq!(
        after.last_transition_time, condition.last_transition_time,
        "still Ready: no transition"
    );

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_books_are_refused_by_the_schema() {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let client = cluster.client();
    book::operator()
        .install_crds(&client)
        .await
        .expect("CRDs install");
    let errors = refusals(&client, samples().join("invalid"))
        .await
        .expect("every invalid sample refused");
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].contains("moby-dick.yaml:4: Book moby-dick:"),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].contains("spec.author: Required value")
            && errors[0].contains("spec.title: Required value"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("wrong-type.yaml:3: Book wrong-type:"),
        "{}",
        errors[1]
    );
    assert!(
        errors[1].contains("spec.author") && errors[1].contains("must be of type string"),
        "{}",
        errors[1]
    );
    let books: Api<Book> = Api::namespaced(client, "default");
    assert!(
        books
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
    let documents = manifest_documents(env!("CARGO_BIN_EXE_book"), &[]).expect("manifests");
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
            "Service",
            "Deployment"
        ]
    );
    let rules = &documents[2]["rules"];
    assert_eq!(
        rules,
        &json!([
            {"apiGroups": ["christianb93.github.com"], "resources": ["books"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": ["christianb93.github.com"], "resources": ["books/status"], "verbs": ["patch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"], "verbs": ["get", "create", "patch", "delete"]},
            // The webhook server registers its CA as the conversion's caBundle.
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch", "patch"]},
        ])
    );
    // Both versions, v2 stored, converted by the webhook server behind its Service.
    let crd = &documents[0];
    let versions: Vec<(&str, bool)> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| (v["name"].as_str().unwrap_or(""), v["storage"] == true))
        .collect();
    assert_eq!(versions, [("v2", true), ("v1", false)]);
    assert_eq!(
        crd["spec"]["conversion"],
        json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "default", "name": "book-webhooks",
                "path": "/convert/books.christianb93.github.com", "port": 443}},
            "conversionReviewVersions": ["v1", "v1beta1"]}})
    );
    // The mutating handler is served through the Service.
    assert_eq!(documents[7]["metadata"]["name"], "book-webhooks");
    let container = &documents[8]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "book:latest");
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
            "default/book-webhooks"
        ])
    );
}

/// A sample edited and applied again with kubectl, client-side and server-side: each change
/// reaches the object, the update handler and the Ready condition of the new generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_sample_applied_again_with_kubectl_is_recatalogued() {
    let logs = capture_logs();
    let cluster = TestCluster::start().await.expect("cluster starts");
    let client = cluster.client();
    let operator = book::operator();
    operator.install_crds(&client).await.expect("CRDs install");
    let mut running = cluster
        .run_as_service_account(operator, &kopr::manifests::Manifests::new("book"))
        .await
        .expect("runs as its ServiceAccount");
    running.webhooks_ready().await;
    let kubectl = cluster.kubectl().expect("kubectl");
    let books: Api<Book> = Api::namespaced(client.clone(), "default");
    let sample = samples().join("david-copperfield.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    assert_eq!(
        kubectl.apply(&text, false).await.expect("applied"),
        "book.christianb93.github.com/david-copperfield created\n"
    );
    wait_for(&books, "david-copperfield", WAIT, |b: Option<&Book>| {
        b.is_some_and(|b| ready_for_generation(b, 1))
    })
    .await
    .expect("ready");

    for (generation, title, server_side, said) in [
        (2, "Great Expectations", false, "configured"),
        (3, "Hard Times", true, "serverside-applied"),
    ] {
        let edited = kopr::testing::edited(
            &sample,
            &[("title: David Copperfield", &format!("title: {title}"))],
        )
        .expect("edit");
        assert_eq!(
            kubectl
                .apply(&edited, server_side)
                .await
                .expect("applied again"),
            format!("book.christianb93.github.com/david-copperfield {said}\n")
        );
        logs.wait_for(&[&format!("Update: \"{title}\" by Dickens")], WAIT)
            .await
            .expect("update handler");
        let book = wait_for(
            &books,
            "david-copperfield",
            WAIT,
            move |b: Option<&Book>| b.is_some_and(|b| ready_for_generation(b, generation)),
        )
        .await
        .expect("ready for the new generation")
        .expect("exists");
        assert_eq!(book.spec.title, title);
    }

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_finds_books_by_the_author_label_the_mutating_handler_sets() {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let operator = book::operator();
    cluster.install_crd(&operator.crds()[0]).await.expect("crd");
    let mut running = cluster
        .run_as_service_account(operator, &kopr::manifests::Manifests::new("book"))
        .await
        .expect("runs as its ServiceAccount");
    running.webhooks_ready().await;
    let configurations: Api<kopr::kube::api::DynamicObject> = Api::all_with(
        cluster.client(),
        &kopr::webhooks::configuration_resource(true),
    );
    wait_for(
        &configurations,
        "kopr",
        WAIT,
        |c: Option<&kopr::kube::api::DynamicObject>| c.is_some(),
    )
    .await
    .expect("the mutating handler is registered");
    let kubectl = cluster.kubectl().expect("kubectl");
    let manifest =
        std::fs::read_to_string(samples().join("david-copperfield.yaml")).expect("sample");
    kubectl.apply(&manifest, false).await.expect("applied");
    let found = kubectl
        .run(
            &["get", "books", "-l", "author=dickens", "-o", "name"],
            None,
        )
        .await
        .expect("kubectl get");
    assert_eq!(found, "book.christianb93.github.com/david-copperfield\n");
    // A new author, a new label, in the same write.
    let edited = manifest.replace("author: Dickens", "author: Charles Dickens");
    kubectl.apply(&edited, false).await.expect("applied again");
    let label = kubectl
        .run(
            &[
                "get",
                "book",
                "david-copperfield",
                "-o",
                "jsonpath={.metadata.labels.author}",
            ],
            None,
        )
        .await
        .expect("kubectl get");
    assert_eq!(label, "charles-dickens");
    running.stop().await.expect("stops");
}
