//! Delete handlers across `kill -9`: a delete handler whose success was recorded on the object
//! never runs again after the operator is killed and restarted, even when the kill came before
//! kopr's finalizer was removed; only a handler the kill cut off (mid-way, or after it returned
//! but before its outcome landed) runs again. Every object goes in the end.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use crate::common::*;
use futures::StreamExt;
use kopr::testing::{FaultProxy, Faults};
use kopr::{Context, Handler, HandlerResult, Operator, Resource, Storage};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

/// The delete handler's id.
const ID: &str = "cleanup";

/// One step of a delete handler, by the operator generation (`epoch`) that ran it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Entered(u32),
    Succeeded(u32),
}

/// The delete handler's steps per object, shared by the operators' threads and the test.
#[derive(Clone, Default)]
struct Runs {
    state: Arc<Mutex<State>>,
    changed: Arc<tokio::sync::Notify>,
}

#[derive(Default)]
struct State {
    steps: BTreeMap<String, Vec<Step>>,
    /// How many more handlers of operator `epoch` may go on to succeed (`None`: all); the
    /// others wait until the kill cuts them off.
    budget: Option<usize>,
    epoch: u32,
    /// Handlers let through that have not succeeded yet.
    admitted: usize,
}

impl Runs {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("runs")
    }

    /// Records an entry; whether the handler may go on.
    fn enter(&self, name: &str, epoch: u32) -> bool {
        let mut state = self.state();
        let entries = state.steps.entry(name.to_owned()).or_default();
        entries.push(Step::Entered(epoch));
        let current = state.epoch == epoch;
        let admitted = match &mut state.budget {
            None => true,
            // A killed operator's thread may still start a handler: it never goes on.
            Some(_) if !current => false,
            Some(0) => false,
            Some(left) => {
                *left -= 1;
                true
            }
        };
        state.admitted += usize::from(admitted);
        admitted
    }

    fn succeed(&self, name: &str, epoch: u32) {
        let mut state = self.state();
        let entries = state.steps.entry(name.to_owned()).or_default();
        entries.push(Step::Succeeded(epoch));
        state.admitted = state.admitted.saturating_sub(1);
        drop(state);
        self.changed.notify_waiters();
    }

    fn all(&self) -> BTreeMap<String, Vec<Step>> {
        self.state().steps.clone()
    }

    /// The objects whose delete handler succeeded in operator `epoch`.
    fn succeeded_in(&self, epoch: u32) -> BTreeSet<String> {
        let state = self.state();
        let steps = state.steps.iter();
        steps
            .filter(|(_, s)| s.contains(&Step::Succeeded(epoch)))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Lets `budget` handlers of operator `epoch` succeed (`None`: all handlers).
    fn set_budget(&self, epoch: u32, budget: Option<usize>) {
        let mut state = self.state();
        state.epoch = epoch;
        state.budget = budget;
    }

    fn spent(&self) -> bool {
        let state = self.state();
        state.budget == Some(0) && state.admitted == 0
    }

    /// Waits until the budget is spent and every handler let through has succeeded.
    async fn wait_spent(&self) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if self.spent() {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(WAIT, wait).await.unwrap_or_else(|_| {
            let state = self.state();
            panic!(
                "the budget of delete handlers was not spent: {:?} left, {} let through \
                 still running",
                state.budget, state.admitted
            )
        });
    }
}

/// A delete handler that records its entry and, just before returning, its success; it yields
/// a few times in between, where a kill can cut it off, and, past the budget, waits for the
/// kill. Its result goes to `status.cleanup`.
fn cleanup(runs: &Runs, epoch: u32) -> Handler<Widget> {
    let runs = runs.clone();
    Handler::new(move |ctx: Context<Widget>| {
        let runs = runs.clone();
        async move {
            if !runs.enter(ctx.name(), epoch) {
                std::future::pending::<()>().await;
            }
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            runs.succeed(ctx.name(), epoch);
            HandlerResult::Ok(format!("cleaned up by operator {epoch}"))
        }
    })
    .id(ID)
}

fn operator(runs: &Runs, epoch: u32, storage: Storage) -> Operator {
    Operator::new()
        .storage(storage)
        .resource(Resource::<Widget>::custom().on_delete(cleanup(runs, epoch)))
}

/// Creates the widgets already holding kopr's finalizer (as an operator would have added it),
/// then deletes them: they wait for their delete handler.
async fn deleting_widgets(api: &Api<Widget>, names: &[String]) {
    for name in names {
        let widget: Widget = serde_json::from_value(json!({
            "apiVersion": "kopr.test/v1", "kind": "Widget",
            "metadata": {"name": name, "finalizers": [kopr::Identity::default().finalizer()]},
            "spec": {"message": "bye"}
        }))
        .expect("widget");
        api.create(&PostParams::default(), &widget)
            .await
            .expect("widget created");
    }
    for name in names {
        api.delete(name, &DeleteParams::default())
            .await
            .expect("deletion started");
    }
}

