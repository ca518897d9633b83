//! Status conditions with Kubernetes' semantics, as apimachinery's
//! `meta.SetStatusCondition` keeps them: conditions are keyed by `type`, a condition's
//! `lastTransitionTime` changes only when its `status` does, and `reason`, `message` and
//! `observedGeneration` follow each update. Handlers build the list they write to
//! `status.conditions` from the one they read.
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
//! use kopr::conditions::{self, Update};
//!
//! let mut list: Vec<Condition> = Vec::new();
//! let ready = Update::new("Ready", true).reason("Catalogued").message("all good");
//! assert!(conditions::set(&mut list, ready.observed_generation(Some(1))));
//! let since = list[0].last_transition_time.clone();
//!
//! // The same status at a new generation: the transition time stays.
//! let again = Update::new("Ready", true).reason("Catalogued").message("all good");
//! assert!(conditions::set(&mut list, again.observed_generation(Some(2))));
//! assert_eq!(list[0].last_transition_time, since);
//! assert_eq!(list[0].observed_generation, Some(2));
//! assert!(conditions::is_true(&list, "Ready"));
//! ```
//!
//! # Guarantees
//! At most one condition per type; [`set`] keeps the others and their order, and appends
//! a new type at the end.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// The desired state of one condition, given to [`set`].
///
/// ```
/// let stalled = kopr::conditions::Update::unknown("Progressing")
///     .reason("Waiting")
///     .message("no pods yet");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    type_: String,
    status: &'static str,
    reason: String,
    message: String,
    observed_generation: Option<i64>,
}

impl Update {
    /// A condition of type `type_` whose status is `True` or `False`. Give it a `reason`
    /// (a CamelCase word): kube's `Condition` requires one.
    ///
    /// ```
    /// let ready = kopr::conditions::Update::new("Ready", false).reason("RollingOut");
    /// ```
    pub fn new(type_: impl Into<String>, status: bool) -> Update {
        Update {
            type_: type_.into(),
            status: if status { "True" } else { "False" },
            reason: String::new(),
            message: String::new(),
            observed_generation: None,
        }
    }

    /// A condition of type `type_` whose status is `Unknown`.
    ///
    /// ```
    /// let unsure = kopr::conditions::Update::unknown("Ready").reason("Starting");
    /// ```
    pub fn unknown(type_: impl Into<String>) -> Update {
        Update {
            status: "Unknown",
            ..Update::new(type_, false)
        }
    }

    /// The machine-readable reason (CamelCase).
    ///
    /// ```
    /// let ready = kopr::conditions::Update::new("Ready", true).reason("Catalogued");
    /// ```
    pub fn reason(mut self, reason: impl Into<String>) -> Update {
        self.reason = reason.into();
        self
    }

    /// The human-readable message.
    ///
    /// ```
    /// let ready = kopr::conditions::Update::new("Ready", true).message("3/3 ready");
    /// ```
    pub fn message(mut self, message: impl Into<String>) -> Update {
        self.message = message.into();
        self
    }

    /// The object's `metadata.generation` the condition describes.
    ///
    /// ```
    /// let ready = kopr::conditions::Update::new("Ready", true).observed_generation(Some(3));
    /// ```
    pub fn observed_generation(mut self, generation: Option<i64>) -> Update {
        self.observed_generation = generation;
        self
    }
}

/// Sets the condition of `update`'s type in `conditions`: added (its transition time now)
/// when absent, else updated, its transition time changed only when its status changes.
/// Returns whether anything changed.
///
/// ```
/// use kopr::conditions::{self, Update};
/// let mut list = Vec::new();
/// conditions::set(&mut list, Update::new("Ready", false).reason("Starting"));
/// assert!(conditions::set(&mut list, Update::new("Ready", true).reason("Started")));
/// assert!(!conditions::set(&mut list, Update::new("Ready", true).reason("Started")));
/// ```
pub fn set(conditions: &mut Vec<Condition>, update: Update) -> bool {
    set_at(
        conditions,
        update,
        Time(k8s_openapi::jiff::Timestamp::now()),
    )
}

