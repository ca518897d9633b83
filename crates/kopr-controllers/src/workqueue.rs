//! A work queue in the manner of client-go's: a key is queued at most once,
//! never handed to two workers at the same time (a key added while it is
//! being processed is queued again when processing ends), can be added after
//! a delay (one timer per key, the earliest wins), and is retried with a
//! growing delay after failures.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::status::ApiError;

#[derive(Default)]
struct State {
    queue: VecDeque<String>,
    dirty: HashSet<String>,
    processing: HashSet<String>,
    failures: HashMap<String, u32>,
    timers: HashMap<String, Instant>,
}

/// The queue.
pub struct WorkQueue {
    name: &'static str,
    state: Mutex<State>,
    notify: Notify,
    stop: CancellationToken,
}

/// First retry delay after a failure.
const RETRY_BASE: Duration = Duration::from_millis(50);
/// Longest retry delay.
const RETRY_MAX: Duration = Duration::from_secs(30);

impl WorkQueue {
    /// A queue that stops handing out keys when `stop` is cancelled.
    pub fn new(name: &'static str, stop: CancellationToken) -> Arc<WorkQueue> {
        Arc::new(WorkQueue {
            name,
            state: Mutex::new(State::default()),
            notify: Notify::new(),
            stop,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Queues a key.
    pub fn add(&self, key: impl Into<String>) {
        let key = key.into();
        let mut st = self.lock();
        if !st.dirty.insert(key.clone()) {
            return;
        }
        if st.processing.contains(&key) {
            return;
        }
        st.queue.push_back(key);
        drop(st);
        self.notify.notify_one();
    }

    /// Queues a key after a delay (keeping an earlier timer if there is one).
    pub fn add_after(self: &Arc<Self>, key: impl Into<String>, delay: Duration) {
        let key = key.into();
        if delay.is_zero() {
            self.add(key);
            return;
        }
        let deadline = Instant::now() + delay;
        {
            let mut st = self.lock();
            if let Some(existing) = st.timers.get(&key)
                && *existing <= deadline
            {
                return;
            }
            st.timers.insert(key.clone(), deadline);
        }
        let queue = Arc::clone(self);
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {}
                _ = queue.stop.cancelled() => return,
            }
            let ours = {
                let mut st = queue.lock();
                if st.timers.get(&key) == Some(&deadline) {
                    st.timers.remove(&key);
                    true
                } else {
                    false
                }
            };
            if ours {
                queue.add(key);
            }
        });
    }

    /// Queues a key again after a failure, with a growing delay.
    pub fn retry(self: &Arc<Self>, key: &str) {
        let n = {
            let mut st = self.lock();
            let n = st.failures.entry(key.to_string()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let delay = RETRY_BASE
            .saturating_mul(1u32 << n.min(20).saturating_sub(1))
            .min(RETRY_MAX);
        self.add_after(key.to_string(), delay);
    }

    /// Clears a key's failure count.
    pub fn forget(&self, key: &str) {
        self.lock().failures.remove(key);
    }

    /// The next key to process, or None once stopped.
    pub async fn next(&self) -> Option<String> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.lock();
                if let Some(key) = st.queue.pop_front() {
                    st.dirty.remove(&key);
                    st.processing.insert(key.clone());
                    let more = !st.queue.is_empty();
                    drop(st);
                    if more {
                        self.notify.notify_one();
                    }
                    return Some(key);
                }
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = self.stop.cancelled() => return None,
            }
        }
    }

    /// Marks a key processed; queues it again if it was added meanwhile.
    pub fn done(&self, key: &str) {
        let mut st = self.lock();
        st.processing.remove(key);
        if st.dirty.contains(key) {
            st.queue.push_back(key.to_string());
            drop(st);
            self.notify.notify_one();
        }
    }

    /// Runs `workers` tasks that process keys with `sync`. A sync returns
    /// when to look at the key again, if ever; errors are retried.
    pub fn run<F, Fut>(self: &Arc<Self>, workers: usize, sync: F)
    where
        F: Fn(String) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Duration>, ApiError>> + Send + 'static,
    {
        for _ in 0..workers.max(1) {
            let queue = Arc::clone(self);
            let sync = sync.clone();
            tokio::spawn(async move {
                while let Some(key) = queue.next().await {
                    match sync(key.clone()).await {
                        Ok(again) => {
                            queue.forget(&key);
                            if let Some(d) = again {
                                queue.add_after(key.clone(), d);
                            }
                        }
                        Err(e) => {
                            if e.code == 409 {
                                tracing::debug!(queue = queue.name, key, error = %e, "sync conflicted; retrying");
                            } else {
                                tracing::warn!(queue = queue.name, key, error = %e, "sync failed; retrying");
                            }
                            queue.retry(&key);
                        }
                    }
                    queue.done(&key);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keys_are_deduplicated_and_requeued_after_processing() {
        let q = WorkQueue::new("test", CancellationToken::new());
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.next().await.as_deref(), Some("a"));
        q.add("a");
        assert_eq!(q.next().await.as_deref(), Some("b"));
        q.done("a");
        assert_eq!(q.next().await.as_deref(), Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_adds_keep_the_earliest_timer() {
        let q = WorkQueue::new("test", CancellationToken::new());
        q.add_after("k", Duration::from_secs(10));
        q.add_after("k", Duration::from_secs(1));
        let got = tokio::time::timeout(Duration::from_secs(2), q.next()).await;
        assert_eq!(got.ok().flatten().as_deref(), Some("k"));
    }
}
