//! Filters: which objects a handler, timer or daemon applies to.
//!
//! Filters are evaluated on the raw object before anything else happens, so an object that no
//! handler matches costs no patches and no log lines.
//!
//! Every [`Handler`](crate::Handler), [`Timer`](crate::Timer), [`Daemon`](crate::Daemon),
//! [`Reconcile`](crate::reconcile::Reconcile) and [`Admission`](crate::admission::Admission)
//! takes filters through the [`Filtered`] trait (import it to call its methods); all filters
//! given must hold.
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kopr::{Context, Filtered, Handler, HandlerResult, Matcher, Resource};
//!
//! async fn scaled_down(ctx: Context<Deployment>) -> HandlerResult {
//!     ctx.warn("ScaledDown", "replicas went down");
//!     Ok(())
//! }
//!
//! let deployments = Resource::<Deployment>::new().on_field(
//!     "spec.replicas",
//!     Handler::new(scaled_down)
//!         .label_matches("app.kubernetes.io/managed-by", "my-operator")
//!         .annotation_matches("example.com/paused", Matcher::Absent)
//!         .when(|input| {
//!             let (old, new) = (input.old.and_then(|v| v.as_i64()), input.new.and_then(|v| v.as_i64()));
//!             matches!((old, new), (Some(old), Some(new)) if new < old)
//!         }),
//! );
//! ```
//!
//! # Caveats
//! Label and annotation values compare as strings (`Matcher::is(3)` never matches a label);
//! a `null` value counts as absent. For timers and daemons only the object's own filters
//! (labels, annotations, fields) decide whether they run; `when`, `old_value` and
//! `new_value` are for change handlers.

use std::sync::Arc;

use serde_json::Value;

use crate::handling::diff::{Diff, resolve};

/// A predicate on a possibly absent value.
pub type ValuePredicate = Arc<dyn Fn(Option<&Value>) -> bool + Send + Sync>;

/// A test on one value: a label, an annotation, a field, or the old/new value of a changed field.
///
/// A `&str` or `String` converts into [`Matcher::Is`], so `.label_matches("app", "web")` means
/// "equals".
///
/// ```
/// use kopr::Matcher;
/// use serde_json::json;
///
/// assert!(Matcher::is(3).matches(Some(&json!(3))));
/// assert!(Matcher::Present.matches(Some(&json!("anything"))));
/// assert!(Matcher::Absent.matches(Some(&json!(null))));
/// let big = Matcher::check(|v| v.and_then(|v| v.as_i64()).is_some_and(|n| n > 10));
/// assert!(big.matches(Some(&json!(11))) && !big.matches(None));
/// ```
#[derive(Clone)]
pub enum Matcher {
    /// The value is present and equal to this one (labels and annotations compare as strings).
    Is(Value),
    /// The value is present, whatever it is.
    Present,
    /// The value is absent (or `null`).
    Absent,
    /// A predicate on the value, `None` when absent.
    Predicate(ValuePredicate),
}

impl Matcher {
    /// The value equals `value`.
    pub fn is(value: impl Into<Value>) -> Matcher {
        Matcher::Is(value.into())
    }

    /// A predicate on the (possibly absent) value.
    pub fn check(predicate: impl Fn(Option<&Value>) -> bool + Send + Sync + 'static) -> Matcher {
        Matcher::Predicate(Arc::new(predicate))
    }

    /// Whether the (possibly absent) value passes.
    pub fn matches(&self, value: Option<&Value>) -> bool {
        let value = value.filter(|v| !v.is_null());
        match self {
            Matcher::Is(expected) => value == Some(expected),
            Matcher::Present => value.is_some(),
            Matcher::Absent => value.is_none(),
            Matcher::Predicate(predicate) => predicate(value),
        }
    }
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Matcher::Is(v) => write!(f, "Is({v})"),
            Matcher::Present => f.write_str("Present"),
            Matcher::Absent => f.write_str("Absent"),
            Matcher::Predicate(_) => f.write_str("Predicate(..)"),
        }
    }
}