/// [`set`], with `now` as the transition time of a new or changed status.
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
/// use kopr::conditions::{self, Update};
/// let at = Time("2026-01-01T00:00:00Z".parse().unwrap());
/// let mut list = Vec::new();
/// conditions::set_at(&mut list, Update::new("Ready", true).reason("Up"), at.clone());
/// assert_eq!(list[0].last_transition_time, at);
/// ```
pub fn set_at(conditions: &mut Vec<Condition>, update: Update, now: Time) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == update.type_) else {
        conditions.push(Condition {
            type_: update.type_,
            status: update.status.to_owned(),
            reason: update.reason,
            message: update.message,
            observed_generation: update.observed_generation,
            last_transition_time: now,
        });
        return true;
    };
    let mut changed = false;
    if existing.status != update.status {
        existing.status = update.status.to_owned();
        existing.last_transition_time = now;
        changed = true;
    }
    if existing.reason != update.reason {
        existing.reason = update.reason;
        changed = true;
    }
    if existing.message != update.message {
        existing.message = update.message;
        changed = true;
    }
    if existing.observed_generation != update.observed_generation {
        existing.observed_generation = update.observed_generation;
        changed = true;
    }
    changed
}

/// The condition of type `type_`.
///
/// ```
/// use kopr::conditions::{self, Update};
/// let mut list = Vec::new();
/// conditions::set(&mut list, Update::new("Ready", true).reason("Up"));
/// assert_eq!(conditions::find(&list, "Ready").map(|c| c.reason.as_str()), Some("Up"));
/// assert!(conditions::find(&list, "Degraded").is_none());
/// ```
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is there with status `True`.
///
/// ```
/// use kopr::conditions::{self, Update};
/// let mut list = Vec::new();
/// conditions::set(&mut list, Update::new("Ready", false).reason("Down"));
/// assert!(!conditions::is_true(&list, "Ready"));
/// ```
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

/// Removes the condition of type `type_`; returns whether there was one.
///
/// ```
/// use kopr::conditions::{self, Update};
/// let mut list = Vec::new();
/// conditions::set(&mut list, Update::new("Ready", true).reason("Up"));
/// assert!(conditions::remove(&mut list, "Ready"));
/// assert!(list.is_empty());
/// ```
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Time {
        Time(
            text.parse()
                .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        )
    }

    #[test]
    fn the_transition_time_moves_only_with_the_status() {
        let mut list = Vec::new();
        let t0 = at("2026-01-01T00:00:00Z");
        let t1 = at("2026-01-02T00:00:00Z");
        let t2 = at("2026-01-03T00:00:00Z");
        assert!(set_at(
            &mut list,
            Update::new("Ready", false).reason("Starting"),
            t0.clone()
        ));
        // Reason and generation change, status stays: the time stays.
        let update = Update::new("Ready", false)
            .reason("Waiting")
            .observed_generation(Some(2));
        assert!(set_at(&mut list, update, t1.clone()));
        assert_eq!(list[0].last_transition_time, t0);
        assert_eq!(list[0].reason, "Waiting");
        assert_eq!(list[0].observed_generation, Some(2));
        // The status changes: the time moves.
        let update = Update::new("Ready", true)
            .reason("Up")
            .observed_generation(Some(2));
        assert!(set_at(&mut list, update.clone(), t2.clone()));
        assert_eq!(list[0].last_transition_time, t2);
        // Nothing changes: nothing is reported.
        assert!(!set_at(&mut list, update, t1));
        assert_eq!(list[0].last_transition_time, t2);
    }

    #[test]
    fn conditions_are_keyed_by_type_and_keep_their_order() {
        let mut list = Vec::new();
        set(&mut list, Update::new("Ready", true).reason("Up"));
        set(&mut list, Update::unknown("Degraded").reason("Checking"));
        set(&mut list, Update::new("Ready", false).reason("Down"));
        let types: Vec<&str> = list.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Degraded"]);
        assert_eq!(list[1].status, "Unknown");
        assert!(!is_true(&list, "Ready"));
        assert!(!remove(&mut list, "Missing"));
    }
}
