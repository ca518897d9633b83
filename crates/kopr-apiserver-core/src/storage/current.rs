//! The current state of every key, held in memory beside the database.
//!
//! Loaded from the database when the store opens and then changed only by the
//! writer thread, after a group has committed and before anyone hears of it
//! (replies, watch events). Reads of the current state (`get`, `list`) are
//! therefore served without touching SQLite, and still see every write that
//! has been acknowledged.
//!
//! Each object is kept as its compact JSON text (the bytes the database holds,
//! before encryption), not as a decoded tree: a `serde_json::Value` costs
//! about 14 times its JSON in memory. Readers decode on demand, except while
//! the decoded object of the last write is still held elsewhere (by a watch
//! event, a reply), which is then shared. The layer above may cache each
//! object's encoding as served ([`Entry::served`]), so lists of unchanged
//! objects are written without decoding or encoding anything.
//!
//! Keys are also indexed by label (per resource, label key and value), so a
//! list selecting `key=value` or `key in (...)` reads only the objects that
//! carry such a label.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, OnceLock, RwLock, Weak};

use serde_json::Value;

use super::{ListPage, Stored, set_resource_version};

/// One key's current object.
#[derive(Debug)]
pub struct Entry {
    /// The object's JSON without its resourceVersion, as the database holds it
    /// (before encryption).
    json: Box<[u8]>,
    /// The revision of the last write to the key.
    pub revision: i64,
    /// The revision at which the key was created.
    pub create_revision: i64,
    /// The decoded object of the write that made this entry, while anyone holds it.
    live: Weak<Value>,
    /// The object as the layer above serves it, for the apiVersion it was served at.
    served: OnceLock<(Box<str>, Arc<[u8]>)>,
}

impl Entry {
    /// An entry for `json` (the object without its resourceVersion) at these revisions.
    pub(super) fn new(json: Box<[u8]>, revision: i64, create_revision: i64) -> Entry {
        Entry {
            json,
            revision,
            create_revision,
            live: Weak::new(),
            served: OnceLock::new(),
        }
    }

    /// The object, with its resourceVersion; `None` (logged) if its JSON cannot be
    /// decoded, which only an object nested deeper than the decoder allows can cause.
    pub fn object(&self) -> Option<Arc<Value>> {
        if let Some(v) = self.live.upgrade() {
            return Some(v);
        }
        match serde_json::from_slice::<Value>(&self.json) {
            Ok(mut v) => {
                set_resource_version(&mut v, self.revision);
                Some(Arc::new(v))
            }
            Err(e) => {
                tracing::error!(error = %e, revision = self.revision, "undecodable stored object");
                None
            }
        }
    }

    /// Reads a typed view of the object (without its resourceVersion) straight from its
    /// JSON, without building the whole tree: for checks that need a field or two.
    ///
    /// # Errors
    /// The JSON does not match `T`.
    pub fn view<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.json)
    }

    /// The entry as a [`Stored`] (decoded).
    pub fn stored(&self) -> Option<Stored> {
        Some(Stored {
            object: self.object()?,
            revision: self.revision,
            create_revision: self.create_revision,
            change: None,
        })
    }

    /// The object as served at `api_version`, if [`Entry::set_served`] cached it.
    pub fn served(&self, api_version: &str) -> Option<Arc<[u8]>> {
        self.served
            .get()
            .filter(|(v, _)| &**v == api_version)
            .map(|(_, bytes)| bytes.clone())
    }

    /// Caches the object as served at `api_version` (the first caching wins; the
    /// object never changes, so neither does its encoding).
    pub fn set_served(&self, api_version: &str, bytes: Arc<[u8]>) {
        let _ = self.served.set((api_version.into(), bytes));
    }

    /// The bytes this entry holds, for memory accounting in tests.
    #[cfg(test)]
    fn json_len(&self) -> usize {
        self.json.len()
    }
}

