//! Durability: every write acknowledged before `kill -9` is there after a
//! restart, and resourceVersions keep increasing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::Server;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};

async fn client(server: &Server) -> kube::Client {
    let yaml = std::fs::read_to_string(&server.kubeconfig).unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &[]);
    let c = client(&server).await;
    let acked: Arc<Mutex<BTreeMap<String, i64>>> = Arc::default();
    let mut writers = Vec::new();
    for w in 0..16 {
        let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
        let acked = acked.clone();
        writers.push(tokio::spawn(async move {
            for i in 0.. {
                let name = format!("w{w}-{i}");
                let cm: ConfigMap = serde_json::from_value(
                    serde_json::json!({"metadata": {"name": name}, "data": {"i": i.to_string()}}),
                )
                .unwrap();
                match api.create(&PostParams::default(), &cm).await {
                    Ok(created) => {
                        let rv = created.metadata.resource_version.unwrap().parse().unwrap();
                        acked.lock().unwrap().insert(name, rv);
                    }
                    Err(_) => return,
                }
            }
        }));
    }
    // Let the load build up, then kill the server without warning.
    while acked.lock().unwrap().len() < 300 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.kill9();
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 300);

    let server = Server::start(dir.path(), &[]);
    let c = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(c, "default");
    let stored = api.list(&ListParams::default()).await.unwrap();
    let present: BTreeMap<String, i64> = stored
        .items
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap(),
                cm.metadata
                    .resource_version
                    .clone()
                    .unwrap()
                    .parse()
                    .unwrap(),
            )
        })
        .collect();
    for (name, rv) in &acked {
        assert_eq!(
            present.get(name),
            Some(rv),
            "acknowledged write {name} at {rv} survives"
        );
    }
    let max_acked = acked.values().max().copied().unwrap();
    let after = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "after"}})).unwrap(),
        )
        .await
        .unwrap();
    let rv: i64 = after.metadata.resource_version.unwrap().parse().unwrap();
    assert!(
        rv > max_acked,
        "resourceVersion {rv} after restart exceeds every acknowledged one ({max_acked})"
    );
}

/// One server per data directory: a second one refuses, naming the directory and the
/// holder's pid and address, and the first keeps its data; the files are private.
#[test]
fn a_data_directory_serves_one_server_at_a_time() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut first = Server::start(&data, &[]);
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args(["apiserver", "--data-dir"])
        .arg(&data)
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("kopr runs");
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    let expected = format!(
        "data directory {} is in use by another kopr apiserver (pid {}, {})",
        data.display(),
        first.child.id(),
        first.url
    );
    assert!(said.contains(&expected), "{said}");
    // The first server still serves, and its kubeconfig was not overwritten.
    assert_eq!(
        first.ok(&["get", "namespace", "default", "-o", "name"]),
        "namespace/default\n"
    );
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, "the data directory is private");
    assert_eq!(
        mode(&data.join("state.db")),
        0o600,
        "the database is private"
    );
    first.kill9();
    // Once the holder is gone, the directory can be taken again.
    let again = Server::start(&data, &[]);
    assert_eq!(
        again.ok(&["get", "namespace", "default", "-o", "name"]),
        "namespace/default\n"
    );
}
