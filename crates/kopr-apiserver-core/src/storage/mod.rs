//! Storage: an append-only revision log in SQLite, in the manner of k3s's kine.
//!
//! Every write appends one row to `kv_log`; its row id is the global, strictly
//! increasing revision that clients see as `resourceVersion`; a key's newest row
//! is its state (none after a deletion). Writes are compare-and-swap on the
//! key's current revision and are committed in small groups by one writer
//! thread ([`writer`]), after which they are published to watchers in
//! revision order. The current object of every key is also held in memory
//! ([`current`]), so `get` and `list` neither wait for the writer nor decode;
//! reads of history (at a revision, for watches) use their own connections
//! and never wait for the writer either (WAL mode).

mod current;
mod database;
pub mod encryption;
mod recent;
mod writer;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

pub use current::Entry;
pub use database::Database;
pub use encryption::{Encryption, EncryptionConfigError};
use writer::{WriteJob, WriterHandle};

/// The database file inside the data directory.
pub const DATABASE_FILE: &str = "state.db";
/// Errors from the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The database failed.
    #[error("storage: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored value could not be decoded.
    #[error("storage: corrupt value at {key}: {source}")]
    Corrupt {
        /// The key whose value is corrupt.
        key: String,
        /// The decoding error.
        source: serde_json::Error,
    },
    /// The writer thread is gone (the server is shutting down).
    #[error("storage: the writer has stopped")]
    WriterGone,
    /// Opening or preparing the data directory failed.
    #[error("storage: {0}")]
    Io(#[from] std::io::Error),
    /// A value could not be encrypted or decrypted.
    #[error("storage: encryption at rest failed for {key}: {why}")]
    Encryption {
        /// The key whose value failed.
        key: String,
        /// Why.
        why: String,
    },
    /// A write larger than etcd takes (its default `--max-request-bytes`, 1.5 MiB), with
    /// etcd's own words, which kube-apiserver passes on.
    #[error("etcdserver: request is too large")]
    TooLarge,
}

/// etcd's default limit of one request (`--max-request-bytes`): kube-apiserver cannot store
/// an object whose key and value are larger.
pub const MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// A stored object with its revisions.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The object, with `metadata.resourceVersion` set to `revision`.
    pub object: Arc<Value>,
    /// The revision of the last write to this key.
    pub revision: i64,
    /// The revision at which the key was created.
    pub create_revision: i64,
    /// For the answer to a write: the change it published, whose encodings are shared with
    /// the watchers (a response can take the object's from its watch line). `None` for reads.
    pub change: Option<Arc<WatchEvent>>,
}

/// What kind of change a [`WatchEvent`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The key was created.
    Added,
    /// The key was updated.
    Modified,
    /// The key was deleted.
    Deleted,
}

impl EventType {
    /// The watch event type string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change, as published to watchers.
#[derive(Debug)]
pub struct WatchEvent {
    /// Revision of the change.
    pub revision: i64,
    /// Storage key.
    pub key: String,
    /// Kind of change.
    pub event_type: EventType,
    /// The object after the change (for deletions: its last state), with the
    /// change's revision as resourceVersion.
    pub object: Arc<Value>,
    /// The object before the change, for updates and deletions.
    pub previous: Option<Arc<Value>>,
    /// The event's JSON watch lines, as each kind of watcher sees it ([`Seen`]), each encoded
    /// once and shared by all watchers that see it so.
    encoded: [std::sync::OnceLock<bytes::Bytes>; 3],
    /// The object a watcher whose selector the object left sees ([`Seen::Left`]).
    left: std::sync::OnceLock<Arc<Value>>,
}

/// How a watcher sees a stored event: as it is, or, for a filtered watcher, as the object
/// entering or leaving its selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The event's own type and object.
    AsIs,
    /// ADDED: a change that brought the object into the selection, with its new state.
    Entered,
    /// DELETED: a change that took it out, with its state before the change at the change's
    /// resourceVersion, as kube-apiserver's watch cache sends it.
    Left,
}

impl Seen {
    fn index(self) -> usize {
        match self {
            Seen::AsIs => 0,
            Seen::Entered => 1,
            Seen::Left => 2,
        }
    }
}

impl WatchEvent {
    /// A new event.
    pub fn new(
        revision: i64,
        key: String,
        event_type: EventType,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) -> Self {
        WatchEvent {
            revision,
            key,
            event_type,
            object,
            previous,
            encoded: Default::default(),
            left: std::sync::OnceLock::new(),
        }
    }

