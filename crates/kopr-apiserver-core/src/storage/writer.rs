//! The writer thread: commits compare-and-swap writes in groups.
//!
//! Requests are encoded on the callers' threads; the writer only checks the
//! expected revision, appends to the log and updates the in-memory state. All
//! jobs waiting when a transaction starts are committed together (one WAL
//! sync for the group), then published to watchers in revision order and
//! answered. A job that fails its check does not affect the others.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc;

use rusqlite::{Connection, params};
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use super::current::{Change, CurrentState};
use super::database::{Database, EVENT_CREATE, EVENT_DELETE, EVENT_UPDATE};
use super::{
    Encoded, Encryption, EventType, StorageError, Stored, WatchEvent, WriteOutcome,
    encode_for_storage, encode_write, set_resource_version,
};

/// Most jobs committed in one transaction.
const MAX_GROUP: usize = 256;

/// A write's answer: its outcome, and the change it pushed out of the watch window, if any,
/// for the writing request to free on its own thread (where the objects were made, which
/// frees them cheaper than the writer thread could, and off the writer's path).
pub(super) type Answer = (Result<WriteOutcome, StorageError>, Option<Arc<WatchEvent>>);

type Reply = oneshot::Sender<Answer>;

enum Op {
    Create {
        object: Value,
        bytes: Encoded,
    },
    Update {
        object: Value,
        bytes: Encoded,
        expected: i64,
        previous: Arc<Value>,
    },
    Delete {
        last: Arc<Value>,
        bytes: Encoded,
        expected: i64,
    },
}

impl Op {
    /// The object's JSON as the in-memory state keeps it.
    fn plain(&self) -> &[u8] {
        match self {
            Op::Create { bytes, .. } | Op::Update { bytes, .. } | Op::Delete { bytes, .. } => {
                &bytes.plain
            }
        }
    }
}

/// One write waiting for the writer.
pub(super) struct WriteJob {
    key: String,
    op: Op,
    reply: Reply,
}

impl WriteJob {
    pub(super) fn create(
        key: &str,
        mut object: Value,
        reply: Reply,
        encryption: &Encryption,
    ) -> Result<WriteJob, StorageError> {
        let bytes = encode_write(key, &mut object, encryption)?;
        Ok(WriteJob {
            key: key.to_string(),
            op: Op::Create { object, bytes },
            reply,
        })
    }

    pub(super) fn update(
        key: &str,
        mut object: Value,
        expected: i64,
        previous: Arc<Value>,
        reply: Reply,
        encryption: &Encryption,
    ) -> Result<WriteJob, StorageError> {
        let bytes = encode_write(key, &mut object, encryption)?;
        Ok(WriteJob {
            key: key.to_string(),
            op: Op::Update {
                object,
                bytes,
                expected,
                previous,
            },
            reply,
        })
    }

    /// The value logged for a deletion is the object's last state.
    pub(super) fn delete(
        key: &str,
        last: Arc<Value>,
        expected: i64,
        reply: Reply,
        encryption: &Encryption,
    ) -> Result<WriteJob, StorageError> {
        let bytes = encode_for_storage(key, &mut (*last).clone(), encryption)?;
        Ok(WriteJob {
            key: key.to_string(),
            op: Op::Delete {
                last,
                bytes,
                expected,
            },
            reply,
        })
    }
}

/// Sends jobs to the writer thread.
pub(super) struct WriterHandle {
    jobs: mpsc::Sender<WriteJob>,
}

impl WriterHandle {
    pub(super) fn submit(&self, job: WriteJob) -> Result<(), StorageError> {
        self.jobs.send(job).map_err(|_| StorageError::WriterGone)
    }
}

/// Starts the writer thread.
pub(super) fn spawn(
    db: Database,
    current: Arc<CurrentState>,
    events: broadcast::Sender<Arc<WatchEvent>>,
    recent: Arc<super::recent::Recent>,
    revision: Arc<AtomicI64>,
) -> Result<WriterHandle, StorageError> {
    let (tx, rx) = mpsc::channel::<WriteJob>();
    std::thread::Builder::new()
        .name("kopr-storage-writer".into())
        .spawn(move || run(db, rx, current, events, recent, revision))?;
    Ok(WriterHandle { jobs: tx })
}

