//! The newest committed changes, kept in memory in revision order as the
//! writer publishes them (a small watch cache): a watch that starts at, or
//! falls behind to, a recent revision is replayed from here instead of the
//! log in SQLite, which at a hundred thousand objects costs every watch
//! start a query against the writer's connection.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::WatchEvent;

/// The window of recent changes.
pub(super) struct Recent {
    events: Mutex<VecDeque<Arc<WatchEvent>>>,
    capacity: usize,
}

impl Recent {
    /// A window of at most `capacity` changes.
    pub(super) fn new(capacity: usize) -> Recent {
        Recent {
            events: Mutex::new(VecDeque::with_capacity(capacity.min(1024))),
            capacity: capacity.max(1),
        }
    }

    /// Adds the newest change (the writer calls this in revision order,
    /// before it publishes the change and its revision), and returns the
    /// change it pushed out, for the caller to drop when it suits it (the
    /// last holder of an event frees its objects, which is not free).
    #[must_use = "the change pushed out is returned to be dropped later"]
    pub(super) fn push(&self, event: Arc<WatchEvent>) -> Option<Arc<WatchEvent>> {
        let Ok(mut events) = self.events.lock() else {
            return None;
        };
        let out = if events.len() == self.capacity {
            events.pop_front()
        } else {
            None
        };
        events.push_back(event);
        out
    }

    /// The changes under `prefix` with a revision above `after`, when the
    /// window holds every change above `after` (`current`: the newest
    /// revision published); `None` when older changes are needed.
    ///
    /// # Guarantees
    /// A change the window does not hold yet is published after this call
    /// returns, so a watcher subscribed before calling receives it live.
    pub(super) fn after(
        &self,
        prefix: &str,
        after: i64,
        current: i64,
    ) -> Option<Vec<Arc<WatchEvent>>> {
        let events = self.events.lock().ok()?;
        let covered = match events.front() {
            Some(first) => first.revision <= after.saturating_add(1),
            None => after >= current,
        };
        if !covered {
            return None;
        }
        Some(
            events
                .iter()
                .filter(|e| e.revision > after && e.key.starts_with(prefix))
                .cloned()
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::EventType;

    fn event(revision: i64, key: &str) -> Arc<WatchEvent> {
        Arc::new(WatchEvent::new(
            revision,
            key.to_string(),
            EventType::Added,
            Arc::new(serde_json::json!({})),
            None,
        ))
    }

    #[test]
    fn replays_only_what_the_window_covers() {
        let recent = Recent::new(3);
        assert_eq!(recent.after("/a/", 5, 5).map(|v| v.len()), Some(0));
        assert!(recent.after("/a/", 4, 5).is_none());
        let mut evicted = Vec::new();
        for (r, k) in [(6, "/a/x"), (7, "/b/y"), (8, "/a/z"), (9, "/a/w")] {
            evicted.extend(recent.push(event(r, k)));
        }
        // The oldest change is handed back as it leaves.
        assert_eq!(evicted.iter().map(|e| e.revision).collect::<Vec<_>>(), [6]);
        // 6 fell out of the window: a watch from 5 needs the log.
        assert!(recent.after("/a/", 5, 9).is_none());
        let from6: Vec<i64> = recent
            .after("/a/", 6, 9)
            .unwrap_or_default()
            .iter()
            .map(|e| e.revision)
            .collect();
        assert_eq!(from6, vec![8, 9]);
        assert_eq!(recent.after("/a/", 9, 9).map(|v| v.len()), Some(0));
    }
}