    /// The event's type as `seen`.
    pub fn type_seen(&self, seen: Seen) -> &'static str {
        match seen {
            Seen::AsIs => self.event_type.as_str(),
            Seen::Entered => "ADDED",
            Seen::Left => "DELETED",
        }
    }

    /// The object as `seen`: for [`Seen::Left`] the previous state at this event's
    /// resourceVersion (made once).
    pub fn object_seen(&self, seen: Seen) -> Arc<Value> {
        match (seen, &self.previous) {
            (Seen::Left, Some(previous)) => self
                .left
                .get_or_init(|| {
                    let mut object = (**previous).clone();
                    set_resource_version(&mut object, self.revision);
                    Arc::new(object)
                })
                .clone(),
            _ => self.object.clone(),
        }
    }

    /// The watch line as `seen`, made by `encode` from the type and object the first time
    /// and shared after.
    pub fn line_seen(
        &self,
        seen: Seen,
        encode: impl FnOnce(&'static str, &Value) -> bytes::Bytes,
    ) -> bytes::Bytes {
        self.encoded[seen.index()]
            .get_or_init(|| encode(self.type_seen(seen), &self.object_seen(seen)))
            .clone()
    }
}

/// Outcome of a compare-and-swap write.
#[derive(Debug)]
pub enum WriteOutcome {
    /// The write was committed.
    Committed(Stored),
    /// Create found the key already present.
    AlreadyExists,
    /// Update or delete found no such key.
    NotFound,
    /// Update or delete found the key at another revision.
    Conflict,
}

/// A page of a list: stored objects, or current entries ([`Store::list`]).
#[derive(Debug)]
pub struct ListPage<T = Stored> {
    /// The objects, in key order.
    pub items: Vec<T>,
    /// The revision the list was read at.
    pub revision: i64,
    /// The key to continue from, when `limit` cut the list short.
    pub continue_key: Option<String>,
    /// How many more items remain after this page, when cut short.
    pub remaining: Option<i64>,
}

/// Errors specific to reading at a revision.
#[derive(Debug, thiserror::Error)]
pub enum ReadAtError {
    /// The revision has been compacted away.
    #[error("too old resource version: {requested} ({compacted})")]
    Compacted {
        /// The revision asked for.
        requested: i64,
        /// The oldest revision still held.
        compacted: i64,
    },
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The store: cheap to clone, shared by all request handlers.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

struct StoreInner {
    db: Database,
    encryption: Arc<Encryption>,
    current: Arc<current::CurrentState>,
    writer: WriterHandle,
    events: broadcast::Sender<Arc<WatchEvent>>,
    recent: Arc<recent::Recent>,
    revision: Arc<AtomicI64>,
    compacted: AtomicI64,
}

/// Capacity of the in-memory event channel; a watcher that falls further
/// behind catches up from the log.
const EVENT_CHANNEL_CAPACITY: usize = 16 * 1024;

/// Changes kept in memory for watches that start at a recent revision (a
/// list then a watch from its resourceVersion); older starts read the log.
/// Each change holds its object and the one before, so the window is kept
/// small: 16,384 cost 110 MiB of RSS with 1,000 pods after a scale-up.
const RECENT_WINDOW: usize = 1024;

impl Store {
    /// Opens (or creates) the store in `dir`, or in memory when `dir` is None.
    pub fn open(dir: Option<&Path>) -> Result<Store, StorageError> {
        Store::open_encrypted(dir, Encryption::default())
    }

    /// Opens the store, encrypting at rest what `encryption` lists.
    pub fn open_encrypted(
        dir: Option<&Path>,
        encryption: Encryption,
    ) -> Result<Store, StorageError> {
        let encryption = Arc::new(encryption);
        let db = match dir {
            Some(d) => Database::open_file(&d.join(DATABASE_FILE))?,
            None => Database::open_memory()?,
        };
        let (revision, compacted) = db.with_reader(database::read_revisions)??;
        let (objects, at) = db.with_reader(|c| database::all_current(c, &encryption))??;
        let current = Arc::new(current::CurrentState::new(objects, at));
        let (events, _) = broadcast::channel(EVENT_CHANNEL_CAPACITY);
        let revision = Arc::new(AtomicI64::new(revision));
        let recent = Arc::new(recent::Recent::new(RECENT_WINDOW));
        let writer = writer::spawn(
            db.clone(),
            current.clone(),
            events.clone(),
            recent.clone(),
            revision.clone(),
        )?;
        Ok(Store {
            inner: Arc::new(StoreInner {
                db,
                encryption,
                current,
                writer,
                events,
                recent,
                revision,
                compacted: AtomicI64::new(compacted),
            }),
        })
    }

