//! What the operator remembers about one object between cycles, kept small: every object the
//! operator has seen has a slot for as long as it exists, and most of them are at rest, with no
//! timer, no retry, no outcome waiting to land. So a slot holds inline only what every object
//! needs (its newest body or, at rest, its identity, and a few flags); the rest lives in a box
//! that exists only while it holds something.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::time::Instant;

use super::background;
use super::landing::Landing;
use super::latest::Latest;

/// Everything the operator remembers about one object between cycles.
#[derive(Default)]
pub(crate) struct Slot {
    /// The newest body known (packed as text unless timers or daemons share it; only the
    /// identity at rest).
    pub(crate) latest: Option<Latest>,
    /// A cycle should run for `latest`.
    pub(crate) pending: bool,
    /// A worker owns this slot.
    pub(crate) running: bool,
    /// First seen in a listing, so resume handlers are due (until they are done).
    pub(crate) resume_due: bool,
    /// The object is gone from the server.
    pub(crate) deleted: bool,
    /// A write found the object gone before its DELETED event came: the slot stays as a
    /// tombstone, so that late events of that object (same uid) are dropped, until the DELETED
    /// event or a relist without it.
    pub(crate) gone: bool,
    /// Optional delete handlers already run for this deletion.
    pub(crate) optional_deletes_done: bool,
    /// Consecutive framework failures, for the per-object backoff.
    pub(crate) failures: u32,
    /// Consecutive failed reconciles, for their backoff.
    pub(crate) reconcile_failures: u32,
    /// What few objects need, boxed; none when it would be empty.
    extra: Option<Box<Extra>>,
}

/// The part of a slot that only some objects need at a time.
#[derive(Default)]
pub(crate) struct Extra {
    /// When the next scheduled wake-up fires.
    pub(crate) wake_at: Option<Instant>,
    /// The last parse failure reported, so it is reported once.
    pub(crate) reported_parse_error: Option<String>,
    /// The diff base kept in memory when it does not fit in an annotation.
    pub(crate) memory_diff_base: Option<Value>,
    /// A cycle's outcome that has not landed yet, sent again before the object is judged anew.
    pub(crate) landing: Option<Landing>,
    /// Running timers and daemons by id.
    pub(crate) background: HashMap<String, background::Task>,
    /// Shares the newest body and the time of the last change with timers and daemons.
    pub(crate) body_channel: Option<tokio::sync::watch::Sender<(Arc<Value>, Instant)>>,
    /// When the reconcile is due for a trigger, a requeue or a backoff (now or earlier: at
    /// the next cycle with no cause handler left).
    pub(crate) reconcile_at: Option<Instant>,
    /// The reconcile is due for a change of the object, seen up to this resourceVersion
    /// (`u64::MAX` when it is not a number).
    pub(crate) reconcile_change: Option<u64>,
}

impl Extra {
    fn is_empty(&self) -> bool {
        self.wake_at.is_none()
            && self.reported_parse_error.is_none()
            && self.memory_diff_base.is_none()
            && self.landing.is_none()
            && self.background.is_empty()
            && self.body_channel.is_none()
            && self.reconcile_at.is_none()
            && self.reconcile_change.is_none()
    }
}

impl Slot {
    /// The slot of an object first seen now (`listed`: in a listing, so resume handlers are due).
    pub(crate) fn new(listed: bool) -> Slot {
        Slot {
            resume_due: listed,
            ..Slot::default()
        }
    }

    /// The boxed part, if any.
    pub(crate) fn extra(&self) -> Option<&Extra> {
        self.extra.as_deref()
    }

    /// The boxed part for changes, if any (to clear something, there is no need for one).
    pub(crate) fn extra_if_any(&mut self) -> Option<&mut Extra> {
        self.extra.as_deref_mut()
    }

    /// The boxed part for changes, made if there is none.
    pub(crate) fn extra_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Drops the boxed part when nothing is left in it.
    pub(crate) fn tidy(&mut self) {
        if self.extra.as_deref().is_some_and(Extra::is_empty) {
            self.extra = None;
        }
    }

    /// When the next scheduled wake-up fires.
    pub(crate) fn wake_at(&self) -> Option<Instant> {
        self.extra().and_then(|extra| extra.wake_at)
    }

    /// When the reconcile is due for a trigger, a requeue or a backoff.
    pub(crate) fn reconcile_at(&self) -> Option<Instant> {
        self.extra().and_then(|extra| extra.reconcile_at)
    }

    /// The resourceVersion up to which a change made the reconcile due.
    pub(crate) fn reconcile_change(&self) -> Option<u64> {
        self.extra().and_then(|extra| extra.reconcile_change)
    }

    /// The channel sharing the body with timers and daemons, if they run.
    pub(crate) fn body_channel(
        &self,
    ) -> Option<&tokio::sync::watch::Sender<(Arc<Value>, Instant)>> {
        self.extra().and_then(|extra| extra.body_channel.as_ref())
    }

    /// Whether an outcome waits to land.
    pub(crate) fn has_landing(&self) -> bool {
        self.extra().is_some_and(|extra| extra.landing.is_some())
    }

    /// Whether timers or daemons are recorded.
    pub(crate) fn has_background(&self) -> bool {
        self.extra()
            .is_some_and(|extra| !extra.background.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_at_rest_is_small_and_has_no_box() {
        assert!(std::mem::size_of::<Slot>() <= 64);
        let mut slot = Slot::default();
        slot.extra_mut().wake_at = Some(Instant::now());
        slot.tidy();
        assert!(slot.extra().is_some());
        if let Some(extra) = slot.extra_if_any() {
            extra.wake_at = None;
        }
        slot.tidy();
        assert!(slot.extra().is_none());
    }
}