/// Whether the delete handler's outcome is on the object: its success record (under
/// `Storage::Status`, its result too, which is written in the same request as the record).
fn recorded(storage: Storage, widget: &Value) -> bool {
    kopr::progress::read(&kopr::Identity::default(), storage, widget, ID).is_finished()
        || (storage == Storage::Status && !widget["status"][ID].is_null())
}

/// Waits, watching, until `count` of `names` have their delete handler's outcome on the
/// server: recorded, or the object gone.
async fn wait_landed(api: &Api<Widget>, storage: Storage, names: &BTreeSet<String>, count: usize) {
    let stream = watcher(api.clone(), watcher::Config::default());
    futures::pin_mut!(stream);
    let (mut listed, mut landed) = (BTreeSet::new(), BTreeSet::new());
    let wait = async {
        while landed.len() < count {
            let (name, done) = match stream.next().await {
                Some(Ok(watcher::Event::Init)) => {
                    listed.clear();
                    continue;
                }
                Some(Ok(watcher::Event::InitDone)) => {
                    // Gone before the watch began.
                    let gone = names.iter().filter(|n| !listed.contains(*n));
                    landed.extend(gone.cloned());
                    continue;
                }
                Some(Ok(watcher::Event::InitApply(w))) => {
                    let name = w.metadata.name.clone().unwrap_or_default();
                    listed.insert(name.clone());
                    (
                        name,
                        recorded(storage, &serde_json::to_value(w).expect("json")),
                    )
                }
                Some(Ok(watcher::Event::Apply(w))) => {
                    let name = w.metadata.name.clone().unwrap_or_default();
                    (
                        name,
                        recorded(storage, &serde_json::to_value(w).expect("json")),
                    )
                }
                Some(Ok(watcher::Event::Delete(w))) => (w.metadata.name.unwrap_or_default(), true),
                Some(Err(_)) => continue,
                None => panic!("the watch ended"),
            };
            if done && names.contains(&name) {
                landed.insert(name);
            }
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .unwrap_or_else(|_| panic!("fewer than {count} outcomes landed"));
}

/// The widgets as the server holds them now, by name.
async fn on_the_server(api: &Api<Widget>) -> BTreeMap<String, Value> {
    api.list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|w| serde_json::to_value(w).expect("json"))
        .filter_map(|w| Some((w["metadata"]["name"].as_str()?.to_owned(), w)))
        .collect()
}

/// What the steps of one object's delete handler show.
#[derive(Debug, Default)]
struct Tally {
    /// Runs that started after the handler had succeeded once.
    reruns: usize,
    /// Of those, runs after a success that was recorded on the server at a kill.
    after_recorded: usize,
    /// Runs that entered and never returned (cut off mid-way by a kill).
    midway: usize,
}

/// Tallies the steps; `recorded_at` holds, per object, the epoch at whose kill its success was
/// found on the server (or the object gone).
fn tally(
    steps: &BTreeMap<String, Vec<Step>>,
    names: &[String],
    recorded_at: &BTreeMap<String, u32>,
) -> Tally {
    let mut tally = Tally::default();
    for name in names {
        let steps = steps.get(name).map(Vec::as_slice).unwrap_or_default();
        assert!(
            steps.iter().any(|s| matches!(s, Step::Succeeded(_))),
            "{name}: its delete handler never succeeded: {steps:?}"
        );
        let mut succeeded = false;
        for (i, step) in steps.iter().enumerate() {
            match *step {
                Step::Entered(epoch) => {
                    if succeeded {
                        tally.reruns += 1;
                        if recorded_at.get(name).is_some_and(|&at| epoch > at) {
                            tally.after_recorded += 1;
                        }
                    }
                    if steps.get(i + 1) != Some(&Step::Succeeded(epoch)) {
                        tally.midway += 1;
                    }
                }
                Step::Succeeded(_) => succeeded = true,
            }
        }
    }
    tally
}

/// Kills the operator while its delete handlers run, again and again, restarts it, and checks
/// that no delete handler whose success the server had at a kill ran again.
async fn killed_while_deleting(storage: Storage, namespace_name: &str) {
    const OBJECTS: usize = 300;
    const KILLS: u32 = 6;
    /// How many delete handlers succeed before each kill.
    const STEP: usize = 40;
    let cluster = cluster().await;
    namespace(&cluster, namespace_name).await;
    let api = widgets(&cluster, namespace_name);
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("d{i}")).collect();
    deleting_widgets(&api, &names).await;
    let runs = Runs::default();
    let mut recorded_at: BTreeMap<String, u32> = BTreeMap::new();
    let mut held = 0;
    for epoch in 1..=KILLS {
        runs.set_budget(epoch, Some(STEP));
        let running = cluster.run(operator(&runs, epoch, storage));
        runs.wait_spent().await;
        // Killed at a different point of the outcomes' landing each time: at once, then once
        // a sixth, a third, ... of them landed (their record written, or the object gone).
        let landed = STEP * (epoch as usize - 1) / KILLS as usize;
        wait_landed(&api, storage, &runs.succeeded_in(epoch), landed).await;
        running.kill().await;
        // What had landed when the process died: these handlers must not run again.
        let left = on_the_server(&api).await;
        for name in &names {
            let widget = left.get(name);
            if !recorded_at.contains_key(name) && widget.is_none_or(|w| recorded(storage, w)) {
                recorded_at.insert(name.clone(), epoch);
                // Its success on the object while the finalizer still held it: the window
                // between the two writes.
                held += usize::from(widget.is_some());
            }
        }
    }
    runs.set_budget(KILLS + 1, None);
    let last = cluster.run(operator(&runs, KILLS + 1, storage));
    for name in &names {
        wait_gone(&api, name).await;
    }
    last.stop().await.unwrap();
    let tally = tally(&runs.all(), &names, &recorded_at);
    println!(
        "delete handlers ({storage:?}): {OBJECTS} objects, {KILLS} kills, {} re-runs of a \
         succeeded handler, {} of them after its success was recorded, {} cut off by the kill \
         before their outcome landed, {} cut off mid-way; {held} killed with their success \
         recorded and the finalizer still on",
        tally.reruns,
        tally.after_recorded,
        tally.reruns - tally.after_recorded,
        tally.midway,
    );
    assert_eq!(
        tally.after_recorded, 0,
        "a delete handler whose success was recorded ran again: {tally:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_handlers_killed_repeatedly_run_no_recorded_success_again() {
    killed_while_deleting(Storage::Annotations, "kill-deletes").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_handlers_killed_repeatedly_run_no_recorded_success_again_with_status_storage() {
    killed_while_deleting(Storage::Status, "kill-deletes-status").await;
}

/// The operator's delete handlers all succeed, but removing the finalizer fails (the proxy
/// drops every JSON patch) until the operator is killed; after the restart each object goes
/// without its delete handler running again.
async fn killed_before_the_finalizer_goes(storage: Storage, namespace_name: &str) {
    const OBJECTS: usize = 20;
    let cluster = cluster().await;
    namespace(&cluster, namespace_name).await;
    let api = widgets(&cluster, namespace_name);
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("f{i}")).collect();
    deleting_widgets(&api, &names).await;
    // The objects whose finalizer removal (kopr's only JSON patch here) was refused.
    let refused: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let told = Arc::new(tokio::sync::Notify::new());
    let faults = {
        let (refused, told) = (refused.clone(), told.clone());
        Faults::rate(1.0)
            .only(false, false, true, false)
            .watch_cuts(0.0)
            .only_for(move |request| {
                let json_patch = request
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .is_some_and(|t| t.as_bytes().starts_with(b"application/json-patch+json"));
                if json_patch && let Some(name) = request.uri.path().rsplit('/').next() {
                    refused.lock().expect("refused").insert(name.to_owned());
                    told.notify_waiters();
                }
                json_patch
            })
    };
    let proxy = FaultProxy::start(&cluster, faults).await.unwrap();
    let runs = Runs::default();
    let doomed = cluster.run_through(operator(&runs, 1, storage), &proxy);
    let all_refused = async {
        loop {
            let notified = told.notified();
            if refused.lock().expect("refused").len() == OBJECTS {
                return;
            }
            notified.await;
        }
    };
    tokio::time::timeout(WAIT, all_refused)
        .await
        .expect("every finalizer removal was tried");
    doomed.kill().await;
    let left = on_the_server(&api).await;

    let revived = cluster.run(operator(&runs, 2, storage));
    for name in &names {
        wait_gone(&api, name).await;
    }
    revived.stop().await.unwrap();
    let steps = runs.all();
    let reruns: usize = names
        .iter()
        .filter_map(|name| steps.get(name))
        .map(|s| s.iter().filter(|s| matches!(s, Step::Entered(_))).count())
        .map(|entered| entered.saturating_sub(1))
        .sum();
    println!(
        "delete handlers ({storage:?}): {OBJECTS} objects killed before their finalizer was \
         removed, {reruns} re-runs of a succeeded handler"
    );
    for name in &names {
        assert_eq!(
            steps.get(name),
            Some(&vec![Step::Entered(1), Step::Succeeded(1)]),
            "{name}: its delete handler ran once, before the kill"
        );
        let widget = left
            .get(name)
            .expect("kept by its finalizer until the restart");
        assert!(
            recorded(storage, widget),
            "{name}: its success was recorded before the kill: {widget}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_handler_that_succeeded_before_a_kill_does_not_run_again() {
    killed_before_the_finalizer_goes(Storage::Annotations, "kill-finalizer").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_handler_that_succeeded_before_a_kill_does_not_run_again_with_status_storage() {
    killed_before_the_finalizer_goes(Storage::Status, "kill-finalizer-status").await;
}