    /// An identity of this store, distinct for every store open in the
    /// process (keys process-wide bookkeeping by server).
    pub fn instance_id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// The newest committed revision.
    pub fn current_revision(&self) -> i64 {
        self.inner.revision.load(Ordering::Acquire)
    }

    /// The oldest revision whose history is still held.
    pub fn compacted_revision(&self) -> i64 {
        self.inner.compacted.load(Ordering::Acquire)
    }

    /// Subscribes to committed changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<WatchEvent>> {
        self.inner.events.subscribe()
    }

    async fn read<R: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> Result<R, StorageError> + Send + 'static,
    ) -> Result<R, StorageError> {
        let db = self.inner.db.clone();
        match tokio::task::spawn_blocking(move || db.with_reader(f)).await {
            Ok(r) => r?,
            Err(e) => Err(StorageError::Io(std::io::Error::other(e.to_string()))),
        }
    }

    /// The current value of `key`, read without waiting (the in-memory
    /// state every acknowledged write is already in).
    pub fn current(&self, key: &str) -> Option<Stored> {
        self.inner.current.get(key)
    }

    /// The current objects under `prefix`, read without waiting.
    pub fn current_objects(&self, prefix: &str) -> Vec<Arc<Value>> {
        self.inner
            .current
            .list(prefix, None, 0)
            .items
            .into_iter()
            .filter_map(|e| e.object())
            .collect()
    }

    /// The revision of the newest change to a key under `prefix` (a
    /// resource's prefix, `/<group>/<plural>/`), 0 if none since the store
    /// opened; kept for every resource, so caches of one kind know when to
    /// rebuild.
    pub fn last_change(&self, prefix: &str) -> i64 {
        self.last_change_of(&[prefix])
    }

    /// The newest [`Store::last_change`] of several prefixes, read at once.
    pub fn last_change_of(&self, prefixes: &[&str]) -> i64 {
        self.inner.current.last_change_of(prefixes)
    }

    /// Reads the current value of `key`.
    pub async fn get(&self, key: &str) -> Result<Option<Stored>, StorageError> {
        Ok(self.inner.current.get(key))
    }

    /// The current entry of `key`, undecoded (read fields with [`Entry::view`]).
    pub fn entry(&self, key: &str) -> Option<Arc<Entry>> {
        self.inner.current.entry(key)
    }

    /// Lists current entries under `prefix` (a key prefix ending in `/`),
    /// starting after `start_after`, at most `limit` items (0 = all); their
    /// objects are decoded on demand ([`Entry::object`]).
    pub fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> ListPage<Arc<Entry>> {
        self.inner.current.list(prefix, start_after, limit)
    }

    /// As [`Store::list`], only the entries whose label `label` has one of `values`
    /// (read from an index, not by scanning the prefix).
    pub fn list_labelled(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        label: &str,
        values: &[String],
    ) -> ListPage<Arc<Entry>> {
        self.inner
            .current
            .list_labelled(prefix, start_after, limit, label, values)
    }

    /// How many current objects of `prefix`'s resource carry label `label` with one of
    /// `values` (to pick the most selective label of a selector).
    pub fn count_labelled(&self, prefix: &str, label: &str, values: &[String]) -> usize {
        self.inner.current.count_labelled(prefix, label, values)
    }

    /// Lists values under `prefix` as they were at `revision`.
    pub async fn list_at(
        &self,
        prefix: &str,
        revision: i64,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage, ReadAtError> {
        let compacted = self.compacted_revision();
        if revision < compacted {
            return Err(ReadAtError::Compacted {
                requested: revision,
                compacted,
            });
        }
        let (prefix, start) = (prefix.to_string(), start_after.map(str::to_string));
        let encryption = self.inner.encryption.clone();
        Ok(self
            .read(move |c| {
                database::list_at(c, &prefix, revision, start.as_deref(), limit, &encryption)
            })
            .await?)
    }

    /// Changes under `prefix` with revision greater than `after`, in order.
    pub async fn history(
        &self,
        prefix: &str,
        after: i64,
    ) -> Result<Vec<Arc<WatchEvent>>, ReadAtError> {
        let compacted = self.compacted_revision();
        if after < compacted {
            return Err(ReadAtError::Compacted {
                requested: after,
                compacted,
            });
        }
        let current = self.current_revision();
        if let Some(events) = self.inner.recent.after(prefix, after, current) {
            return Ok(events);
        }
        let prefix = prefix.to_string();
        let encryption = self.inner.encryption.clone();
        Ok(self
            .read(move |c| database::history(c, &prefix, after, &encryption))
            .await?)
    }

    async fn write(
        &self,
        job: WriteJob,
        rx: oneshot::Receiver<writer::Answer>,
    ) -> Result<WriteOutcome, StorageError> {
        self.inner.writer.submit(job)?;
        let (outcome, evicted) = rx.await.map_err(|_| StorageError::WriterGone)?;
        // Freed here, on this request's thread, rather than on the writer's.
        drop(evicted);
        outcome
    }

    /// Creates `key` with `object`, failing if it exists.
    pub async fn create(&self, key: &str, object: Value) -> Result<WriteOutcome, StorageError> {
        let (tx, rx) = oneshot::channel();
        let job = WriteJob::create(key, object, tx, &self.inner.encryption)?;
        self.write(job, rx).await
    }

    /// Replaces `key` with `object` if its current revision is `expected`;
    /// `previous` is the object as read at `expected`, published with the change.
    pub async fn update(
        &self,
        key: &str,
        object: Value,
        expected: i64,
        previous: Arc<Value>,
    ) -> Result<WriteOutcome, StorageError> {
        let (tx, rx) = oneshot::channel();
        let job = WriteJob::update(key, object, expected, previous, tx, &self.inner.encryption)?;
        self.write(job, rx).await
    }

    /// Deletes `key` if its current revision is `expected`; `last` is the
    /// object's last state, published with the deletion.
    pub async fn delete(
        &self,
        key: &str,
        last: Arc<Value>,
        expected: i64,
    ) -> Result<WriteOutcome, StorageError> {
        let (tx, rx) = oneshot::channel();
        let job = WriteJob::delete(key, last, expected, tx, &self.inner.encryption)?;
        self.write(job, rx).await
    }

    /// Drops history older than `revision`, keeping each key's state at it.
    pub async fn compact(&self, revision: i64) -> Result<(), StorageError> {
        let revision = revision.min(self.current_revision());
        if revision <= self.compacted_revision() {
            return Ok(());
        }
        let db = self.inner.db.clone();
        let done =
            tokio::task::spawn_blocking(move || db.with_writer(|c| database::compact(c, revision)))
                .await
                .map_err(|e| StorageError::Io(std::io::Error::other(e.to_string())))?;
        done??;
        self.inner.compacted.fetch_max(revision, Ordering::AcqRel);
        Ok(())
    }
}

