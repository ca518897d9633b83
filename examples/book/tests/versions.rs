//! The Book at two versions against an in-process API server: the operator's conversion
//! webhook converts between `v1` (one author) and `v2` (authors, stored), through kube-rs
//! and kubectl; the handlers see `v2` whichever version a client wrote; a conversion the
//! author refuses and a webhook that is down reach the client as kube-apiserver's errors.

use std::time::Duration;

use book::{Book, READY, v1};
use kopr::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopr::kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kopr::testing::{RunningOperator, TestCluster, wait_for};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

async fn started() -> (TestCluster, RunningOperator) {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let operator = book::operator();
    operator
        .install_crds(&cluster.client())
        .await
        .expect("CRDs install");
    let mut running = cluster
        .run_as_service_account(operator, &kopr::manifests::Manifests::new("book"))
        .await
        .expect("runs as its ServiceAccount");
    running.webhooks_ready().await;
    (cluster, running)
}

fn v1_book(name: &str, author: &str, title: &str) -> v1::Book {
    serde_json::from_value(
        json!({"apiVersion": "christianb93.github.com/v1", "kind": "Book",
        "metadata": {"name": name}, "spec": {"author": author, "title": title}}),
    )
    .expect("a v1 Book")
}

fn v2_book(name: &str, authors: &[&str], title: &str) -> Book {
    serde_json::from_value(
        json!({"apiVersion": "christianb93.github.com/v2", "kind": "Book",
        "metadata": {"name": name}, "spec": {"authors": authors, "title": title}}),
    )
    .expect("a v2 Book")
}

fn ready(book: Option<&Book>) -> bool {
    book.and_then(|b| b.status.as_ref()).is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == READY && c.status == "True")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn books_are_served_at_both_versions_and_stored_at_v2() {
    let (cluster, running) = started().await;
    let client = cluster.client();
    let at_v1: Api<v1::Book> = Api::namespaced(client.clone(), "default");
    let at_v2: Api<Book> = Api::namespaced(client.clone(), "default");

    // A v1 Book reads back at v2 with its author first.
    at_v1
        .create(
            &PostParams::default(),
            &v1_book("emma", "Jane Austen", "Emma"),
        )
        .await
        .expect("v1 Book created");
    let emma = at_v2.get("emma").await.expect("read at v2");
    assert_eq!(emma.spec.authors, ["Jane Austen"]);
    // The mutating handler saw it at v2 too.
    let label = emma.metadata.labels.as_ref().and_then(|l| l.get("author"));
    assert_eq!(label.map(String::as_str), Some("jane-austen"));

    // A v2 Book with two authors reads at v1 with the first.
    at_v2
        .create(
            &PostParams::default(),
            &v2_book(
                "good-omens",
                &["Terry Pratchett", "Neil Gaiman"],
                "Good Omens",
            ),
        )
        .await
        .expect("v2 Book created");
    let omens = at_v1.get("good-omens").await.expect("read at v1");
    assert_eq!(omens.spec.author, "Terry Pratchett");

    // A merge patch through v1 keeps both authors.
    at_v1
        .patch(
            "good-omens",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"title": "Good Omens (1990)"}})),
        )
        .await
        .expect("patched through v1");
    let omens = at_v2.get("good-omens").await.expect("read at v2");
    assert_eq!(omens.spec.authors, ["Terry Pratchett", "Neil Gaiman"]);
    assert_eq!(omens.spec.title, "Good Omens (1990)");

    // A list at v1 converts every item.
    let listed = at_v1.list(&ListParams::default()).await.expect("listed");
    let authors: Vec<&str> = listed
        .items
        .iter()
        .map(|b| b.spec.author.as_str())
        .collect();
    assert_eq!(authors, ["Jane Austen", "Terry Pratchett"]);

    // The CRD says what is stored.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds
        .get("books.christianb93.github.com")
        .await
        .expect("CRD");
    let stored = crd.status.and_then(|s| s.stored_versions);
    assert_eq!(stored, Some(vec!["v2".to_string()]));

    // Both become Ready: the handlers work on v2 whichever version was written.
    for name in ["emma", "good-omens"] {
        wait_for(&at_v2, name, WAIT, ready)
            .await
            .expect("Ready")
            .expect("exists");
    }

    // kubectl shows each version's columns.
    let kubectl = cluster.kubectl().expect("kubectl");
    let header = |table: &str| -> Vec<String> {
        table
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let table = kubectl
        .run(&["get", "books", "--sort-by=.metadata.name"], None)
        .await
        .expect("kubectl get books");
    assert_eq!(
        header(&table),
        ["NAME", "AUTHORS", "TITLE", "AGE"],
        "{table}"
    );
    assert!(table.contains("Neil Gaiman"), "{table}");
    let table = kubectl
        .run(
            &[
                "get",
                "books.v1.christianb93.github.com",
                "--sort-by=.metadata.name",
            ],
            None,
        )
        .await
        .expect("kubectl get books at v1");
    assert_eq!(
        header(&table),
        ["NAME", "AUTHOR", "TITLE", "AGE"],
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("good-omens") && l.contains("Terry Pratchett")),
        "{table}"
    );
    assert!(!table.contains("Neil Gaiman"), "{table}");

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_conversion_and_a_webhook_that_is_down_reach_the_client() {
    let (cluster, running) = started().await;
    let client = cluster.client();
    let at_v1: Api<v1::Book> = Api::namespaced(client.clone(), "default");
    let at_v2: Api<Book> = Api::namespaced(client.clone(), "default");
    at_v2
        .create(
            &PostParams::default(),
            &v2_book("anonymous", &[], "Beowulf"),
        )
        .await
        .expect("a v2 Book without authors");
    let failures = kopr::metrics::global().conversion_failures.get();

    // The author's TryFrom refuses: the API server answers 500 with its message.
    let refused = at_v1
        .get("anonymous")
        .await
        .expect_err("v1 cannot express it");
    let kopr::kube::Error::Api(status) = refused else {
        panic!("expected the API server's Status, got {refused:?}");
    };
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        "conversion webhook for christianb93.github.com/v2, Kind=Book failed: \
         Book \"anonymous\" has no author, which v1 cannot express"
    );
    assert!(kopr::metrics::global().conversion_failures.get() > failures);
    // A list at v1 fails as a whole; at v2 it needs no conversion.
    assert!(at_v1.list(&ListParams::default()).await.is_err());
    assert_eq!(
        at_v2
            .list(&ListParams::default())
            .await
            .expect("v2")
            .items
            .len(),
        1
    );

    // With the operator stopped, nothing answers at the registered URL.
    at_v2
        .create(
            &PostParams::default(),
            &v2_book("sagas", &["Snorri"], "Edda"),
        )
        .await
        .expect("created");
    running.stop().await.expect("operator stops cleanly");
    let down = at_v1.get("sagas").await.expect_err("the webhook is down");
    let kopr::kube::Error::Api(status) = down else {
        panic!("expected the API server's Status, got {down:?}");
    };
    assert_eq!((status.code, status.reason.as_str()), (500, ""));
    assert!(
        status.message.starts_with(
            "conversion webhook for christianb93.github.com/v2, Kind=Book failed: Post \"https://127.0.0.1:"
        ) && status.message.contains("/convert/books.christianb93.github.com?timeout=30s\""),
        "{}",
        status.message
    );
    // And nothing written through v1 is stored half-converted.
    assert!(
        at_v1
            .create(&PostParams::default(), &v1_book("lost", "Nobody", "Lost"))
            .await
            .is_err()
    );
    assert!(at_v2.get_opt("lost").await.expect("read").is_none());
    cluster.shutdown().await;
}
