//! Sharding through the embedded API server: replicas split the objects by shard, each object
//! handled by one replica at a time, exactly once per cause; a replica killed mid-way has its
//! shards taken over after its member Lease expires, with no succeeded handler run again; a
//! replica joining takes only its share; a replica stopping hands its shards over at once; and
//! one that cannot renew its member Lease stops.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kopr::kube::api::{Api, ListParams, Patch, PatchParams};
use kopr::kube::runtime::watcher;
use kopr::leader::LeaderElection;
use kopr::shards::{MEMBER_LABEL, OWNERS_ANNOTATION, Sharding};
use kopr::testing::TestCluster;
use kopr::{Context, HandlerResult, Operator, Resource};
use serde_json::{Value, json};
use tokio::time::Instant;

const OPERATOR: &str = "widgets-op";

/// The tests of this file run one at a time: each runs a cluster and up to three replicas,
/// and five of them at once on two cores starve renewals past their deadline.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
const SHARDS: u32 = 32;

/// One handler run: which object, which replica, which cause, and when it entered and left.
#[derive(Debug, Clone)]
struct Run {
    object: String,
    replica: String,
    cause: &'static str,
    entered: Instant,
    left: Option<Instant>,
}

#[derive(Clone, Default)]
struct Log {
    runs: Arc<Mutex<Vec<Run>>>,
    /// Told when a replica enters an update handler.
    updating: Arc<tokio::sync::Notify>,
}

impl Log {
    fn runs(&self) -> Vec<Run> {
        self.runs.lock().unwrap().clone()
    }
}

fn sharding(identity: &str, lease: Duration) -> Sharding {
    Sharding::new(
        LeaderElection::new(OPERATOR)
            .namespace("default")
            .identity(identity)
            .lease_duration(lease)
            // Two thirds of the lease, as kube's defaults (15 s, 10 s).
            .renew_deadline(lease * 2 / 3)
            .retry_period(Duration::from_millis(200)),
    )
    .count(SHARDS)
}