/// One key's current object as loaded from the database: the key, its entry and its
/// labels (as [`labels_in_json`] reads them).
pub(super) type Loaded = (String, Entry, Value);

/// Every key's current object, and the revision they are current at.
#[derive(Default)]
pub(super) struct CurrentState {
    inner: RwLock<Snapshot>,
}

#[derive(Default)]
struct Snapshot {
    objects: BTreeMap<Arc<str>, Arc<Entry>>,
    /// Keys by label: resource prefix → label key → label value → keys.
    labels: HashMap<String, LabelIndex>,
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

/// The keys of one resource by label key and value.
type LabelIndex = HashMap<Box<str>, HashMap<Box<str>, BTreeSet<Arc<str>>>>;

/// One committed change to apply.
pub(super) enum Change<'a> {
    /// The key now holds this object, whose JSON without resourceVersion is given, in
    /// place of the previous object (none for a create).
    Put(&'a str, &'a Stored, &'a [u8], Option<&'a Value>),
    /// The key, holding this object, was deleted at this revision.
    Delete(&'a str, i64, Option<&'a Value>),
}

/// The labels of an object, each value as selectors compare it.
fn labels_of(object: &Value) -> impl Iterator<Item = (&str, std::borrow::Cow<'_, str>)> {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), label_text(v)))
}

/// A label value as text (labels are strings; anything else as its JSON).
fn label_text(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => s.as_str().into(),
        other => other.to_string().into(),
    }
}

/// Just the labels of an object's JSON, read without decoding the rest.
#[derive(serde::Deserialize, Default)]
struct LabelsOnly {
    #[serde(default)]
    metadata: MetadataLabels,
}

#[derive(serde::Deserialize, Default)]
struct MetadataLabels {
    #[serde(default)]
    labels: Option<serde_json::Map<String, Value>>,
}

/// The labels in an object's JSON; `Err` if the JSON is not an object's.
pub(super) fn labels_in_json(json: &[u8]) -> Result<Value, serde_json::Error> {
    let only: LabelsOnly = serde_json::from_slice(json)?;
    Ok(serde_json::json!({"metadata": {"labels": only.metadata.labels}}))
}

impl Snapshot {
    fn index(&mut self, key: &Arc<str>, object: &Value) {
        let mut labels = labels_of(object).peekable();
        if labels.peek().is_none() {
            return;
        }
        let index = self
            .labels
            .entry(resource_prefix(key).to_owned())
            .or_default();
        for (k, v) in labels {
            let values = match index.get_mut(k) {
                Some(values) => values,
                None => index.entry(k.into()).or_default(),
            };
            let keys = match values.get_mut(&*v) {
                Some(keys) => keys,
                None => values.entry((&*v).into()).or_default(),
            };
            keys.insert(key.clone());
        }
    }

    fn unindex(&mut self, key: &str, object: &Value) {
        let Some(index) = self.labels.get_mut(resource_prefix(key)) else {
            return;
        };
        for (k, v) in labels_of(object) {
            let Some(values) = index.get_mut(k) else {
                continue;
            };
            if let Some(keys) = values.get_mut(&*v) {
                keys.remove(key);
                if keys.is_empty() {
                    values.remove(&*v);
                }
            }
            if values.is_empty() {
                index.remove(k);
            }
        }
    }
}

