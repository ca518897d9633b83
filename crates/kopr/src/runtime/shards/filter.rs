//! Which virtual shards this replica handles right now, as the reactor sees it: the watch keeps
//! only events of owned shards, a worker starts a cycle only for an owned object, and the
//! coordinator asks, before it hands a shard over, whether any resource still holds an object
//! of it (a cycle in flight, an outcome not landed, a timer or daemon running).
//!
//! Ownership also lapses by itself at the renew deadline after the last renewal of the member
//! Lease, so that a coordinator starved of CPU cannot leave the workers handling objects past
//! the point where other replicas may take them. A leader (leader election) uses the same
//! fence: it owns the one shard of all objects, until its own renew deadline.

use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::watch;
use tokio::time::Instant;

use super::ring::shard_of;

/// Visits the keys of a resource's slots (`namespace`, `name`); `false` once the resource is
/// gone.
pub(crate) type Holder = Box<dyn Fn(&mut dyn FnMut(Option<&str>, &str)) -> bool + Send + Sync>;

/// A change of the owned set, as the reactor follows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Change {
    /// Bumped at every change (shards lost or gained).
    pub(crate) generation: u64,
    /// Bumped when shards were gained: their objects must be listed.
    pub(crate) gains: u64,
}

#[derive(Debug, Default)]
struct Owned {
    /// The number of virtual shards (0 until the shard map was read).
    count: u32,
    owned: Vec<bool>,
    /// Ownership holds until then: the last renewal's start plus the renew deadline.
    valid_until: Option<Instant>,
}

/// The shards this replica owns.
pub(crate) struct ShardFilter {
    state: RwLock<Owned>,
    changes: watch::Sender<Change>,
    holders: Mutex<Vec<Holder>>,
}

impl std::fmt::Debug for ShardFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardFilter")
            .field("owned", &self.owned_count())
            .finish()
    }
}

impl ShardFilter {
    pub(crate) fn new() -> Arc<ShardFilter> {
        Arc::new(ShardFilter {
            state: RwLock::new(Owned::default()),
            changes: watch::channel(Change::default()).0,
            holders: Mutex::new(Vec::new()),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Owned> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the object `namespace/name` is in a shard this replica owns.
    pub(crate) fn owns(&self, namespace: Option<&str>, name: &str) -> bool {
        let state = self.read();
        if state.count == 0
            || state
                .valid_until
                .is_none_or(|until| Instant::now() >= until)
        {
            return false;
        }
        // A leader's one shard: no hash needed.
        let shard = if state.count == 1 {
            0
        } else {
            shard_of(namespace, name, state.count)
        };
        state.owned.get(shard as usize).copied().unwrap_or(false)
    }

    /// How many shards are owned.
    pub(crate) fn owned_count(&self) -> usize {
        self.read().owned.iter().filter(|o| **o).count()
    }

    /// The number of virtual shards (0 before the map was read).
    pub(crate) fn count(&self) -> u32 {
        self.read().count
    }

    /// Owns exactly the shards marked in `owned` (its length is the shard count). Shards
    /// gained make the watches list again; shards lost are dropped by the reactor.
    pub(crate) fn set(&self, owned: Vec<bool>) {
        let (gained, changed) = {
            let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
            let count = u32::try_from(owned.len()).unwrap_or(u32::MAX);
            let gained = owned
                .iter()
                .enumerate()
                .any(|(i, now)| *now && !state.owned.get(i).copied().unwrap_or(false));
            let changed = state.count != count || state.owned != owned;
            state.count = count;
            state.owned = owned;
            (gained, changed)
        };
        if changed {
            self.changes.send_modify(|change| {
                change.generation += 1;
                if gained {
                    change.gains += 1;
                }
            });
        }
    }

    /// The member Lease was renewed: ownership holds until `until`.
    pub(crate) fn valid_until(&self, until: Instant) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.valid_until = Some(until);
    }

    /// Follows changes of the owned set.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Adds a resource whose slots [`held`](Self::held) visits.
    pub(crate) fn register(&self, holder: Holder) {
        if let Ok(mut holders) = self.holders.lock() {
            holders.push(holder);
        }
    }

    /// Which of `count` shards any resource still keeps an object of, in one pass over the
    /// slots.
    pub(crate) fn held(&self, count: u32) -> Vec<bool> {
        let mut held = vec![false; count as usize];
        let Ok(mut holders) = self.holders.lock() else {
            return vec![true; count as usize];
        };
        holders.retain(|holder| {
            holder(&mut |namespace, name| {
                if let Some(slot) = held.get_mut(shard_of(namespace, name, count) as usize) {
                    *slot = true;
                }
            })
        });
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_owned_with_their_shard_and_gains_are_told_apart() {
        let filter = ShardFilter::new();
        assert!(
            !filter.owns(Some("ns"), "a"),
            "nothing is owned before the map is read"
        );
        let mut changes = filter.subscribe();
        let shard = shard_of(Some("ns"), "a", 8) as usize;
        let mut owned = vec![false; 8];
        owned[shard] = true;
        filter.set(owned.clone());
        assert!(!filter.owns(Some("ns"), "a"), "not before a renewal");
        filter.valid_until(Instant::now() + std::time::Duration::from_secs(60));
        assert!(filter.owns(Some("ns"), "a"));
        assert_eq!(filter.owned_count(), 1);
        assert!(changes.has_changed().unwrap());
        let first = *changes.borrow_and_update();
        assert_eq!((first.generation, first.gains), (1, 1));
        filter.set(owned.clone());
        assert!(!changes.has_changed().unwrap(), "no change, no news");
        owned[shard] = false;
        filter.set(owned);
        let second = *changes.borrow_and_update();
        assert_eq!(
            (second.generation, second.gains),
            (2, 1),
            "a loss is no gain"
        );
        assert!(!filter.owns(Some("ns"), "a"));
        filter.set(vec![true; 8]);
        filter.valid_until(Instant::now());
        assert!(
            !filter.owns(Some("ns"), "a"),
            "lapsed at the renew deadline"
        );
    }

    #[test]
    fn holders_are_asked_for_their_keys_and_forgotten_when_gone() {
        let filter = ShardFilter::new();
        let alive = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flag = alive.clone();
        filter.register(Box::new(move |visit| {
            if !flag.load(std::sync::atomic::Ordering::SeqCst) {
                return false;
            }
            visit(Some("ns"), "a");
            true
        }));
        let mut shards = vec![false; 8];
        shards[shard_of(Some("ns"), "a", 8) as usize] = true;
        assert_eq!(filter.held(8), shards);
        alive.store(false, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(filter.held(8), vec![false; 8]);
        assert!(filter.holders.lock().unwrap().is_empty());
    }
}
