//! Three `greeting run --shards` processes against one cluster: they split the Greetings
//! (each greeted exactly once, by the owner of its shard), survive `kill -9` of one (its
//! shards taken over once its member Lease expired, nothing greeted twice) and a SIGTERM of
//! another (its shards handed over at once, exit code 0).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use greeting::{Greeting, operator};
use k8s_openapi::api::coordination::v1::Lease;
use kopr::kube::api::{Api, PostParams};
use kopr::testing::TestCluster;
use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_greeting");

/// Who greeted what: (replica, message) for every `Greeting:` line.
type Greeted = Arc<Mutex<Vec<(String, String)>>>;

fn replica(identity: &str, kubeconfig: &std::path::Path, greeted: &Greeted) -> Child {
    let mut child = Command::new(BINARY)
        .args(["run", "-A", "--kubeconfig"])
        .arg(kubeconfig)
        .args([
            "--shards",
            "--identity",
            identity,
            "--lease-namespace",
            "default",
        ])
        .args([
            "--lease-duration",
            "3",
            "--renew-deadline",
            "2",
            "--retry-period",
            "0.2",
        ])
        .args(["--log-format", "json"])
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("greeting run starts");
    let stderr = child.stderr.take().expect("stderr");
    let (greeted, me) = (greeted.clone(), identity.to_string());
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let Ok(parsed) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if let Some(text) = parsed
                .pointer("/fields/message")
                .and_then(Value::as_str)
                .and_then(|m| m.strip_prefix("Greeting: "))
            {
                greeted.lock().unwrap().push((me.clone(), text.to_string()));
            }
        }
    });
    child
}

/// Waits until the shard map gives each shard to the member rendezvous hashing picks.
async fn settled(cluster: &TestCluster, members: &[&str]) -> Vec<String> {
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let members: Vec<String> = members.iter().map(|m| m.to_string()).collect();
    let wanted = kopr::shards::assign(64, &members);
    let owners = |lease: Option<&Lease>| -> Option<Vec<String>> {
        let text = lease?
            .metadata
            .annotations
            .as_ref()?
            .get(kopr::shards::OWNERS_ANNOTATION)?;
        let map: Value = serde_json::from_str(text).ok()?;
        serde_json::from_value(map["owners"].clone()).ok()
    };
    let check = wanted.clone();
    kopr::testing::wait_for(
        &leases,
        "greeting-shards",
        Duration::from_secs(60),
        move |lease: Option<&Lease>| owners(lease).as_ref() == Some(&check),
    )
    .await
    .unwrap_or_else(|e| panic!("the shard map did not settle on {members:?}: {e}"));
    wanted
}

async fn create(api: &Api<Greeting>, names: &[String]) {
    for name in names {
        let greeting = serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Greeting",
            "metadata": {"name": name}, "spec": {"message": name}
        }))
        .expect("greeting");
        api.create(&PostParams::default(), &greeting)
            .await
            .expect("created");
    }
}

/// Waits until every named Greeting's create handler result landed (`status.greet`) and its
/// cause is closed (the diff base written); returns who greeted each, checking once each.
async fn greeted_once(
    api: &Api<Greeting>,
    names: &[String],
    greeted: &Greeted,
) -> BTreeMap<String, String> {
    for name in names {
        let closed = kopr::testing::wait_for(
            api,
            name,
            Duration::from_secs(60),
            |g: Option<&Greeting>| {
                g.and_then(|g| g.metadata.annotations.as_ref())
                    .is_some_and(|a| a.contains_key("greeting.kopr.dev/last-handled-configuration"))
            },
        );
        closed
            .await
            .unwrap_or_else(|e| panic!("{name} was not greeted: {e}"));
    }
    let lines = greeted.lock().unwrap().clone();
    names
        .iter()
        .map(|name| {
            let by: Vec<&String> = lines
                .iter()
                .filter(|(_, m)| m == name)
                .map(|(r, _)| r)
                .collect();
            assert_eq!(by.len(), 1, "{name} greeted {} times: {by:?}", by.len());
            (name.clone(), by[0].clone())
        })
        .collect()
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Stops the replica with SIGTERM and checks that it exits cleanly.
async fn terminate(mut child: Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sharded_replicas_split_the_work_and_survive_losing_one() {
    let cluster = TestCluster::start().await.expect("cluster");
    for crd in operator(&Default::default()).crds() {
        cluster.install_crd(&crd).await.expect("crd");
    }
    let dir = std::env::temp_dir().join(format!("greeting-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig_yaml()).expect("kubeconfig");
    let greeted = Greeted::default();
    let g0 = replica("g0", &kubeconfig, &greeted);
    let mut g1 = replica("g1", &kubeconfig, &greeted);
    let g2 = replica("g2", &kubeconfig, &greeted);
    let owners = settled(&cluster, &["g0", "g1", "g2"]).await;

    let api: Api<Greeting> = Api::namespaced(cluster.client(), "default");
    let first = names("first", 60);
    create(&api, &first).await;
    let by = greeted_once(&api, &first, &greeted).await;
    for (name, replica) in &by {
        let shard = kopr::shards::shard_of(Some("default"), name, 64) as usize;
        assert_eq!(
            &owners[shard], replica,
            "{name} greeted by its shard's owner"
        );
    }
    let mut share: BTreeMap<&String, usize> = BTreeMap::new();
    for replica in by.values() {
        *share.entry(replica).or_default() += 1;
    }
    assert_eq!(share.len(), 3, "every replica greeted some: {share:?}");

    // kill -9: g1's shards go to the others once its member Lease expired.
    g1.kill().expect("kill -9");
    let _ = g1.wait();
    settled(&cluster, &["g0", "g2"]).await;
    let second = names("second", 30);
    create(&api, &second).await;
    let by = greeted_once(&api, &second, &greeted).await;
    assert!(by.values().all(|r| r == "g0" || r == "g2"));
    // Nothing greeted again after the takeover.
    greeted_once(&api, &first, &greeted).await;

    // SIGTERM: g0 hands its shards over at once and exits cleanly.
    terminate(g0).await;
    settled(&cluster, &["g2"]).await;
    let third = names("third", 10);
    create(&api, &third).await;
    assert!(
        greeted_once(&api, &third, &greeted)
            .await
            .values()
            .all(|r| r == "g2")
    );
    greeted_once(&api, &second, &greeted).await;
    terminate(g2).await;
    let _ = std::fs::remove_dir_all(&dir);
    cluster.shutdown().await;
}