impl CurrentState {
    /// A state holding `items` (each with its labels, as [`labels_in_json`] reads them)
    /// at `revision`.
    pub(super) fn new(items: Vec<Loaded>, revision: i64) -> CurrentState {
        let mut snapshot = Snapshot {
            revision,
            ..Default::default()
        };
        for (key, entry, labels) in items {
            let key: Arc<str> = key.into();
            snapshot.index(&key, &labels);
            snapshot.objects.insert(key, Arc::new(entry));
        }
        CurrentState {
            inner: RwLock::new(snapshot),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Snapshot> {
        // A panic while holding the lock leaves the map consistent (every
        // change is a single insert or remove), so a poisoned lock is usable.
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies the changes of one committed group.
    pub(super) fn apply(&self, changes: &[Change<'_>]) {
        // Built before taking the lock: readers wait only for the map updates.
        let entries: Vec<Option<Arc<Entry>>> = changes
            .iter()
            .map(|change| match change {
                Change::Put(_, stored, json, _) => Some(Arc::new(Entry {
                    json: (*json).into(),
                    revision: stored.revision,
                    create_revision: stored.create_revision,
                    live: Arc::downgrade(&stored.object),
                    served: OnceLock::new(),
                })),
                Change::Delete(..) => None,
            })
            .collect();
        let mut snapshot = self.inner.write().unwrap_or_else(|p| p.into_inner());
        for (change, entry) in changes.iter().zip(entries) {
            match (change, entry) {
                (Change::Put(key, stored, _, previous), Some(entry)) => {
                    snapshot.revision = snapshot.revision.max(stored.revision);
                    mark(&mut snapshot.changed, key, stored.revision);
                    if let Some(previous) = previous {
                        snapshot.unindex(key, previous);
                    }
                    let key: Arc<str> = match snapshot.objects.get_key_value(*key) {
                        Some((k, _)) => k.clone(),
                        None => (*key).into(),
                    };
                    snapshot.index(&key, &stored.object);
                    snapshot.objects.insert(key, entry);
                }
                (Change::Delete(key, revision, last), _) => {
                    snapshot.revision = snapshot.revision.max(*revision);
                    mark(&mut snapshot.changed, key, *revision);
                    if let Some(last) = last {
                        snapshot.unindex(key, last);
                    }
                    snapshot.objects.remove(*key);
                }
                (Change::Put(..), None) => {}
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

    /// The current entry of `key`.
    pub(super) fn entry(&self, key: &str) -> Option<Arc<Entry>> {
        self.read().objects.get(key).cloned()
    }

    /// The current object of `key`.
    pub(super) fn get(&self, key: &str) -> Option<Stored> {
        self.entry(key)?.stored()
    }

    /// The keys under `prefix` after `start_after`, at most `limit` (0 = all),
    /// with the revision they are current at; as the database's listing.
    pub(super) fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> ListPage<Arc<Entry>> {
        let snapshot = self.read();
        let range = snapshot
            .objects
            .range::<str, _>((lower_bound(prefix, start_after), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix));
        page(range, limit, snapshot.revision)
    }

    /// As [`CurrentState::list`], only the keys whose label `label` has one of `values`.
    pub(super) fn list_labelled(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        label: &str,
        values: &[String],
    ) -> ListPage<Arc<Entry>> {
        let snapshot = self.read();
        let lower = lower_bound(prefix, start_after);
        let sets = snapshot
            .labels
            .get(resource_prefix(prefix))
            .and_then(|index| index.get(label));
        let mut keys: Vec<&Arc<str>> = values
            .iter()
            .filter_map(|v| sets?.get(v.as_str()))
            .flat_map(|keys| {
                keys.range::<str, _>((lower, Bound::Unbounded))
                    .take_while(|key| key.starts_with(prefix))
            })
            .collect();
        if values.len() > 1 {
            keys.sort();
            keys.dedup();
        }
        let entries = keys
            .into_iter()
            .filter_map(|k| snapshot.objects.get_key_value(&**k));
        page(entries, limit, snapshot.revision)
    }

    /// How many keys under `prefix`'s resource carry label `label` with one of `values`.
    pub(super) fn count_labelled(&self, prefix: &str, label: &str, values: &[String]) -> usize {
        let snapshot = self.read();
        let Some(sets) = snapshot
            .labels
            .get(resource_prefix(prefix))
            .and_then(|index| index.get(label))
        else {
            return 0;
        };
        values
            .iter()
            .filter_map(|v| sets.get(v.as_str()))
            .map(BTreeSet::len)
            .sum()
    }
}

/// Where a listing under `prefix` starts: after `start_after` when that is in it.
fn lower_bound<'a>(prefix: &'a str, start_after: Option<&'a str>) -> Bound<&'a str> {
    match start_after.filter(|s| *s > prefix) {
        Some(after) => Bound::Excluded(after),
        None => Bound::Excluded(prefix),
    }
}

/// A page of at most `limit` (0 = all) of `entries`, in key order.
fn page<'a>(
    mut entries: impl Iterator<Item = (&'a Arc<str>, &'a Arc<Entry>)>,
    limit: usize,
    revision: i64,
) -> ListPage<Arc<Entry>> {
    let take = if limit == 0 { usize::MAX } else { limit };
    let items: Vec<(&Arc<str>, &Arc<Entry>)> = entries.by_ref().take(take).collect();
    let rest = if limit == 0 { 0 } else { entries.count() };
    let (continue_key, remaining) = match items.last() {
        Some((last, _)) if rest > 0 => (Some(last.to_string()), Some(rest as i64)),
        _ => (None, None),
    };
    ListPage {
        items: items.into_iter().map(|(_, e)| e.clone()).collect(),
        revision,
        continue_key,
        remaining,
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
    use serde_json::json;

    use super::*;

    fn entry(revision: i64) -> Entry {
        Entry::new(
            serde_json::to_vec(&json!({"rev": revision, "metadata": {}}))
                .unwrap()
                .into(),
            revision,
            revision,
        )
    }

    fn keys(page: &ListPage<Arc<Entry>>) -> Vec<i64> {
        page.items.iter().map(|s| s.revision).collect()
    }

    #[test]
    fn lists_page_by_prefix_and_follow_changes() {
        let state = CurrentState::new(
            vec![
                ("/a/x/1".into(), entry(1), json!({})),
                ("/a/x/2".into(), entry(2), json!({})),
                ("/a/x/3".into(), entry(3), json!({})),
                ("/a/y/1".into(), entry(4), json!({})),
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

        let five = Stored {
            object: Arc::new(json!({"rev": 5, "metadata": {"resourceVersion": "5"}})),
            revision: 5,
            create_revision: 5,
            change: None,
        };
        state.apply(&[
            Change::Put("/a/x/0", &five, br#"{"rev":5,"metadata":{}}"#, None),
            Change::Delete("/a/x/2", 6, None),
        ]);
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

    #[test]
    fn objects_are_decoded_from_their_json_unless_still_held() {
        let state = CurrentState::new(vec![("/a/x/1".into(), entry(7), json!({}))], 7);
        let decoded = state.get("/a/x/1").unwrap().object;
        assert_eq!(
            *decoded,
            json!({"rev": 7, "metadata": {"resourceVersion": "7"}})
        );
        assert_eq!(state.entry("/a/x/1").unwrap().json_len(), 23);

        // The object of a write is shared while its writer's copy lives, decoded after.
        let held = Stored {
            object: Arc::new(json!({"v": 1, "metadata": {"resourceVersion": "8"}})),
            revision: 8,
            create_revision: 8,
            change: None,
        };
        let old = json!({"rev": 7, "metadata": {}});
        state.apply(&[Change::Put(
            "/a/x/1",
            &held,
            br#"{"metadata":{},"v":1}"#,
            Some(&old),
        )]);
        let again = state.get("/a/x/1").unwrap().object;
        assert!(Arc::ptr_eq(&again, &held.object));
        drop((held, again));
        let fresh = state.get("/a/x/1").unwrap().object;
        assert_eq!(
            *fresh,
            json!({"v": 1, "metadata": {"resourceVersion": "8"}})
        );

        // What the layer above serves is cached per apiVersion.
        let e = state.entry("/a/x/1").unwrap();
        assert!(e.served("v1").is_none());
        e.set_served("v1", Arc::from(&b"{}"[..]));
        assert_eq!(e.served("v1").as_deref(), Some(&b"{}"[..]));
        assert!(e.served("v2").is_none());
    }

    fn labelled(key: &str, revision: i64, labels: Value) -> (Stored, Vec<u8>) {
        let object = json!({"metadata": {"name": key, "labels": labels}});
        let json = serde_json::to_vec(&object).unwrap();
        let stored = Stored {
            object: Arc::new(object),
            revision,
            create_revision: revision,
            change: None,
        };
        (stored, json)
    }

    fn names(page: &ListPage<Arc<Entry>>) -> Vec<String> {
        page.items
            .iter()
            .map(|e| {
                e.object().unwrap()["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn the_label_index_follows_creates_updates_and_deletes() {
        let json =
            serde_json::to_vec(&json!({"metadata": {"name": "n/a", "labels": {"app": "web"}}}))
                .unwrap();
        let labels = labels_in_json(&json).unwrap();
        assert_eq!(labels, json!({"metadata": {"labels": {"app": "web"}}}));
        assert!(labels_in_json(b"[1]").is_err());
        let state = CurrentState::new(
            vec![(
                "/core/pods/n/a".into(),
                Entry::new(json.into(), 1, 1),
                labels,
            )],
            1,
        );
        let (b, b_json) = labelled("n/b", 2, json!({"app": "web", "tier": "1"}));
        let (c, c_json) = labelled("m/c", 3, json!({"app": "db"}));
        let (d, d_json) = labelled("n/d", 4, json!({"app": 7}));
        let (cm, cm_json) = labelled("n/x", 5, json!({"app": "web"}));
        state.apply(&[
            Change::Put("/core/pods/n/b", &b, &b_json, None),
            Change::Put("/core/pods/m/c", &c, &c_json, None),
            Change::Put("/core/pods/n/d", &d, &d_json, None),
            Change::Put("/core/configmaps/n/x", &cm, &cm_json, None),
        ]);
        let web = ["web".to_string()];
        let all = |prefix: &str, values: &[String]| {
            names(&state.list_labelled(prefix, None, 0, "app", values))
        };
        assert_eq!(all("/core/pods/", &web), ["n/a", "n/b"]);
        assert_eq!(all("/core/pods/m/", &web), Vec::<String>::new());
        assert_eq!(all("/core/configmaps/", &web), ["n/x"]);
        let either = ["web".to_string(), "db".to_string(), "7".to_string()];
        assert_eq!(all("/core/pods/", &either), ["m/c", "n/a", "n/b", "n/d"]);
        assert_eq!(state.count_labelled("/core/pods/n/", "app", &either), 4);

        // Paging: a continue key, the rest after it.
        let first = state.list_labelled("/core/pods/", None, 2, "app", &either);
        assert_eq!(names(&first), ["m/c", "n/a"]);
        assert_eq!(first.remaining, Some(2));
        let rest = state.list_labelled(
            "/core/pods/",
            first.continue_key.as_deref(),
            2,
            "app",
            &either,
        );
        assert_eq!(names(&rest), ["n/b", "n/d"]);
        assert_eq!(rest.continue_key, None);

        // A relabel moves the key; a delete drops it.
        let (b2, b2_json) = labelled("n/b", 6, json!({"app": "db"}));
        state.apply(&[Change::Put(
            "/core/pods/n/b",
            &b2,
            &b2_json,
            Some(&b.object),
        )]);
        assert_eq!(all("/core/pods/", &web), ["n/a"]);
        assert_eq!(all("/core/pods/", &["db".to_string()]), ["m/c", "n/b"]);
        state.apply(&[Change::Delete("/core/pods/m/c", 7, Some(&c.object))]);
        assert_eq!(all("/core/pods/", &["db".to_string()]), ["n/b"]);
        assert_eq!(
            state.count_labelled("/core/pods/", "tier", &["1".to_string()]),
            0
        );
        assert_eq!(state.count_labelled("/core/pods/", "nope", &web), 0);
    }
}