fn run(
    db: Database,
    jobs: mpsc::Receiver<WriteJob>,
    current: Arc<CurrentState>,
    events: broadcast::Sender<Arc<WatchEvent>>,
    recent: Arc<super::recent::Recent>,
    revision: Arc<AtomicI64>,
) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        gather(&jobs, &mut group);
        let committed = db.with_writer(|conn| commit_group(conn, &mut group, &current));
        let results = match committed {
            Ok(Ok(results)) => results,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "storage write failed");
                fail_all(group, &e);
                continue;
            }
            Err(e) => {
                tracing::error!(error = %e, "storage writer unavailable");
                fail_all(group, &e);
                continue;
            }
        };
        // The in-memory state first, so that whoever hears of a write can read it.
        let changes: Vec<Change<'_>> = group
            .iter()
            .zip(&results)
            .filter_map(|(job, result)| match result {
                Applied::Done { stored, event } if event.event_type == EventType::Deleted => Some(
                    Change::Delete(&job.key, stored.revision, event.previous.as_deref()),
                ),
                Applied::Done { stored, event } => Some(Change::Put(
                    &job.key,
                    stored,
                    job.op.plain(),
                    event.previous.as_deref(),
                )),
                Applied::Rejected(_) => None,
            })
            .collect();
        current.apply(&changes);
        drop(changes);
        for (job, result) in group.into_iter().zip(results) {
            let (outcome, evicted) = match result {
                Applied::Done { mut stored, event } => {
                    // The window first: a watch that reads the revision then the
                    // window finds every change up to that revision in it.
                    let evicted = recent.push(event.clone());
                    revision.fetch_max(stored.revision, Ordering::AcqRel);
                    stored.change = Some(event.clone());
                    // No receivers is fine: nobody is watching.
                    let _ = events.send(event);
                    (WriteOutcome::Committed(stored), evicted)
                }
                Applied::Rejected(outcome) => (outcome, None),
            };
            // A writer that went away leaves the change to be freed here.
            let _ = job.reply.send((Ok(outcome), evicted));
        }
    }
}

/// Adds the jobs waiting behind the first to its group. Whenever some came, the writer yields
/// its core once and looks again, for as long as that brings more: on a busy server the
/// requests being admitted on the other threads join this commit instead of waiting for the
/// next one, and every commit costs the same whatever it holds (its WAL frames and locks).
/// An idle server's single write is committed at once.
fn gather(jobs: &mpsc::Receiver<WriteJob>, group: &mut Vec<WriteJob>) {
    loop {
        let before = group.len();
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(j) => group.push(j),
                Err(_) => break,
            }
        }
        if group.len() == before || group.len() >= MAX_GROUP {
            return;
        }
        std::thread::yield_now();
    }
}

fn fail_all(group: Vec<WriteJob>, e: &StorageError) {
    for job in group {
        let _ = job.reply.send((
            Err(StorageError::Io(std::io::Error::other(e.to_string()))),
            None,
        ));
    }
}

enum Applied {
    /// The write is in the group's transaction. `stored.change` stays empty until the group
    /// has committed and the writer hands `event` out with the reply.
    Done {
        stored: Stored,
        event: Arc<WatchEvent>,
    },
    Rejected(WriteOutcome),
}

fn commit_group(
    conn: &mut Connection,
    group: &mut [WriteJob],
    current: &CurrentState,
) -> Result<Vec<Applied>, StorageError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut results = Vec::with_capacity(group.len());
    let mut revisions = Revisions {
        current,
        written: std::collections::HashMap::new(),
    };
    for job in group.iter_mut() {
        let applied = apply(&tx, job, &revisions)?;
        if let Applied::Done { stored, event } = &applied {
            let now = (event.event_type != EventType::Deleted)
                .then_some((stored.revision, stored.create_revision));
            revisions.written.insert(job.key.clone(), now);
        }
        results.push(applied);
    }
    tx.commit()?;
    Ok(results)
}

/// Each key's revision and create revision as the group's checks see them: the in-memory
/// state, which the writer brings up to date after every commit and so holds each key's
/// newest log row when a group starts, overlaid with the group's own earlier writes (`None`
/// for a key they deleted). It answers what a lookup of the key's newest row in the log
/// would, without the lookup.
struct Revisions<'a> {
    current: &'a CurrentState,
    written: std::collections::HashMap<String, Option<(i64, i64)>>,
}

impl Revisions<'_> {
    fn of(&self, key: &str) -> Option<(i64, i64)> {
        match self.written.get(key) {
            Some(written) => *written,
            None => self
                .current
                .entry(key)
                .map(|e| (e.revision, e.create_revision)),
        }
    }
}

fn append(
    tx: &Connection,
    key: &str,
    event: i64,
    create_revision: i64,
    prev_revision: i64,
    bytes: &[u8],
) -> Result<i64, StorageError> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO kv_log(key, event, create_revision, prev_revision, value) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    stmt.execute(params![key, event, create_revision, prev_revision, bytes])?;
    Ok(tx.last_insert_rowid())
}

