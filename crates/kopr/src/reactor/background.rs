//! Timers and daemons: tasks that live as long as their object matches, get the newest body
//! through a watch channel, and are cancelled (and awaited) before deletion handlers run, so
//! the finalizer is never left behind by a forgotten task.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::invoke::{Call, invoke};
use super::{ObjectKey, ResourceRuntime};
use crate::handling::context::Reason;
use crate::handling::diff::Diff;
use crate::handling::errors::HandlerError;
use crate::handling::handlers::{DaemonSpec, HandlerSpec, TimerSpec};
use crate::runtime::events::EventType;

/// A running timer or daemon.
pub(crate) struct Task {
    cancel: CancellationToken,
    handle: JoinHandle<()>,
    grace: Duration,
}

type BodyReceiver = watch::Receiver<(Arc<Value>, Instant)>;

/// Starts the timers and daemons that match the object and stops those that no longer do.
pub(crate) fn reconcile(runtime: &Arc<ResourceRuntime>, key: &ObjectKey, body: &Arc<Value>) {
    let spec = &runtime.spec;
    if spec.timers.is_empty() && spec.daemons.is_empty() {
        return;
    }
    let mut slots = runtime.slots();
    let Some(slot) = slots.get_mut(key) else {
        return;
    };
    let slot = slot.extra_mut();
    let channel = slot
        .body_channel
        .get_or_insert_with(|| watch::channel((body.clone(), Instant::now())).0);
    let receiver = channel.subscribe();
    let mut wanted = Vec::new();
    for timer in &spec.timers {
        if timer.handler.filters.matches_object(body) {
            wanted.push(timer.handler.id.clone());
            if !slot.background.contains_key(&timer.handler.id) {
                let task = spawn(
                    runtime,
                    key,
                    receiver.clone(),
                    Kind::Timer(timer.clone()),
                    Duration::from_secs(5),
                );
                slot.background.insert(timer.handler.id.clone(), task);
            }
        }
    }
    for daemon in &spec.daemons {
        if daemon.handler.filters.matches_object(body) {
            wanted.push(daemon.handler.id.clone());
            if !slot.background.contains_key(&daemon.handler.id) {
                let grace = daemon.cancellation_timeout;
                let task = spawn(
                    runtime,
                    key,
                    receiver.clone(),
                    Kind::Daemon(daemon.clone()),
                    grace,
                );
                slot.background.insert(daemon.handler.id.clone(), task);
            }
        }
    }
    // Tasks that ended on their own stay recorded, so a finished daemon is not restarted.
    slot.background.retain(|id, task| {
        let keep = wanted.contains(id);
        if !keep {
            task.cancel.cancel();
        }
        keep
    });
}

/// Cancels every timer and daemon of the object and waits for them to exit (each within its
/// grace period; a task that overstays is aborted).
pub(crate) async fn stop_all(runtime: &ResourceRuntime, key: &ObjectKey) {
    let tasks: Vec<Task> = match runtime.slots().get_mut(key) {
        Some(slot) => match slot.extra_if_any() {
            Some(extra) => extra.background.drain().map(|(_, task)| task).collect(),
            None => return,
        },
        None => return,
    };
    for task in &tasks {
        task.cancel.cancel();
    }
    for task in tasks {
        let abort = task.handle.abort_handle();
        if tokio::time::timeout(task.grace, task.handle).await.is_err() {
            tracing::warn!(object = %key, "a daemon did not exit within {:?} of cancellation; abandoned", task.grace);
            abort.abort();
        }
    }
}

enum Kind {
    Timer(TimerSpec),
    Daemon(DaemonSpec),
}

fn spawn(
    runtime: &Arc<ResourceRuntime>,
    key: &ObjectKey,
    receiver: BodyReceiver,
    kind: Kind,
    grace: Duration,
) -> Task {
    let cancel = runtime.shared.shutdown.child_token();
    let runtime = runtime.clone();
    let key = key.clone();
    let token = cancel.clone();
    let handle = runtime.shared.tasks.clone().spawn(async move {
        match kind {
            Kind::Timer(timer) => timer_loop(&runtime, &key, &timer, receiver, &token).await,
            Kind::Daemon(daemon) => daemon_loop(&runtime, &key, &daemon, receiver, &token).await,
        }
    });
    Task {
        cancel,
        handle,
        grace,
    }
}

