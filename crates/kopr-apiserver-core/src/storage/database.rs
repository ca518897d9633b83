//! The SQLite database behind the store: schema, connections and queries.
//!
//! A file database runs in WAL mode with one writer connection and a pool of
//! reader connections, so reads never wait for writes. An in-memory database
//! is one connection shared by both.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::current::{Entry, Loaded, labels_in_json};
use super::{
    Encryption, EventType, ListPage, StorageError, Stored, WatchEvent, set_resource_version,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kv_log (
    revision INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    event INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kv_log_key ON kv_log(key, revision);
CREATE TABLE IF NOT EXISTS kv_meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Data directories written before the log was the only record of each key's state also
/// kept `kv_current`, one row per live key naming its newest log row: a second B-tree written
/// on every write. The log's `kv_log_key` index answers the same question (the newest row of
/// each key, live unless it is a deletion), so the table is dropped when such a directory is
/// opened; nothing in it is missing from the log.
const DROP_CURRENT: &str = "DROP TABLE IF EXISTS kv_current;";

/// Log row event codes.
pub(super) const EVENT_CREATE: i64 = 0;
pub(super) const EVENT_UPDATE: i64 = 1;
pub(super) const EVENT_DELETE: i64 = 2;

/// A handle on the database: cheap to clone.
#[derive(Clone)]
pub struct Database {
    inner: Arc<DatabaseInner>,
}

struct DatabaseInner {
    writer: Mutex<Connection>,
    /// Path for opening more readers; None for an in-memory database, whose
    /// readers share the writer connection.
    path: Option<PathBuf>,
    idle_readers: Mutex<Vec<Connection>>,
}

fn configure(conn: &Connection) -> Result<(), rusqlite::Error> {
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    Ok(())
}

impl Database {
    /// Opens or creates a file database in WAL mode.
    pub fn open_file(path: &Path) -> Result<Database, StorageError> {
        let conn = Connection::open(path)?;
        configure(&conn)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // NORMAL in WAL mode: a commit is in the WAL file when it returns, so
        // it survives the process being killed; only an OS crash can lose it.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Checkpoint (copy the WAL into the database, and sync it) every 4,000 pages (16 MiB)
        // rather than SQLite's 1,000: a page written many times between checkpoints is copied
        // once, and the sync, the only one in this mode, comes a quarter as often.
        conn.pragma_update(None, "wal_autocheckpoint", 4000)?;
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(DROP_CURRENT)?;
        Ok(Database {
            inner: Arc::new(DatabaseInner {
                writer: Mutex::new(conn),
                path: Some(path.to_path_buf()),
                idle_readers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Opens a fresh in-memory database.
    pub fn open_memory() -> Result<Database, StorageError> {
        let conn = Connection::open_in_memory()?;
        configure(&conn)?;
        conn.execute_batch(SCHEMA)?;
        Ok(Database {
            inner: Arc::new(DatabaseInner {
                writer: Mutex::new(conn),
                path: None,
                idle_readers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Runs `f` on the writer connection.
    pub fn with_writer<R>(&self, f: impl FnOnce(&mut Connection) -> R) -> Result<R, StorageError> {
        let mut guard =
            self.inner.writer.lock().map_err(|_| {
                StorageError::Io(std::io::Error::other("writer connection poisoned"))
            })?;
        Ok(f(&mut guard))
    }

    /// Runs `f` on a reader connection.
    pub fn with_reader<R>(&self, f: impl FnOnce(&Connection) -> R) -> Result<R, StorageError> {
        let Some(path) = &self.inner.path else {
            return self.with_writer(|c| f(c));
        };
        let pooled = self
            .inner
            .idle_readers
            .lock()
            .ok()
            .and_then(|mut v| v.pop());
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(
                    path,
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                        | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                configure(&c)?;
                c
            }
        };
        let result = f(&conn);
        if let Ok(mut idle) = self.inner.idle_readers.lock()
            && idle.len() < 16
        {
            idle.push(conn);
        }
        Ok(result)
    }
}

/// Reads the newest revision and the compaction revision.
pub(super) fn read_revisions(c: &Connection) -> Result<(i64, i64), StorageError> {
    let current: i64 = c.query_row("SELECT COALESCE(MAX(revision), 0) FROM kv_log", [], |r| {
        r.get(0)
    })?;
    // A fully compacted log keeps its sequence in sqlite_sequence.
    let seq: i64 = c
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'kv_log'",
            [],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(0);
    let compacted: i64 = c
        .query_row(
            "SELECT value FROM kv_meta WHERE name = 'compacted'",
            [],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(0);
    Ok((current.max(seq), compacted))
}

pub(super) fn decode(
    key: &str,
    bytes: &[u8],
    revision: i64,
    encryption: &Encryption,
) -> Result<Value, StorageError> {
    let bytes = encryption
        .decrypt(key, bytes)
        .map_err(|why| StorageError::Encryption {
            key: key.to_string(),
            why,
        })?;
    let mut v: Value = serde_json::from_slice(&bytes).map_err(|source| StorageError::Corrupt {
        key: key.to_string(),
        source,
    })?;
    set_resource_version(&mut v, revision);
    Ok(v)
}

/// The first key after every key with this prefix.
fn prefix_end(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    while let Some(last) = bytes.pop() {
        if last < 0x7f {
            bytes.push(last + 1);
            return String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    "\u{7f}".to_string()
}

/// The query for each key's newest log row among those `$filter` (a `WHERE` on `kv_log`)
/// keeps, found through `kv_log_key`, then `$tail`. A deletion's row leaves no object. A
/// creation's row keeps 0 as its create_revision, since that is its own revision: the
/// query answers the revision instead. Its rows are read by [`newest_row`].
macro_rules! newest_rows {
    ($filter:literal, $tail:literal) => {
        concat!(
            "SELECT l.key, l.revision,
                    CASE WHEN l.event = 0 THEN l.revision ELSE l.create_revision END, l.value
             FROM (SELECT key, MAX(revision) AS rev FROM kv_log ",
            $filter,
            " GROUP BY key) m
             CROSS JOIN kv_log l ON l.revision = m.rev
             WHERE l.event != 2",
            $tail
        )
    };
}

/// One row of a [`newest_rows`] query: key, revision, create revision, stored value.
fn newest_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, i64, i64, Vec<u8>)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

/// Every key's current object (its JSON, decrypted), with the revision they
/// are current at.
pub(super) fn all_current(
    c: &Connection,
    encryption: &Encryption,
) -> Result<(Vec<Loaded>, i64), StorageError> {
    let tx = c.unchecked_transaction()?;
    let revision = current_revision_in_tx(&tx)?;
    // No ORDER BY: the state is a map, and sorting would copy every value into a temporary
    // B-tree.
    let mut stmt = tx.prepare_cached(newest_rows!("", ""))?;
    let rows = stmt.query_map([], newest_row)?;
    let mut items = Vec::new();
    for row in rows {
        let (key, rev, create_rev, bytes) = row?;
        let decrypted = match encryption.decrypt(&key, &bytes) {
            Ok(std::borrow::Cow::Owned(plain)) => Some(plain),
            Ok(std::borrow::Cow::Borrowed(_)) => None,
            Err(why) => return Err(StorageError::Encryption { key, why }),
        };
        let plain = decrypted.unwrap_or(bytes);
        // Read now for the label index, which also fails the open on a corrupt value as it
        // always did, rather than a later read.
        let labels = match labels_in_json(&plain) {
            Ok(labels) => labels,
            Err(source) => return Err(StorageError::Corrupt { key, source }),
        };
        let entry = Entry::new(plain.into_boxed_slice(), rev, create_rev);
        items.push((key, entry, labels));
    }
    Ok((items, revision))
}

fn current_revision_in_tx(c: &Connection) -> Result<i64, StorageError> {
    Ok(read_revisions(c)?.0)
}

type RawRow = (String, i64, i64, Vec<u8>);

fn finish_page(
    tx: &rusqlite::Transaction<'_>,
    mut rows: Vec<RawRow>,
    revision: i64,
    limit: usize,
    end: &str,
    count_after: impl Fn(&rusqlite::Transaction<'_>, &str, &str) -> Result<i64, rusqlite::Error>,
    encryption: &Encryption,
) -> Result<ListPage, StorageError> {
    let mut continue_key = None;
    let mut remaining = None;
    if limit > 0 && rows.len() > limit {
        rows.truncate(limit);
        if let Some((last, ..)) = rows.last() {
            remaining = Some(count_after(tx, last, end)?);
            continue_key = Some(last.clone());
        }
    }
    let items = rows
        .into_iter()
        .map(|(key, rev, create_rev, bytes)| {
            Ok(Stored {
                object: Arc::new(decode(&key, &bytes, rev, encryption)?),
                revision: rev,
                create_revision: create_rev,
                change: None,
            })
        })
        .collect::<Result<Vec<_>, StorageError>>()?;
    Ok(ListPage {
        items,
        revision,
        continue_key,
        remaining,
    })
}

pub(super) fn list_at(
    c: &Connection,
    prefix: &str,
    at: i64,
    start_after: Option<&str>,
    limit: usize,
    encryption: &Encryption,
) -> Result<ListPage, StorageError> {
    let tx = c.unchecked_transaction()?;
    let end = prefix_end(prefix);
    let lower = start_after
        .filter(|s| s.as_bytes() > prefix.as_bytes())
        .unwrap_or(prefix);
    let fetch = if limit == 0 { -1 } else { limit as i64 + 1 };
    let sql = newest_rows!(
        "WHERE key > ?1 AND key < ?2 AND revision <= ?3",
        " ORDER BY l.key LIMIT ?4"
    );
    let mut stmt = tx.prepare_cached(sql)?;
    let rows = stmt.query_map(params![lower, end, at, fetch], newest_row)?;
    let mut items = Vec::new();
    for row in rows {
        items.push(row?);
    }
    drop(stmt);
    finish_page(
        &tx,
        items,
        at,
        limit,
        &end,
        |tx, after, end| {
            tx.query_row(
                "SELECT COUNT(*) FROM (SELECT key, MAX(revision) AS rev FROM kv_log
               WHERE key > ?1 AND key < ?2 AND revision <= ?3 GROUP BY key) m
             JOIN kv_log l ON l.revision = m.rev WHERE l.event != 2",
                params![after, end, at],
                |r| r.get(0),
            )
        },
        encryption,
    )
}

pub(super) fn history(
    c: &Connection,
    prefix: &str,
    after: i64,
    encryption: &Encryption,
) -> Result<Vec<Arc<WatchEvent>>, StorageError> {
    let end = prefix_end(prefix);
    let mut stmt = c.prepare_cached(
        "SELECT l.revision, l.key, l.event, l.value, p.revision, p.value FROM kv_log l
         LEFT JOIN kv_log p ON p.revision = l.prev_revision AND l.prev_revision > 0
         WHERE l.revision > ?1 AND l.key >= ?2 AND l.key < ?3 ORDER BY l.revision",
    )?;
    let rows = stmt.query_map(params![after, prefix, end], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, Vec<u8>>(3)?,
            r.get::<_, Option<i64>>(4)?,
            r.get::<_, Option<Vec<u8>>>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (revision, key, event, value, prev_rev, prev_value) = row?;
        let event_type = match event {
            EVENT_CREATE => EventType::Added,
            EVENT_UPDATE => EventType::Modified,
            _ => EventType::Deleted,
        };
        let object = Arc::new(decode(&key, &value, revision, encryption)?);
        let previous = match (prev_rev, prev_value) {
            (Some(r), Some(v)) => Some(Arc::new(decode(&key, &v, r, encryption)?)),
            _ => None,
        };
        out.push(Arc::new(WatchEvent::new(
            revision, key, event_type, object, previous,
        )));
    }
    Ok(out)
}

/// Removes log rows superseded at or before `revision`, and deletions at or
/// before it, keeping every key's state as of `revision`.
pub(super) fn compact(c: &mut Connection, revision: i64) -> Result<(), StorageError> {
    let tx = c.transaction()?;
    tx.execute(
        "DELETE FROM kv_log WHERE revision <= ?1 AND revision <
           (SELECT MAX(l2.revision) FROM kv_log l2 WHERE l2.key = kv_log.key AND l2.revision <= ?1)",
        params![revision],
    )?;
    tx.execute(
        "DELETE FROM kv_log WHERE revision <= ?1 AND event = ?2",
        params![revision, EVENT_DELETE],
    )?;
    tx.execute(
        "INSERT INTO kv_meta(name, value) VALUES('compacted', ?1)
         ON CONFLICT(name) DO UPDATE SET value = MAX(value, excluded.value)",
        params![revision],
    )?;
    tx.commit()?;
    Ok(())
}
