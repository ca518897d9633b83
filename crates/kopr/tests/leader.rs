//! Leader election through the embedded API server: of two replicas one handles objects and
//! the other stands by; after the leader crashes the standby takes over once the lease
//! expires, after a graceful stop at once (the lease is released), and a leader that cannot
//! renew stops handling and reports the loss. Every object is handled exactly once.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use k8s_openapi::api::coordination::v1::Lease;
use kopr::kube::api::Api;
use kopr::leader::LeaderElection;
use kopr::{Context, HandlerResult, Operator, Resource};

/// Which replica handled which widget, in order.
type Log = Arc<Mutex<Vec<(String, String)>>>;

fn election(identity: &str, lease: Duration) -> LeaderElection {
    LeaderElection::new("widgets-op")
        .namespace("default")
        .identity(identity)
        .lease_duration(lease)
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(200))
}

fn replica(identity: &str, lease: Duration, log: &Log) -> Operator {
    let (log, me) = (log.clone(), identity.to_string());
    let record = kopr::Handler::new(move |ctx: Context<Widget>| {
        let (log, me) = (log.clone(), me.clone());
        async move {
            log.lock().unwrap().push((ctx.name().to_string(), me));
            HandlerResult::Ok(())
        }
    })
    .id("record");
    Operator::new()
        .resource(Resource::<Widget>::custom().on_create(record))
        .leader_election(election(identity, lease))
}

async fn holder_is(cluster: &kopr::testing::TestCluster, identity: &str) {
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let wanted = identity.to_string();
    let held = kopr::kube::runtime::wait::await_condition(
        leases,
        "widgets-op",
        move |l: Option<&Lease>| {
            l.and_then(|l| l.spec.as_ref())
                .and_then(|s| s.holder_identity.as_deref())
                == Some(wanted.as_str())
        },
    );
    tokio::time::timeout(Duration::from_secs(30), held)
        .await
        .unwrap_or_else(|_| panic!("{identity} did not come to hold the lease"))
        .unwrap();
}

/// Creates `names` and waits until each was handled.
async fn handled(api: &Api<Widget>, names: &[String]) {
    for name in names {
        create_widget(api, name, "m").await;
    }
    for name in names {
        wait_widget(api, name, |w| {
            w.pointer("/metadata/annotations")
                .and_then(|a| a.as_object())
                .is_some_and(|a| a.keys().any(|k| k.ends_with("last-handled-configuration")))
        })
        .await;
    }
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn exactly_once(log: &Log, names: &[String]) -> Vec<String> {
    let log = log.lock().unwrap();
    names
        .iter()
        .map(|name| {
            let by: Vec<&String> = log
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, r)| r)
                .collect();
            assert_eq!(by.len(), 1, "{name} handled {} times: {by:?}", by.len());
            by[0].clone()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_takes_over_after_the_leader_crashes() {
    let cluster = cluster().await;
    let log = Log::default();
    let a = cluster.run(replica("a", Duration::from_secs(3), &log));
    holder_is(&cluster, "a").await;
    let b = cluster.run(replica("b", Duration::from_secs(3), &log));
    let api = widgets(&cluster, "default");
    let first = names("first-", 10);
    handled(&api, &first).await;
    assert!(
        exactly_once(&log, &first).iter().all(|r| r == "a"),
        "the standby handled nothing"
    );

    a.kill().await;
    holder_is(&cluster, "b").await;
    let second = names("second-", 10);
    handled(&api, &second).await;
    assert!(exactly_once(&log, &second).iter().all(|r| r == "b"));
    // The new leader saw the first objects and ran nothing again.
    exactly_once(&log, &first);
    b.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_leader_releases_the_lease_for_the_standby() {
    let cluster = cluster().await;
    let log = Log::default();
    // A lease far longer than the test waits: only a release lets the standby in.
    let lease = Duration::from_secs(3600);
    let a = cluster.run(replica("a", lease, &log));
    holder_is(&cluster, "a").await;
    let b = cluster.run(replica("b", lease, &log));
    let api = widgets(&cluster, "default");
    handled(&api, &names("before-", 5)).await;
    a.stop().await.unwrap();
    holder_is(&cluster, "b").await;
    let after = names("after-", 5);
    handled(&api, &after).await;
    assert!(exactly_once(&log, &after).iter().all(|r| r == "b"));
    b.stop().await.unwrap();
    // The last leader released the lease too.
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let spec = leases.get("widgets-op").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity, None);
    assert_eq!(spec.lease_transitions, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_stops_handling() {
    let cluster = cluster().await;
    let log = Log::default();
    let proxy = lease_outage(&cluster).await;
    let a = cluster.run_through(replica("a", Duration::from_secs(3), &log), &proxy);
    holder_is(&cluster, "a").await;
    // Every lease request now fails: past the renew deadline the leader gives up.
    proxy.set_enabled(true);
    let ended = a.stop_after_exit().await;
    assert!(
        matches!(ended, Err(kopr::Error::LeadershipLost(ref who)) if who == "a"),
        "{ended:?}"
    );
}