/// Sleeps unless cancelled first; `false` when cancelled.
async fn pause(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = cancel.cancelled() => false,
        () = tokio::time::sleep(delay) => true,
    }
}

async fn timer_loop(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    timer: &TimerSpec,
    mut receiver: BodyReceiver,
    cancel: &CancellationToken,
) {
    if let Some(delay) = timer.initial_delay
        && !pause(delay, cancel).await
    {
        return;
    }
    let mut failures = 0u32;
    loop {
        if let Some(idle) = timer.idle {
            loop {
                let since = receiver.borrow().1.elapsed();
                if since >= idle {
                    break;
                }
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(idle - since) => {}
                    changed = receiver.changed() => if changed.is_err() { return },
                }
            }
        }
        let began = Instant::now();
        let body = receiver.borrow().0.clone();
        let delay = match run_once(
            runtime,
            key,
            &timer.handler,
            &body,
            Reason::Timer,
            failures,
            cancel,
        )
        .await
        {
            Ok(()) => {
                failures = 0;
                if timer.sharp {
                    timer.interval.saturating_sub(began.elapsed())
                } else {
                    timer.interval
                }
            }
            Err(retry) => {
                failures = failures.saturating_add(1);
                retry.unwrap_or(timer.interval)
            }
        };
        if !pause(delay, cancel).await {
            return;
        }
    }
}

async fn daemon_loop(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    daemon: &DaemonSpec,
    receiver: BodyReceiver,
    cancel: &CancellationToken,
) {
    if let Some(delay) = daemon.initial_delay
        && !pause(delay, cancel).await
    {
        return;
    }
    let mut restarts = 0u32;
    loop {
        let body = receiver.borrow().0.clone();
        match run_once(
            runtime,
            key,
            &daemon.handler,
            &body,
            Reason::Daemon,
            restarts,
            cancel,
        )
        .await
        {
            Ok(()) | Err(None) => return,
            Err(Some(delay)) => {
                restarts = restarts.saturating_add(1);
                if cancel.is_cancelled() || !pause(delay, cancel).await {
                    return;
                }
            }
        }
    }
}

/// Runs a timer or daemon once and applies its patch (with its result under `status.<id>`).
/// `Err(Some(delay))` asks for a retry after `delay`, `Err(None)` means a permanent failure.
async fn run_once(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    handler: &HandlerSpec,
    body: &Arc<Value>,
    reason: Reason,
    retry: u32,
    cancel: &CancellationToken,
) -> Result<(), Option<Duration>> {
    let typed = (runtime.spec.parse)(body).map_err(|_| Some(handler.options.backoff))?;
    let call = Call {
        handler,
        reason,
        diff: Diff::default(),
        old: None,
        new: None,
        event_type: None,
        retry,
        started: Timestamp::now(),
        cancel: cancel.clone(),
        subhandlers: None,
    };
    let (result, mut patch) = invoke(runtime, key, body, &typed, call).await;
    let outcome = match result {
        Ok(value) => {
            if let Some(stored) = runtime.result_patch(&handler.id, value) {
                crate::handling::patch::merge_into(&mut patch, stored);
            }
            Ok(())
        }
        Err(error) => {
            let id = &handler.id;
            let message = error.to_message();
            let (retry, text) = match error {
                HandlerError::Permanent(_) => (
                    None,
                    format!("{reason} handler '{id}' failed permanently: {message}"),
                ),
                HandlerError::Temporary(_, delay) => (
                    Some(delay),
                    format!("{reason} handler '{id}' failed temporarily: {message}"),
                ),
                HandlerError::Other(_) => (
                    Some(handler.options.backoff),
                    format!("{reason} handler '{id}' failed: {message}"),
                ),
            };
            if !cancel.is_cancelled() {
                tracing::error!(object = %key, handler = %id, "{text}");
                runtime
                    .shared
                    .events
                    .post(body, EventType::Warning, "HandlerFailed", &text);
            }
            Err(retry)
        }
    };
    if patch.as_object().is_some_and(|m| !m.is_empty())
        && let Err(error) = runtime.apply_merge(key, patch).await
    {
        tracing::warn!(object = %key, handler = %handler.id, %error, "could not apply the patch of a {reason} handler");
    }
    outcome
}
