//! Watching the benchmark namespace to see when each item is handled: its `status.result` and
//! its ConfigMap child's `data.result` both equal what the harness expects for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kopr_bench::workload::{BenchItem, RESULT_KEY};
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// What the harness knows about one item.
#[derive(Default)]
struct Item {
    /// The newest `status.result` seen.
    status: Option<String>,
    /// The newest `data.result` of the child seen.
    child: Option<String>,
    /// What the current phase expects.
    expected: Option<String>,
    /// When the current phase's request for the item was sent.
    sent: Option<Instant>,
    /// When the item was first seen handled in the current phase.
    handled: Option<Instant>,
}

#[derive(Default)]
struct State {
    items: HashMap<String, Item>,
    handled: usize,
    last_handled: Option<Instant>,
}

impl State {
    fn check(&mut self, name: &str) {
        let Some(item) = self.items.get_mut(name) else {
            return;
        };
        let Some(expected) = &item.expected else {
            return;
        };
        if item.handled.is_none()
            && item.status.as_ref() == Some(expected)
            && item.child.as_ref() == Some(expected)
        {
            let now = Instant::now();
            item.handled = Some(now);
            self.handled += 1;
            self.last_handled = Some(now);
        }
    }
}

/// Follows the items and their children in one namespace.
pub struct Tracker {
    state: Mutex<State>,
    progress: Notify,
    watches: Mutex<Vec<JoinHandle<()>>>,
}

impl Tracker {
    /// Starts watching `namespace` with `client`.
    pub fn start(client: &kube::Client, namespace: &str) -> Arc<Tracker> {
        let tracker = Arc::new(Tracker {
            state: Mutex::new(State::default()),
            progress: Notify::new(),
            watches: Mutex::new(Vec::new()),
        });
        let items: Api<BenchItem> = Api::namespaced(client.clone(), namespace);
        let children: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let t = tracker.clone();
        let item_watch = tokio::spawn(async move {
            let mut events = watcher::watcher(items, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(event) = events.next().await {
                if let Ok(Event::Apply(item) | Event::InitApply(item)) = event {
                    let name = item.metadata.name.clone().unwrap_or_default();
                    let result = item.status.and_then(|s| s.result);
                    t.observe(&name, |i| i.status = result);
                }
            }
        });
        let t = tracker.clone();
        let child_watch = tokio::spawn(async move {
            let mut events = watcher::watcher(children, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(event) = events.next().await {
                if let Ok(Event::Apply(child) | Event::InitApply(child)) = event {
                    let name = child.metadata.name.clone().unwrap_or_default();
                    let result = child.data.and_then(|mut d| d.remove(RESULT_KEY));
                    t.observe(&name, |i| i.child = result);
                }
            }
        });
        tracker.lock_watches().extend([item_watch, child_watch]);
        tracker
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_watches(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.watches.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn observe(&self, name: &str, update: impl FnOnce(&mut Item)) {
        let mut state = self.lock();
        update(state.items.entry(name.to_owned()).or_default());
        let before = state.handled;
        state.check(name);
        if state.handled != before {
            drop(state);
            self.progress.notify_waiters();
        }
    }

    /// Starts a phase: nothing counts as handled until expected again.
    pub fn begin_phase(&self) {
        let mut state = self.lock();
        state.handled = 0;
        state.last_handled = None;
        for item in state.items.values_mut() {
            item.expected = None;
            item.sent = None;
            item.handled = None;
        }
    }

    /// Records that `name` is expected to be handled with `result`, its request being sent now.
    pub fn expect(&self, name: &str, result: String) {
        let mut state = self.lock();
        let item = state.items.entry(name.to_owned()).or_default();
        item.expected = Some(result);
        item.sent = Some(Instant::now());
        item.handled = None;
        state.check(name);
    }

    /// How many items are handled in this phase, and when the last of them was.
    pub fn handled(&self) -> (usize, Option<Instant>) {
        let state = self.lock();
        (state.handled, state.last_handled)
    }

    /// Waits until `count` items are handled in this phase. Fails when no item was handled for
    /// `stall`, or when `alive` reports a problem (checked every second).
    pub async fn wait_for(
        &self,
        count: usize,
        stall: Duration,
        mut alive: impl FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<Instant> {
        let mut last = (usize::MAX, Instant::now());
        loop {
            let notified = self.progress.notified();
            let (handled, last_handled) = self.handled();
            if handled >= count {
                return Ok(last_handled.unwrap_or_else(Instant::now));
            }
            if handled != last.0 {
                last = (handled, Instant::now());
            } else if last.1.elapsed() > stall {
                anyhow::bail!(
                    "{handled} of {count} handled; none more for {} s",
                    stall.as_secs()
                );
            }
            alive()?;
            let _ = tokio::time::timeout(Duration::from_secs(1), notified).await;
        }
    }

    /// Stops watching.
    pub fn stop(&self) {
        for watch in self.lock_watches().drain(..) {
            watch.abort();
        }
    }

    /// Create→handled (or update→handled) latencies of this phase's handled items, in ms,
    /// sorted.
    pub fn latencies_ms(&self) -> Vec<f64> {
        let state = self.lock();
        let mut latencies: Vec<f64> = state
            .items
            .values()
            .filter_map(|i| Some(i.handled?.duration_since(i.sent?).as_secs_f64() * 1000.0))
            .collect();
        latencies.sort_by(f64::total_cmp);
        latencies
    }
}