impl From<&str> for Matcher {
    fn from(value: &str) -> Self {
        Matcher::Is(Value::String(value.to_owned()))
    }
}

impl From<String> for Matcher {
    fn from(value: String) -> Self {
        Matcher::Is(Value::String(value))
    }
}

/// What a `when` predicate sees.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, FilterInput, Filtered, Handler, HandlerResult};
///
/// fn debug_enabled(input: &FilterInput<'_>) -> bool {
///     input.body["data"]["level"] == "debug" && !input.diff.is_empty()
/// }
///
/// async fn updated(_: Context<ConfigMap>) -> HandlerResult { Ok(()) }
/// let handler = Handler::new(updated).when(debug_enabled);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FilterInput<'a> {
    /// The whole object as JSON.
    pub body: &'a Value,
    /// The old value (of the handler's field, or of the object's essence), on updates.
    pub old: Option<&'a Value>,
    /// The new value.
    pub new: Option<&'a Value>,
    /// The diff between them.
    pub diff: &'a Diff,
}

type WhenFn = Arc<dyn Fn(&FilterInput<'_>) -> bool + Send + Sync>;

/// A set of conditions, all of which must hold. Built through [`Filtered`]; the builders of
/// handlers, timers and daemons keep one each.
///
/// ```
/// use kopr::filters::Filters;
/// use kopr::Filtered;
/// use serde_json::json;
///
/// let filters = Filters::default().label_matches("app", "web").field_matches("spec.replicas", kopr::Matcher::Present);
/// assert!(filters.matches_object(&json!({
///     "metadata": {"labels": {"app": "web"}},
///     "spec": {"replicas": 2},
/// })));
/// assert!(!filters.matches_object(&json!({"metadata": {"labels": {"app": "db"}}})));
/// ```
#[derive(Clone, Default)]
pub struct Filters {
    labels: Vec<(String, Matcher)>,
    annotations: Vec<(String, Matcher)>,
    fields: Vec<(Vec<String>, Matcher)>,
    when: Vec<WhenFn>,
    old: Option<Matcher>,
    new: Option<Matcher>,
}

impl Filters {
    /// Whether nothing is filtered.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
            && self.annotations.is_empty()
            && self.fields.is_empty()
            && self.when.is_empty()
            && self.old.is_none()
            && self.new.is_none()
    }

    /// Checks the conditions that depend on the object alone (labels, annotations, fields).
    pub fn matches_object(&self, body: &Value) -> bool {
        let meta = |section: &str, key: &str| body.get("metadata")?.get(section)?.get(key);
        self.labels
            .iter()
            .all(|(k, m)| m.matches(meta("labels", k)))
            && self
                .annotations
                .iter()
                .all(|(k, m)| m.matches(meta("annotations", k)))
            && self
                .fields
                .iter()
                .all(|(path, m)| m.matches(resolve(body, path)))
    }

    /// Checks every condition, including `when` and the old/new value tests.
    pub fn matches(&self, input: &FilterInput<'_>) -> bool {
        self.matches_object(input.body)
            && self.old.as_ref().is_none_or(|m| m.matches(input.old))
            && self.new.as_ref().is_none_or(|m| m.matches(input.new))
            && self.when.iter().all(|when| when(input))
    }
}

impl std::fmt::Debug for Filters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filters")
            .field("labels", &self.labels)
            .field("annotations", &self.annotations)
            .field("fields", &self.fields)
            .field("when", &self.when.len())
            .field("old", &self.old)
            .field("new", &self.new)
            .finish()
    }
}