/// A handler that records its entry and exit, and works a little in between, so that two
/// replicas running it at once for one object would show as overlapping runs.
fn recording(log: &Log, me: &str, cause: &'static str) -> kopr::Handler<Widget> {
    let (log, me) = (log.clone(), me.to_string());
    kopr::Handler::new(move |ctx: Context<Widget>| {
        let (log, me) = (log.clone(), me.clone());
        async move {
            let index = {
                let mut runs = log.runs.lock().unwrap();
                runs.push(Run {
                    object: ctx.name().to_string(),
                    replica: me,
                    cause,
                    entered: Instant::now(),
                    left: None,
                });
                runs.len() - 1
            };
            if cause == "update" {
                log.updating.notify_waiters();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            log.runs.lock().unwrap()[index].left = Some(Instant::now());
            HandlerResult::Ok(())
        }
    })
    .id(cause)
}

fn replica(identity: &str, lease: Duration, log: &Log) -> Operator {
    Operator::new()
        .resource(
            Resource::<Widget>::custom()
                .on_create(recording(log, identity, "create"))
                .on_update(recording(log, identity, "update")),
        )
        .sharding(sharding(identity, lease))
}

/// The shard map's owners, once it exists.
fn owners(lease: Option<&Lease>) -> Option<Vec<String>> {
    let text = lease?
        .metadata
        .annotations
        .as_ref()?
        .get(OWNERS_ANNOTATION)?;
    let map: Value = serde_json::from_str(text).ok()?;
    serde_json::from_value(map.get("owners")?.clone()).ok()
}

/// Waits until the map gives each shard to the owner rendezvous hashing picks among
/// `members`: every handover done.
async fn settled(cluster: &TestCluster, members: &[&str]) -> Vec<String> {
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let members: Vec<String> = members.iter().map(|m| m.to_string()).collect();
    let wanted = kopr::shards::assign(SHARDS, &members);
    let check = wanted.clone();
    let found = kopr::testing::wait_for(
        &leases,
        &format!("{OPERATOR}-shards"),
        Duration::from_secs(30),
        move |lease: Option<&Lease>| owners(lease).is_some_and(|owners| owners == check),
    )
    .await;
    match found {
        Ok(lease) => owners(lease.as_ref()).unwrap(),
        Err(error) => panic!("the shard map did not settle on {members:?}: {error}"),
    }
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Waits until every named widget's diff base shows `message`: its last cause fully handled.
async fn handled(api: &Api<Widget>, names: &[String], message: &str) {
    let wanted: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let needle = format!("\"message\":\"{message}\"");
    let mut done: BTreeSet<String> = BTreeSet::new();
    let stream = watcher(api.clone(), watcher::Config::default());
    futures::pin_mut!(stream);
    let deadline = Instant::now() + Duration::from_secs(60);
    while done.len() < wanted.len() {
        let event = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| {
                let missing: Vec<_> = wanted.iter().filter(|n| !done.contains(**n)).collect();
                panic!(
                    "not handled within 60 s: {} of them, e.g. {:?}",
                    missing.len(),
                    &missing[..missing.len().min(5)]
                )
            });
        let widget = match event {
            Some(Ok(watcher::Event::Apply(w) | watcher::Event::InitApply(w))) => w,
            Some(_) => continue,
            None => panic!("the watch ended"),
        };
        let name = widget.metadata.name.clone().unwrap_or_default();
        let base = widget
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kopr.dev/last-handled-configuration"))
            .cloned()
            .unwrap_or_default();
        if wanted.contains(name.as_str()) && base.contains(&needle) {
            done.insert(name);
        }
    }
}

async fn create_all(api: &Api<Widget>, names: &[String]) {
    let creates = names.iter().map(|name| create_widget(api, name, "m1"));
    futures::future::join_all(creates).await;
}

async fn update_all(api: &Api<Widget>, names: &[String], message: &str) {
    let patch = json!({"spec": {"message": message}});
    let updates = names.iter().map(|name| {
        let patch = patch.clone();
        async move {
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .expect("widget patched");
        }
    });
    futures::future::join_all(updates).await;
}

/// Who ran `cause` for each object (in order of entry).
fn runs_by_object(log: &Log, cause: &str) -> BTreeMap<String, Vec<Run>> {
    let mut by: BTreeMap<String, Vec<Run>> = BTreeMap::new();
    for run in log.runs().into_iter().filter(|r| r.cause == cause) {
        by.entry(run.object.clone()).or_default().push(run);
    }
    by
}

/// Each named object ran `cause` exactly once, to the end; returns who ran each.
fn exactly_once(log: &Log, names: &[String], cause: &str) -> BTreeMap<String, String> {
    let by = runs_by_object(log, cause);
    names
        .iter()
        .map(|name| {
            let runs = by.get(name).cloned().unwrap_or_default();
            assert_eq!(
                runs.len(),
                1,
                "{name}: {cause} ran {} times: {runs:?}",
                runs.len()
            );
            assert!(runs[0].left.is_some(), "{name}: {cause} never finished");
            (name.clone(), runs[0].replica.clone())
        })
        .collect()
}

/// No two replicas ran handlers of one object at the same time. A run cut by a kill ends at
/// the kill.
fn never_concurrent(log: &Log, killed: &HashMap<String, Instant>) {
    let mut by: BTreeMap<String, Vec<Run>> = BTreeMap::new();
    for run in log.runs() {
        by.entry(run.object.clone()).or_default().push(run);
    }
    for (object, mut runs) in by {
        runs.sort_by_key(|r| r.entered);
        for pair in runs.windows(2) {
            let (first, second) = (&pair[0], &pair[1]);
            let end = first
                .left
                .or_else(|| killed.get(&first.replica).copied())
                .unwrap_or_else(|| panic!("{object}: a run by {} never ended", first.replica));
            assert!(
                end <= second.entered,
                "{object}: {} ran {} while {} still ran {}",
                second.replica,
                second.cause,
                first.replica,
                first.cause
            );
        }
    }
}

fn share(handled_by: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut share = BTreeMap::new();
    for replica in handled_by.values() {
        *share.entry(replica.clone()).or_default() += 1;
    }
    share
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_split_three_hundred_objects_each_handled_exactly_once() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = cluster().await;
    let log = Log::default();
    // Long enough that a replica on a loaded 2-core CI machine still renews in time.
    let lease = Duration::from_secs(6);
    let replicas: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|id| cluster.run(replica(id, lease, &log)))
        .collect();
    settled(&cluster, &["a", "b", "c"]).await;
    let api = widgets(&cluster, "default");
    let objects = names("w-", 300);
    create_all(&api, &objects).await;
    handled(&api, &objects, "m1").await;
    let by = exactly_once(&log, &objects, "create");
    let share = share(&by);
    assert_eq!(share.len(), 3, "every replica handled some: {share:?}");
    assert!(share.values().all(|n| *n >= 30), "a fair split: {share:?}");
    // Each object was handled by the owner of its shard.
    let owners = settled(&cluster, &["a", "b", "c"]).await;
    for (object, replica) in &by {
        let shard = kopr::shards::shard_of(Some("default"), object, SHARDS) as usize;
        assert_eq!(&owners[shard], replica, "{object} in shard {shard}");
    }
    never_concurrent(&log, &HashMap::new());
    for running in replicas {
        running.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_s_shards_are_taken_over_after_its_lease_expires() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = cluster().await;
    let log = Log::default();
    // Long enough that a replica on a loaded 2-core CI machine still renews in time.
    let lease = Duration::from_secs(6);
    let a = cluster.run(replica("a", lease, &log));
    let b = cluster.run(replica("b", lease, &log));
    let c = cluster.run(replica("c", lease, &log));
    settled(&cluster, &["a", "b", "c"]).await;
    let api = widgets(&cluster, "default");
    let objects = names("w-", 300);
    create_all(&api, &objects).await;
    handled(&api, &objects, "m1").await;
    let created_by = exactly_once(&log, &objects, "create");

    // Kill b while it runs update handlers.
    let b_updating = {
        let log = log.clone();
        async move {
            loop {
                let notified = log.updating.notified();
                if log
                    .runs()
                    .iter()
                    .any(|r| r.replica == "b" && r.cause == "update")
                {
                    return;
                }
                notified.await;
            }
        }
    };
    let updates = update_all(&api, &objects, "m2");
    let (_, ()) = tokio::join!(updates, b_updating);
    b.kill().await;
    let killed = HashMap::from([("b".to_string(), Instant::now())]);
    settled(&cluster, &["a", "c"]).await;
    handled(&api, &objects, "m2").await;

    // No succeeded handler ran again: creates stayed once each.
    exactly_once(&log, &objects, "create");
    // Every update ran to the end once; a second run only where b was cut off by the kill.
    let by = runs_by_object(&log, "update");
    for name in &objects {
        let runs = by.get(name).cloned().unwrap_or_default();
        let finished: Vec<&Run> = runs.iter().filter(|r| r.left.is_some()).collect();
        assert!(
            !finished.is_empty(),
            "{name}: its update never finished: {runs:?}"
        );
        for run in &runs[..runs.len() - 1] {
            assert_eq!(
                run.replica, "b",
                "{name}: only the killed replica's run may repeat: {runs:?}"
            );
        }
    }
    never_concurrent(&log, &killed);

    // b's objects are now a's and c's: their next change is handled there, once.
    log.runs.lock().unwrap().clear();
    update_all(&api, &objects, "m3").await;
    handled(&api, &objects, "m3").await;
    let updated_by = exactly_once(&log, &objects, "update");
    let taken_over = objects
        .iter()
        .filter(|name| created_by[*name] == "b")
        .inspect(|name| assert_ne!(updated_by[*name], "b"))
        .count();
    assert!(taken_over >= 30, "b had its share: {taken_over}");
    assert!(
        log.runs().iter().all(|r| r.cause == "update"),
        "no create ran again"
    );
    // The dead member's Lease is cleaned up.
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let members = leases
        .list(&ListParams::default().labels(&format!("{MEMBER_LABEL}={OPERATOR}")))
        .await
        .unwrap();
    let holders: BTreeSet<String> = members
        .items
        .iter()
        .filter_map(|l| l.spec.as_ref()?.holder_identity.clone())
        .collect();
    assert!(!holders.contains("b"), "{holders:?}");
    a.stop().await.unwrap();
    c.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_replica_takes_only_its_share_while_objects_change() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = cluster().await;
    let log = Log::default();
    // Long enough that a replica on a loaded 2-core CI machine still renews in time.
    let lease = Duration::from_secs(6);
    let a = cluster.run(replica("a", lease, &log));
    let b = cluster.run(replica("b", lease, &log));
    let before = settled(&cluster, &["a", "b"]).await;
    let api = widgets(&cluster, "default");
    let objects = names("w-", 200);
    create_all(&api, &objects).await;
    handled(&api, &objects, "m1").await;
    exactly_once(&log, &objects, "create");

    // The third joins while every object changes: shards move mid-way.
    let c = cluster.run(replica("c", lease, &log));
    update_all(&api, &objects, "m2").await;
    let after = settled(&cluster, &["a", "b", "c"]).await;
    handled(&api, &objects, "m2").await;
    let moved: Vec<usize> = (0..before.len())
        .filter(|&i| before[i] != after[i])
        .collect();
    assert!(
        moved.iter().all(|&i| after[i] == "c"),
        "only shards going to the newcomer moved: {before:?} -> {after:?}"
    );
    assert!(!moved.is_empty() && moved.len() < before.len());
    exactly_once(&log, &objects, "create");
    exactly_once(&log, &objects, "update");
    never_concurrent(&log, &HashMap::new());

    // Settled: the next change of every object is split three ways.
    log.runs.lock().unwrap().clear();
    update_all(&api, &objects, "m3").await;
    handled(&api, &objects, "m3").await;
    let updated_by = exactly_once(&log, &objects, "update");
    assert_eq!(share(&updated_by).len(), 3, "{:?}", share(&updated_by));
    for (object, replica) in &updated_by {
        let shard = kopr::shards::shard_of(Some("default"), object, SHARDS) as usize;
        assert_eq!(&after[shard], replica, "{object} in shard {shard}");
    }
    never_concurrent(&log, &HashMap::new());
    for running in [a, b, c] {
        running.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_replica_hands_its_shards_over_at_once() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = cluster().await;
    let log = Log::default();
    // A lease far longer than the test waits: only a handover moves the shards.
    let lease = Duration::from_secs(3600);
    let a = cluster.run(replica("a", lease, &log));
    let b = cluster.run(replica("b", lease, &log));
    settled(&cluster, &["a", "b"]).await;
    a.stop().await.unwrap();
    settled(&cluster, &["b"]).await;
    let api = widgets(&cluster, "default");
    let objects = names("after-", 20);
    create_all(&api, &objects).await;
    handled(&api, &objects, "m1").await;
    assert!(
        exactly_once(&log, &objects, "create")
            .values()
            .all(|r| r == "b")
    );
    b.stop().await.unwrap();
    // The last one out leaves the shards unowned and no member Lease behind.
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let map = leases.get(&format!("{OPERATOR}-shards")).await.unwrap();
    assert!(owners(Some(&map)).unwrap().iter().all(String::is_empty));
    let members = leases
        .list(&ListParams::default().labels(&format!("{MEMBER_LABEL}={OPERATOR}")))
        .await
        .unwrap();
    assert!(members.items.is_empty());
}

/// A replica stopped as soon as its member Lease exists (its join's first round may still be
/// running) leaves no member Lease behind and owns no shard: the others take everything
/// over at once instead of waiting for its Lease to expire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_while_joining_lets_go_of_its_membership() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = cluster().await;
    let log = Log::default();
    let lease = Duration::from_secs(3600);
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let selector = format!("{MEMBER_LABEL}={OPERATOR}");
    let joined = watcher(leases.clone(), watcher::Config::default().labels(&selector));
    futures::pin_mut!(joined);
    let b = cluster.run(replica("b", lease, &log));
    settled(&cluster, &["b"]).await;
    let a = cluster.run(replica("a", lease, &log));
    // The moment a second member Lease shows up, `a` is stopped.
    let mut members = BTreeSet::new();
    while members.len() < 2 {
        match joined.next().await {
            Some(Ok(watcher::Event::Apply(l) | watcher::Event::InitApply(l))) => {
                members.insert(l.metadata.name.unwrap_or_default());
            }
            Some(_) => {}
            None => panic!("the member watch ended"),
        }
    }
    a.stop().await.unwrap();
    settled(&cluster, &["b"]).await;
    let left = leases
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap();
    assert_eq!(left.items.len(), 1, "only b's member Lease is left");
    b.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_cannot_renew_stops_handling() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = cluster().await;
    let log = Log::default();
    let proxy = lease_outage(&cluster).await;
    let a = cluster.run_through(replica("a", Duration::from_secs(3), &log), &proxy);
    settled(&cluster, &["a"]).await;
    proxy.set_enabled(true);
    let ended = a.stop_after_exit().await;
    assert!(
        matches!(ended, Err(kopr::Error::LeadershipLost(ref who)) if who == "a"),
        "{ended:?}"
    );
}