/// Compacts the store periodically, keeping at least `retain` of history:
/// each tick compacts to the revision that was current one tick earlier,
/// as kube-apiserver does with etcd.
pub fn spawn_compactor(
    store: Store,
    retain: std::time::Duration,
    stop: tokio_util::sync::CancellationToken,
) {
    tokio::spawn(async move {
        let mut previous = store.current_revision();
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(retain) => {}
            }
            if let Err(e) = store.compact(previous).await {
                tracing::warn!(error = %e, "compaction failed");
            }
            previous = store.current_revision();
        }
    });
}

/// Sets `metadata.resourceVersion` on an object.
pub(crate) fn set_resource_version(object: &mut Value, revision: i64) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert(
            "resourceVersion".into(),
            Value::String(revision.to_string()),
        );
    } else if let Some(obj) = object.as_object_mut() {
        let mut meta = serde_json::Map::new();
        meta.insert(
            "resourceVersion".into(),
            Value::String(revision.to_string()),
        );
        obj.insert("metadata".into(), Value::Object(meta));
    }
}

/// An object's JSON as stored.
pub(crate) struct Encoded {
    /// Without its resourceVersion, before encryption: what the in-memory state holds.
    pub(crate) plain: Vec<u8>,
    /// As the database holds it when the key is encrypted at rest; otherwise `plain` is.
    pub(crate) sealed: Option<Vec<u8>>,
}

impl Encoded {
    /// The bytes the database holds.
    pub(crate) fn stored(&self) -> &[u8] {
        self.sealed.as_deref().unwrap_or(&self.plain)
    }
}