/// Builder methods shared by handlers, timers, daemons, reconciles and admission handlers.
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, Daemon, Filtered, Handler, HandlerResult, Matcher, Resource, Timer};
///
/// async fn handler(_: Context<ConfigMap>) -> HandlerResult { Ok(()) }
///
/// let config_maps = Resource::<ConfigMap>::new()
///     .on_create(Handler::new(handler).label_matches("tier", Matcher::Present))
///     // Field handlers: old and new are the field's values.
///     .on_field(
///         "data.mode",
///         Handler::new(handler).id("mode").old_matches("safe").new_matches(Matcher::Present),
///     )
///     .timer(Timer::every(Duration::from_secs(60), handler).field_matches("data.poll", "true"))
///     .daemon(Daemon::new(handler).annotation_matches("example.com/follow", "yes"));
/// ```
pub trait Filtered: Sized {
    /// The filters being built.
    fn filters_mut(&mut self) -> &mut Filters;

    /// Only objects whose label `key` passes `matcher` (a `&str` means "equals").
    fn label_matches(mut self, key: impl Into<String>, matcher: impl Into<Matcher>) -> Self {
        self.filters_mut().labels.push((key.into(), matcher.into()));
        self
    }

    /// Only objects whose annotation `key` passes `matcher`.
    fn annotation_matches(mut self, key: impl Into<String>, matcher: impl Into<Matcher>) -> Self {
        self.filters_mut()
            .annotations
            .push((key.into(), matcher.into()));
        self
    }

    /// Only objects whose field at the dotted `path` passes `matcher`.
    fn field_matches(mut self, path: &str, matcher: impl Into<Matcher>) -> Self {
        self.filters_mut()
            .fields
            .push((crate::handling::diff::parse_path(path), matcher.into()));
        self
    }

    /// Only when `predicate` holds.
    fn when(
        mut self,
        predicate: impl Fn(&FilterInput<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filters_mut().when.push(Arc::new(predicate));
        self
    }

    /// On updates: only when the old value passes `matcher`.
    fn old_matches(mut self, matcher: impl Into<Matcher>) -> Self {
        self.filters_mut().old = Some(matcher.into());
        self
    }

    /// On updates: only when the new value passes `matcher`.
    fn new_matches(mut self, matcher: impl Into<Matcher>) -> Self {
        self.filters_mut().new = Some(matcher.into());
        self
    }
}

impl Filtered for Filters {
    fn filters_mut(&mut self) -> &mut Filters {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input<'a>(body: &'a Value, diff: &'a Diff) -> FilterInput<'a> {
        FilterInput {
            body,
            old: None,
            new: None,
            diff,
        }
    }

    #[test]
    fn labels_annotations_and_fields() {
        let body = json!({"metadata": {"labels": {"app": "web"}, "annotations": {"note": "x"}},
                          "spec": {"replicas": 3}});
        let diff = Diff::default();
        let f = |filters: Filters| filters.matches(&input(&body, &diff));
        assert!(f(Filters::default().label_matches("app", "web")));
        assert!(!f(Filters::default().label_matches("app", "db")));
        assert!(f(Filters::default().label_matches("app", Matcher::Present)));
        assert!(f(Filters::default().label_matches("tier", Matcher::Absent)));
        assert!(!f(
            Filters::default().annotation_matches("note", Matcher::Absent)
        ));
        assert!(f(
            Filters::default().field_matches("spec.replicas", Matcher::is(3))
        ));
        assert!(f(Filters::default().field_matches(
            "spec.replicas",
            Matcher::check(|v| v.and_then(Value::as_i64).is_some_and(|n| n > 2))
        )));
        assert!(!f(
            Filters::default().when(|i| i.body["spec"]["replicas"] == 4)
        ));
    }

    #[test]
    fn old_and_new() {
        let body = json!({});
        let diff = Diff::default();
        let (old, new) = (json!("a"), json!("b"));
        let i = FilterInput {
            body: &body,
            old: Some(&old),
            new: Some(&new),
            diff: &diff,
        };
        assert!(
            Filters::default()
                .old_matches("a")
                .new_matches("b")
                .matches(&i)
        );
        assert!(!Filters::default().old_matches("b").matches(&i));
    }
}