fn apply(
    tx: &Connection,
    job: &mut WriteJob,
    revisions: &Revisions<'_>,
) -> Result<Applied, StorageError> {
    let key = job.key.as_str();
    match &mut job.op {
        Op::Create { object, bytes } => {
            if revisions.of(key).is_some() {
                return Ok(Applied::Rejected(WriteOutcome::AlreadyExists));
            }
            // A creation's create_revision is its own revision, which the log row gets only
            // as it is inserted: the row keeps 0 there, and readers take the revision.
            let rev = append(tx, key, EVENT_CREATE, 0, 0, bytes.stored())?;
            let mut obj = std::mem::take(object);
            set_resource_version(&mut obj, rev);
            let obj = Arc::new(obj);
            Ok(done(key, rev, rev, EventType::Added, obj, None))
        }
        Op::Update {
            object,
            bytes,
            expected,
            previous,
        } => {
            let Some((rev_now, create_rev)) = revisions.of(key) else {
                return Ok(Applied::Rejected(WriteOutcome::NotFound));
            };
            if rev_now != *expected {
                return Ok(Applied::Rejected(WriteOutcome::Conflict));
            }
            let rev = append(tx, key, EVENT_UPDATE, create_rev, rev_now, bytes.stored())?;
            let mut obj = std::mem::take(object);
            set_resource_version(&mut obj, rev);
            Ok(done(
                key,
                rev,
                create_rev,
                EventType::Modified,
                Arc::new(obj),
                Some(previous.clone()),
            ))
        }
        Op::Delete {
            last,
            bytes,
            expected,
        } => {
            let Some((rev_now, create_rev)) = revisions.of(key) else {
                return Ok(Applied::Rejected(WriteOutcome::NotFound));
            };
            if rev_now != *expected {
                return Ok(Applied::Rejected(WriteOutcome::Conflict));
            }
            let mut obj = (**last).clone();
            let rev = append(tx, key, EVENT_DELETE, create_rev, rev_now, bytes.stored())?;
            set_resource_version(&mut obj, rev);
            Ok(done(
                key,
                rev,
                create_rev,
                EventType::Deleted,
                Arc::new(obj),
                Some(last.clone()),
            ))
        }
    }
}

fn done(
    key: &str,
    revision: i64,
    create_revision: i64,
    event_type: EventType,
    object: Arc<Value>,
    previous: Option<Arc<Value>>,
) -> Applied {
    let event = Arc::new(WatchEvent::new(
        revision,
        key.to_string(),
        event_type,
        object.clone(),
        previous,
    ));
    Applied::Done {
        stored: Stored {
            object,
            revision,
            create_revision,
            change: None,
        },
        event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply() -> (Reply, oneshot::Receiver<Answer>) {
        oneshot::channel()
    }

    /// Applies one group as the writer does and returns what each job got.
    fn outcomes(
        db: &Database,
        current: &CurrentState,
        jobs: Vec<WriteJob>,
    ) -> Vec<Result<i64, &'static str>> {
        let mut group = jobs;
        let results = db
            .with_writer(|conn| commit_group(conn, &mut group, current))
            .expect("writer")
            .expect("committed");
        let mut seen = Vec::new();
        let changes: Vec<Change<'_>> = group
            .iter()
            .zip(&results)
            .filter_map(|(job, result)| match result {
                Applied::Done { stored, event } if event.event_type == EventType::Deleted => {
                    Some(Change::Delete(&job.key, stored.revision, None))
                }
                Applied::Done { stored, .. } => {
                    Some(Change::Put(&job.key, stored, job.op.plain(), None))
                }
                Applied::Rejected(_) => None,
            })
            .collect();
        current.apply(&changes);
        for result in &results {
            seen.push(match result {
                Applied::Done { stored, .. } => Ok(stored.revision),
                Applied::Rejected(WriteOutcome::AlreadyExists) => Err("exists"),
                Applied::Rejected(WriteOutcome::NotFound) => Err("not found"),
                Applied::Rejected(WriteOutcome::Conflict) => Err("conflict"),
                Applied::Rejected(_) => Err("other"),
            });
        }
        seen
    }

    #[test]
    fn checks_see_the_committed_state_and_the_groups_own_earlier_writes() {
        let db = Database::open_memory().expect("database");
        let current = CurrentState::new(Vec::new(), 0);
        let none = Encryption::default();
        let object = || json!({"metadata": {"name": "a"}});
        let create = |key: &str| WriteJob::create(key, object(), reply().0, &none).expect("job");
        let update = |key: &str, expected: i64| {
            WriteJob::update(
                key,
                object(),
                expected,
                Arc::new(object()),
                reply().0,
                &none,
            )
            .expect("job")
        };
        let delete = |key: &str, expected: i64| {
            WriteJob::delete(key, Arc::new(object()), expected, reply().0, &none).expect("job")
        };
        // One group: a create, a second create of the key, an update at the revision the
        // first got, an update at a stale one, a delete, then a create of the deleted key.
        let first = outcomes(
            &db,
            &current,
            vec![
                create("/a"),
                create("/a"),
                update("/a", 1),
                update("/a", 1),
                delete("/a", 2),
                create("/a"),
                update("/b", 0),
            ],
        );
        assert_eq!(
            first,
            [
                Ok(1),
                Err("exists"),
                Ok(2),
                Err("conflict"),
                Ok(3),
                Ok(4),
                Err("not found")
            ]
        );
        // The next group checks against what the first committed.
        let second = outcomes(
            &db,
            &current,
            vec![create("/a"), update("/a", 3), update("/a", 4)],
        );
        assert_eq!(second, [Err("exists"), Err("conflict"), Ok(5)]);
    }
}
