//! The current state of every key, held in memory beside the database.
//!
//! Loaded from the database when the store opens and then changed only by the
//! writer thread, after a group has committed and before anyone hears of it
//! (replies, watch events). Reads of the current state (`get`, `list`) are
//! therefore served without touching SQLite or decoding JSON, and still see
//! every write that has been acknowledged. The objects are the same shared
//! values the watch events carry, so this costs one pointer per key.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::RwLock;

use super::{ListPage, Stored};

/// Every key's current object, and the revision they are current at.
#[derive(Default)]
pub(super) struct CurrentState {
    inner: RwLock<Snapshot>,
}

#[derive(Default)]
struct Snapshot {
    objects: BTreeMap<String, Stored>,
    revision: i64,
    /// The revision of the last change per resource prefix
    /// (`/<group>/<plural>/`).
    changed: std::collections::HashMap<String, i64>,
}

/// The resource prefix of a key: its first two segments, `/<group>/<plural>/`.
fn resource_prefix(key: &str) -> &str {
    let mut slashes = key.match_indices('/').map(|(i, _)| i);
    match slashes.nth(2) {
        Some(end) => &key[..=end],
        None => key,
    }
}

/// One committed change to apply.
pub(super) enum Change<'a> {
    /// The key now holds this object.
    Put(&'a str, &'a Stored),
    /// The key was deleted at this revision.
    Delete(&'a str, i64),
}

impl CurrentState {
    /// A state holding `items` at `revision`.
    pub(super) fn new(items: Vec<(String, Stored)>, revision: i64) -> CurrentState {
        CurrentState {
            inner: RwLock::new(Snapshot {
                objects: items.into_iter().collect(),
                revision,
                changed: Default::default(),
            }),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Snapshot> {
        // A panic while holding the lock leaves the map consistent (every
        // change is a single insert or remove), so a poisoned lock is usable.
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies the changes of one committed group.
    pub(super) fn apply(&self, changes: &[Change<'_>]) {
        let mut snapshot = self.inner.write().unwrap_or_else(|p| p.into_inner());
        for change in changes {
            match change {
                Change::Put(key, stored) => {
                    snapshot.revision = snapshot.revision.max(stored.revision);
                    mark(&mut snapshot.changed, key, stored.revision);
                    snapshot
                        .objects
                        .insert((*key).to_owned(), (*stored).clone());
                }
                Change::Delete(key, revision) => {
                    snapshot.revision = snapshot.revision.max(*revision);
                    mark(&mut snapshot.changed, key, *revision);
                    snapshot.objects.remove(*key);
                }
            }
        }
    }

    /// The revision of the last change under any of these resource prefixes.
    pub(super) fn last_change_of(&self, prefixes: &[&str]) -> i64 {
        let snapshot = self.read();
        prefixes
            .iter()
            .filter_map(|p| snapshot.changed.get(*p).copied())
            .max()
            .unwrap_or(0)
    }

    /// The current object of `key`.
    pub(super) fn get(&self, key: &str) -> Option<Stored> {
        self.read().objects.get(key).cloned()
    }

    /// The keys under `prefix` after `start_after`, at most `limit` (0 = all),
    /// with the revision they are current at; as the database's listing.
    pub(super) fn list(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> ListPage {
        let snapshot = self.read();
        let lower = match start_after.filter(|s| *s > prefix) {
            Some(after) => Bound::Excluded(after),
            None => Bound::Excluded(prefix),
        };
        let mut range = snapshot
            .objects
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix));
        let take = if limit == 0 { usize::MAX } else { limit };
        let items: Vec<(&String, &Stored)> = range.by_ref().take(take).collect();
        let rest = if limit == 0 { 0 } else { range.count() };
        let (continue_key, remaining) = match items.last() {
            Some((last, _)) if rest > 0 => (Some((*last).clone()), Some(rest as i64)),
            _ => (None, None),
        };
        ListPage {
            items: items.into_iter().map(|(_, s)| s.clone()).collect(),
            revision: snapshot.revision,
            continue_key,
            remaining,
        }
    }
}

/// Records a change of `key` at `revision`.
fn mark(changed: &mut std::collections::HashMap<String, i64>, key: &str, revision: i64) {
    let prefix = resource_prefix(key);
    match changed.get_mut(prefix) {
        Some(r) => *r = (*r).max(revision),
        None => {
            changed.insert(prefix.to_owned(), revision);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn stored(revision: i64) -> Stored {
        Stored {
            object: Arc::new(json!({"rev": revision})),
            revision,
            create_revision: revision,
        }
    }

    fn keys(page: &ListPage) -> Vec<i64> {
        page.items.iter().map(|s| s.revision).collect()
    }

    #[test]
    fn lists_page_by_prefix_and_follow_changes() {
        let state = CurrentState::new(
            vec![
                ("/a/x/1".into(), stored(1)),
                ("/a/x/2".into(), stored(2)),
                ("/a/x/3".into(), stored(3)),
                ("/a/y/1".into(), stored(4)),
            ],
            4,
        );
        let all = state.list("/a/x/", None, 0);
        assert_eq!((keys(&all), all.revision), (vec![1, 2, 3], 4));
        assert_eq!((all.continue_key, all.remaining), (None, None));

        let first = state.list("/a/x/", None, 2);
        assert_eq!(keys(&first), vec![1, 2]);
        assert_eq!(first.continue_key.as_deref(), Some("/a/x/2"));
        assert_eq!(first.remaining, Some(1));
        let second = state.list("/a/x/", first.continue_key.as_deref(), 2);
        assert_eq!(keys(&second), vec![3]);
        assert_eq!((second.continue_key, second.remaining), (None, None));

        let five = stored(5);
        state.apply(&[Change::Put("/a/x/0", &five), Change::Delete("/a/x/2", 6)]);
        assert_eq!(keys(&state.list("/a/x/", None, 0)), vec![5, 1, 3]);
        assert_eq!(state.list("/a/", None, 0).revision, 6);
        assert!(state.get("/a/x/2").is_none());
        assert_eq!(state.get("/a/x/0").map(|s| s.revision), Some(5));
        assert!(state.list("/b/", None, 0).items.is_empty());
        assert_eq!(state.last_change_of(&["/a/x/"]), 6);
        assert_eq!(state.last_change_of(&["/a/y/"]), 0);
        assert_eq!(state.last_change_of(&["/a/y/", "/a/x/"]), 6);
        assert_eq!(resource_prefix("/core/pods/ns/p"), "/core/pods/");
        assert_eq!(resource_prefix("/core/nodes/n"), "/core/nodes/");
    }
}
