//! watch: initial state, replay from a resourceVersion, live events,
//! selector transitions, bookmarks and timeouts.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::{Api, ListOptions, convert};
use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::storage::{EventType, ReadAtError, Seen, WatchEvent};

/// Options of a watch.
#[derive(Debug)]
pub struct WatchOptions {
    /// Selectors (list options' filters).
    pub list: ListOptions,
    /// Start after this revision; None = send the current state first.
    pub resource_version: Option<i64>,
    /// Send a bookmark marking the end of the initial events.
    pub send_initial_events: bool,
    /// Periodic bookmarks.
    pub allow_bookmarks: bool,
    /// When the server ends the watch.
    pub timeout: Duration,
    /// Interval of periodic bookmarks.
    pub bookmark_interval: Duration,
}

/// One item of a watch stream.
#[derive(Debug, Clone)]
pub enum WatchItem {
    /// ADDED, MODIFIED or DELETED.
    Event(&'static str, Arc<Value>),
    /// A stored event in the stored representation, as the watcher sees it (as it is, or
    /// entering or leaving its selection), whose encoding can be shared.
    Stored(Arc<WatchEvent>, Seen),
    /// A BOOKMARK at a revision; `initial_end` marks the end of initial events.
    Bookmark(i64, bool),
    /// An ERROR event carrying a Status.
    Error(Value),
}

/// The receiving end of a watch.
///
/// The watch's producer (initial state or replay, then live events, bookmarks and the
/// timeout) is a future that this stream polls itself whenever it is asked for an item,
/// not a task of its own: the task that writes the response (hyper's connection task) is
/// the one the live events wake, and each item reaches it without a second task's wake-up.
/// The producer stops when the stream is dropped.
pub struct WatchStream {
    /// The producer, until it ends (its sender dropped, which ends the stream once the
    /// items it sent are taken).
    producer: Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Items in order.
    items: mpsc::Receiver<WatchItem>,
}

impl WatchStream {
    /// The next item; `None` when the watch has ended (its timeout, an error it sent, or
    /// the store closing).
    pub async fn recv(&mut self) -> Option<WatchItem> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<WatchItem>> {
        use std::task::Poll;
        if let Poll::Ready(Some(item)) = self.items.poll_recv(cx) {
            return Poll::Ready(Some(item));
        }
        if let Some(producer) = &mut self.producer
            && producer.as_mut().poll(cx).is_ready()
        {
            self.producer = None;
        }
        self.items.poll_recv(cx)
    }
}

const WATCH_BUFFER: usize = 256;

impl Api {
    /// Starts a watch; it runs until the timeout, or until the stream is dropped.
    pub fn watch(
        &self,
        rt: Arc<ResourceType>,
        namespace: Option<String>,
        opts: WatchOptions,
    ) -> WatchStream {
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let api = self.clone();
        let live = self.store.subscribe();
        let deadline = tokio::time::Instant::now() + opts.timeout;
        let producer = async move {
            let deadline = tokio::time::sleep_until(deadline);
            tokio::pin!(deadline);
            tokio::select! {
                _ = run(api, rt, namespace, opts, live, &tx) => {}
                _ = &mut deadline => {}
            }
        };
        WatchStream {
            producer: Some(Box::pin(producer)),
            items: rx,
        }
    }
}

/// Decides what a changed object means to a filtered watcher.
fn translate(rt: &ResourceType, opts: &ListOptions, ev: &WatchEvent) -> Option<Seen> {
    if !opts.filters() {
        return Some(Seen::AsIs);
    }
    let now = opts.matches(rt, &convert::to_view(rt, &ev.object));
    let before = ev
        .previous
        .as_ref()
        .is_some_and(|p| opts.matches(rt, &convert::to_view(rt, p)));
    match ev.event_type {
        EventType::Added => now.then_some(Seen::AsIs),
        EventType::Deleted => (before || now).then_some(Seen::AsIs),
        EventType::Modified => match (before, now) {
            (true, true) => Some(Seen::AsIs),
            (true, false) => Some(Seen::Left),
            (false, true) => Some(Seen::Entered),
            (false, false) => None,
        },
    }
}

async fn run(
    api: Api,
    rt: Arc<ResourceType>,
    namespace: Option<String>,
    opts: WatchOptions,
    mut live: broadcast::Receiver<Arc<WatchEvent>>,
    tx: &mpsc::Sender<WatchItem>,
) -> Option<()> {
    let prefix = rt.list_prefix(namespace.as_deref());
    let mut last = match opts.resource_version {
        None => {
            let list = ListOptions {
                labels: opts.list.labels.clone(),
                fields: opts.list.fields.clone(),
                ..ListOptions::default()
            };
            let page = match api.list(&rt, namespace.as_deref(), &list).await {
                Ok(p) => p,
                Err(e) => {
                    tx.send(WatchItem::Error(e.to_status())).await.ok()?;
                    return None;
                }
            };
            for item in page.items {
                tx.send(WatchItem::Event("ADDED", item)).await.ok()?;
            }
            if opts.send_initial_events && opts.allow_bookmarks {
                tx.send(WatchItem::Bookmark(page.resource_version, true))
                    .await
                    .ok()?;
            }
            page.resource_version
        }
        Some(rv) => replay(&api, &rt, &prefix, &opts, rv, tx).await?,
    };
    let mut seen = last;
    let mut bookmarks = tokio::time::interval(opts.bookmark_interval);
    bookmarks.reset();
    loop {
        tokio::select! {
            received = live.recv() => match received {
                Ok(ev) => {
                    seen = seen.max(ev.revision);
                    if ev.revision <= last || !ev.key.starts_with(&prefix) {
                        continue;
                    }
                    last = ev.revision;
                    if let Some(seen) = translate(&rt, &opts.list, &ev) {
                        send(&api, &rt, seen, &ev, tx).await?;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    last = replay(&api, &rt, &prefix, &opts, last, tx).await?;
                    seen = seen.max(last);
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            },
            _ = bookmarks.tick(), if opts.allow_bookmarks => {
                tx.send(WatchItem::Bookmark(seen.max(last), false)).await.ok()?;
            }
            _ = tx.closed() => return None,
        }
    }
}

/// Sends the stored changes after `after`; returns the last revision sent.
async fn replay(
    api: &Api,
    rt: &ResourceType,
    prefix: &str,
    opts: &WatchOptions,
    after: i64,
    tx: &mpsc::Sender<WatchItem>,
) -> Option<i64> {
    match api.store.history(prefix, after).await {
        Ok(events) => {
            let mut last = after;
            for ev in events {
                last = ev.revision;
                if let Some(seen) = translate(rt, &opts.list, &ev) {
                    let view = match api.view(rt, &ev.object_seen(seen)).await {
                        Ok(view) => view,
                        Err(e) => {
                            end_with(e, tx).await;
                            return None;
                        }
                    };
                    tx.send(WatchItem::Event(ev.type_seen(seen), view))
                        .await
                        .ok()?;
                }
            }
            Some(last.max(api.store.current_revision().min(last.max(after))))
        }
        Err(ReadAtError::Compacted {
            requested,
            compacted,
        }) => {
            let e = ApiError::expired(format!(
                "too old resource version: {requested} ({compacted})"
            ));
            tx.send(WatchItem::Error(e.to_status())).await.ok()?;
            None
        }
        Err(ReadAtError::Storage(e)) => {
            let e: ApiError = e.into();
            tx.send(WatchItem::Error(e.to_status())).await.ok()?;
            None
        }
    }
}

/// Sends the watch item for an event, shared when the watcher sees it unchanged.
/// An object the conversion webhook fails to convert ends the watch with an
/// ERROR event, as kube-apiserver's watch does on an object it cannot decode.
async fn send(
    api: &Api,
    rt: &ResourceType,
    seen: Seen,
    ev: &Arc<WatchEvent>,
    tx: &mpsc::Sender<WatchItem>,
) -> Option<()> {
    let object = ev.object_seen(seen);
    let view = match api.view(rt, &object).await {
        Ok(view) => view,
        Err(e) => return end_with(e, tx).await,
    };
    let item = if Arc::ptr_eq(&view, &object) {
        WatchItem::Stored(ev.clone(), seen)
    } else {
        WatchItem::Event(ev.type_seen(seen), view)
    };
    tx.send(item).await.ok()
}

/// Ends a watch with an ERROR event: an InternalError carrying the failure.
async fn end_with(e: ApiError, tx: &mpsc::Sender<WatchItem>) -> Option<()> {
    let e = ApiError::internal(&e.message);
    tx.send(WatchItem::Error(e.to_status())).await.ok()?;
    None
}

/// The object of a BOOKMARK event for a resource.
pub fn bookmark_object(rt: &ResourceType, revision: i64, initial_end: bool) -> Value {
    let mut meta = json!({"resourceVersion": revision.to_string(), "creationTimestamp": null});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta})
}