/// Serializes an object for storage, removing its resourceVersion (the
/// revision is assigned at commit and set again on read).
pub(crate) fn encode_for_storage(
    key: &str,
    object: &mut Value,
    encryption: &Encryption,
) -> Result<Encoded, StorageError> {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    let plain = serde_json::to_vec(object).map_err(|source| StorageError::Corrupt {
        key: key.to_string(),
        source,
    })?;
    let sealed =
        if encryption.encrypts(key) {
            Some(encryption.encrypt(key, plain.clone()).map_err(|why| {
                StorageError::Encryption {
                    key: key.to_string(),
                    why,
                }
            })?)
        } else {
            None
        };
    Ok(Encoded { plain, sealed })
}

/// [`encode_for_storage`] for a create or an update, which etcd would refuse over
/// [`MAX_REQUEST_BYTES`] (the value as stored, encrypted or not, plus its key).
pub(crate) fn encode_write(
    key: &str,
    object: &mut Value,
    encryption: &Encryption,
) -> Result<Encoded, StorageError> {
    let encoded = encode_for_storage(key, object, encryption)?;
    if encoded.stored().len() + key.len() > MAX_REQUEST_BYTES {
        return Err(StorageError::TooLarge);
    }
    Ok(encoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: i64) -> Value {
        json!({"metadata": {"name": "x"}, "v": v})
    }

    fn committed(o: WriteOutcome) -> Stored {
        match o {
            WriteOutcome::Committed(s) => s,
            other => panic!("expected a commit, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn compare_and_swap_and_revisions() {
        let store = Store::open(None).unwrap();
        let a = committed(store.create("/t/a", obj(1)).await.unwrap());
        assert!(matches!(
            store.create("/t/a", obj(1)).await.unwrap(),
            WriteOutcome::AlreadyExists
        ));
        let b = committed(
            store
                .update("/t/a", obj(2), a.revision, a.object.clone())
                .await
                .unwrap(),
        );
        assert!(b.revision > a.revision);
        assert_eq!(b.create_revision, a.revision);
        assert_eq!(
            b.object["metadata"]["resourceVersion"],
            b.revision.to_string()
        );
        // A stale expected revision is a conflict, a missing key not found.
        assert!(matches!(
            store
                .update("/t/a", obj(3), a.revision, a.object.clone())
                .await
                .unwrap(),
            WriteOutcome::Conflict
        ));
        assert!(matches!(
            store
                .update("/t/zz", obj(3), 1, a.object.clone())
                .await
                .unwrap(),
            WriteOutcome::NotFound
        ));
        let d = committed(
            store
                .delete("/t/a", b.object.clone(), b.revision)
                .await
                .unwrap(),
        );
        assert!(d.revision > b.revision);
        assert!(store.get("/t/a").await.unwrap().is_none());
        assert_eq!(store.current_revision(), d.revision);
    }

    #[tokio::test]
    async fn reads_at_a_revision_history_and_compaction() {
        let store = Store::open(None).unwrap();
        let a1 = committed(store.create("/t/a", obj(1)).await.unwrap());
        let b1 = committed(store.create("/t/b", obj(1)).await.unwrap());
        let a2 = committed(
            store
                .update("/t/a", obj(2), a1.revision, a1.object.clone())
                .await
                .unwrap(),
        );
        committed(
            store
                .delete("/t/b", b1.object.clone(), b1.revision)
                .await
                .unwrap(),
        );

        let then = store.list_at("/t/", b1.revision, None, 0).await.unwrap();
        let values: Vec<i64> = then
            .items
            .iter()
            .map(|s| s.object["v"].as_i64().unwrap())
            .collect();
        assert_eq!(values, [1, 1], "both keys at their first versions");
        let now = store.list("/t/", None, 0);
        assert_eq!(now.items.len(), 1);
        assert_eq!(now.items[0].object().unwrap()["v"], 2);

        let history = store.history("/t/", a1.revision).await.unwrap();
        let kinds: Vec<EventType> = history.iter().map(|e| e.event_type).collect();
        assert_eq!(
            kinds,
            [EventType::Added, EventType::Modified, EventType::Deleted]
        );
        assert_eq!(history[1].previous.as_ref().unwrap()["v"], 1);

        store.compact(a2.revision).await.unwrap();
        assert!(matches!(
            store.history("/t/", a1.revision).await,
            Err(ReadAtError::Compacted { .. })
        ));
        // The state at the compaction revision is still readable.
        // At a2, `a` was at its second version and `b` not yet deleted.
        let at = store.list_at("/t/", a2.revision, None, 0).await.unwrap();
        let values: Vec<i64> = at
            .items
            .iter()
            .map(|s| s.object["v"].as_i64().unwrap())
            .collect();
        assert_eq!(values, [2, 1]);
    }

    #[tokio::test]
    async fn paging_and_reopening_a_file_database() {
        let dir = std::env::temp_dir().join(format!("kopr-storage-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let last = {
            let store = Store::open(Some(&dir)).unwrap();
            let mut last = 0;
            for i in 0..5 {
                last = committed(store.create(&format!("/t/k{i}"), obj(i)).await.unwrap()).revision;
            }
            let page = store.list("/t/", None, 2);
            assert_eq!(page.items.len(), 2);
            assert_eq!(page.remaining, Some(3));
            let next = store.list("/t/", page.continue_key.as_deref(), 2);
            assert_eq!(next.items[0].object().unwrap()["v"], 2);
            last
        };
        let store = Store::open(Some(&dir)).unwrap();
        assert_eq!(store.current_revision(), last);
        let reopened = store.list("/t/", None, 0);
        assert_eq!(reopened.items.len(), 5);
        let object = reopened.items[4].object().unwrap();
        assert_eq!(object["v"], 4);
        assert_eq!(object["metadata"]["resourceVersion"], last.to_string());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The current state read back at open and by a read at a revision: each key's value and
    /// revisions.
    async fn state_of(store: &Store, at: i64) -> Vec<(i64, i64, i64)> {
        let now: Vec<(i64, i64, i64)> = store
            .list("/t/", None, 0)
            .items
            .iter()
            .map(|e| {
                let s = e.stored().unwrap();
                (
                    s.object["v"].as_i64().unwrap(),
                    s.revision,
                    s.create_revision,
                )
            })
            .collect();
        let then: Vec<(i64, i64, i64)> = store
            .list_at("/t/", at, None, 0)
            .await
            .unwrap()
            .items
            .iter()
            .map(|s| {
                (
                    s.object["v"].as_i64().unwrap(),
                    s.revision,
                    s.create_revision,
                )
            })
            .collect();
        assert_eq!(now, then);
        now
    }

    #[tokio::test]
    async fn reopening_keeps_values_and_revisions_in_either_format() {
        let dir = std::env::temp_dir().join(format!("kopr-storage-format-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (expected, last) = {
            let store = Store::open(Some(&dir)).unwrap();
            let a1 = committed(store.create("/t/a", obj(1)).await.unwrap());
            let b1 = committed(store.create("/t/b", obj(5)).await.unwrap());
            let a2 = committed(
                store
                    .update("/t/a", obj(2), a1.revision, a1.object.clone())
                    .await
                    .unwrap(),
            );
            store.compact(a2.revision).await.unwrap();
            // A deleted key's newest row is its deletion: no state, in the log or in memory.
            let c1 = committed(store.create("/t/c", obj(7)).await.unwrap());
            let gone = committed(
                store
                    .delete("/t/c", c1.object.clone(), c1.revision)
                    .await
                    .unwrap(),
            );
            let expected = vec![(2, a2.revision, a1.revision), (5, b1.revision, b1.revision)];
            assert_eq!(state_of(&store, gone.revision).await, expected);
            (expected, gone.revision)
        };
        // Written by this version: the log alone, creations without create_revision.
        {
            let store = Store::open(Some(&dir)).unwrap();
            assert_eq!(state_of(&store, last).await, expected);
        }
        // Written by earlier versions: create_revision set on creations' log rows, and a
        // `kv_current` table naming each live key's newest row (with its value, in the
        // oldest), which opening drops.
        {
            let conn = rusqlite::Connection::open(dir.join(DATABASE_FILE)).unwrap();
            conn.execute_batch(
                "CREATE TABLE kv_current (key TEXT PRIMARY KEY, revision INTEGER NOT NULL,
                     create_revision INTEGER NOT NULL, value BLOB NOT NULL) WITHOUT ROWID;
                 INSERT INTO kv_current
                     SELECT l.key, l.revision, l.create_revision, l.value FROM kv_log l
                     WHERE l.revision IN (SELECT MAX(revision) FROM kv_log GROUP BY key)
                       AND l.event != 2;
                 UPDATE kv_log SET create_revision = revision WHERE event = 0;",
            )
            .unwrap();
        }
        let store = Store::open(Some(&dir)).unwrap();
        assert_eq!(state_of(&store, last).await, expected);
        let tables: i64 = rusqlite::Connection::open(dir.join(DATABASE_FILE))
            .unwrap()
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'kv_current'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0, "kv_current is dropped");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
