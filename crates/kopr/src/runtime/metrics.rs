//! The operator's metrics, in one process-wide registry (as controller-runtime's), served in
//! the OpenMetrics text format by [`crate::runtime::endpoints`]. Names start with `kopr_` and
//! follow Prometheus' conventions (`_total` counters, `_seconds` durations); labels name the
//! resource (`group/version/plural`) and the handler id.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `kopr_handler_runs_total` | resource, handler, outcome | handler runs by outcome: `success`, `temporary`, `permanent`, `error` (retried), `timeout`, `panic` |
//! | `kopr_handler_duration_seconds` | resource, handler | how long handler runs took |
//! | `kopr_handler_retries_total` | resource, handler | runs that were retries |
//! | `kopr_objects_waiting` | resource | objects with work, waiting for a worker |
//! | `kopr_objects_in_flight` | resource | objects being handled |
//! | `kopr_slots` | resource | objects the operator keeps state for |
//! | `kopr_watch_starts_total` | resource | watches (re)started |
//! | `kopr_watch_errors_total` | resource | watch errors |
//! | `kopr_api_requests_total` | verb, code | API requests by HTTP method and status (`error` without one) |
//! | `kopr_events_posted_total` | | Kubernetes Events posted |
//! | `kopr_admission_failures_total` | | admission handlers that panicked or overran |
//! | `kopr_conversions_total` | | objects converted between CRD versions |
//! | `kopr_conversion_failures_total` | | conversion reviews answered with a failure |
//! | `kopr_leader` | | 1 while this replica handles objects: it leads, runs without election, or is a shard member (the number of such operators, in a process that runs several), else 0 |
//! | `kopr_shards_owned` | | virtual shards this replica owns (with sharding) |
//! | `kopr_index_objects` | index | objects that gave pairs to the index |
//! | `kopr_shard_members` | | live shard members this replica sees, itself included |
//!
//! The author adds metrics of their own to the same registry with [`register`]; they are
//! served beside kopr's on the same `/metrics`.
//!
//! ```
//! use kopr::metrics::prometheus_client::metrics::counter::Counter;
//!
//! let greetings: Counter = kopr::metrics::register("doc_greetings", "Greetings said", Counter::default())
//!     .expect("a new name");
//! greetings.inc();
//! assert!(kopr::metrics::global().encode().contains("doc_greetings_total 1"));
//! ```

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};

pub use prometheus_client;

/// A resource's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabels {
    /// `group/version/plural` (`version/plural` for the core group).
    pub resource: String,
}

/// A handler's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HandlerLabels {
    /// The resource.
    pub resource: String,
    /// The handler's id.
    pub handler: String,
}

/// A handler run's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// The resource.
    pub resource: String,
    /// The handler's id.
    pub handler: String,
    /// `success`, `temporary`, `permanent`, `error`, `timeout` or `panic`.
    pub outcome: String,
}

/// An index's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IndexLabels {
    /// The index's name.
    pub index: String,
}

/// An API request's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The HTTP method.
    pub verb: String,
    /// The HTTP status, or `error` when none came back.
    pub code: String,
}

fn duration_histogram() -> Histogram {
    // 1 ms to about 65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// Counts the objects a resource keeps state for, at scrape time.
type SlotCount = Box<dyn Fn() -> Option<(String, i64)> + Send + Sync>;

/// Every metric kopr records.
pub struct Metrics {
    /// Handler runs by outcome.
    pub handler_runs: Family<OutcomeLabels, Counter>,
    /// Handler durations.
    pub handler_duration: Family<HandlerLabels, Histogram, fn() -> Histogram>,
    /// Retried runs.
    pub handler_retries: Family<HandlerLabels, Counter>,
    /// Objects waiting for a worker.
    pub objects_waiting: Family<ResourceLabels, Gauge>,
    /// Objects being handled.
    pub objects_in_flight: Family<ResourceLabels, Gauge>,
    /// Objects kept in memory.
    pub slots: Family<ResourceLabels, Gauge>,
    /// Watch starts.
    pub watch_starts: Family<ResourceLabels, Counter>,
    /// Watch errors.
    pub watch_errors: Family<ResourceLabels, Counter>,
    /// API requests.
    pub api_requests: Family<RequestLabels, Counter>,
    /// Events posted.
    pub events_posted: Counter,
    /// Admission handlers that panicked or overran.
    pub admission_failures: Counter,
    /// Objects converted between CRD versions.
    pub conversions: Counter,
    /// Conversion reviews answered with a failure.
    pub conversion_failures: Counter,
    /// Whether this replica leads.
    pub leader: Gauge,
    /// Virtual shards owned.
    pub shards_owned: Gauge,
    /// Live shard members seen.
    pub shard_members: Gauge,
    /// Objects in each index.
    pub index_objects: Family<IndexLabels, Gauge>,
    /// Children in each owned kind's cache.
    pub children_cached: Family<ResourceLabels, Gauge>,
    /// kopr's metrics (in a `kopr_` sub-registry) and the author's.
    registry: Mutex<Registry>,
    /// The author's metrics by name, so that registering a name again gives the same metric.
    custom: Mutex<HashMap<String, Box<dyn Any + Send + Sync>>>,
    slot_counts: Mutex<Vec<SlotCount>>,
}

/// Why [`register`] refused a metric.
///
/// ```
/// use kopr::metrics::{MetricsError, prometheus_client::metrics::counter::Counter};
/// let refused = kopr::metrics::register("kopr_mine", "mine", Counter::<u64>::default());
/// assert!(matches!(refused, Err(MetricsError::Reserved(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    /// The name is not a Prometheus metric name.
    #[error("metric name {0:?}: must match [a-zA-Z_][a-zA-Z0-9_]*")]
    Name(String),
    /// The name starts with `kopr_`, which kopr's own metrics use.
    #[error("metric name {0:?}: the kopr_ prefix is kopr's own")]
    Reserved(String),
    /// The name is registered already with another type of metric.
    #[error("metric {0:?} is registered already with another type")]
    Conflict(String),
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics(..)")
    }
}

impl Metrics {
    fn new() -> Metrics {
        let mut metrics = Metrics {
            handler_runs: Family::default(),
            handler_duration: Family::new_with_constructor(duration_histogram),
            handler_retries: Family::default(),
            objects_waiting: Family::default(),
            objects_in_flight: Family::default(),
            slots: Family::default(),
            watch_starts: Family::default(),
            watch_errors: Family::default(),
            api_requests: Family::default(),
            events_posted: Counter::default(),
            admission_failures: Counter::default(),
            conversions: Counter::default(),
            conversion_failures: Counter::default(),
            leader: Gauge::default(),
            shards_owned: Gauge::default(),
            shard_members: Gauge::default(),
            index_objects: Family::default(),
            children_cached: Family::default(),
            registry: Mutex::new(Registry::default()),
            custom: Mutex::new(HashMap::new()),
            slot_counts: Mutex::new(Vec::new()),
        };
        let mut root = Registry::default();
        let r = root.sub_registry_with_prefix("kopr");
        r.register(
            "handler_runs",
            "Handler runs by outcome",
            metrics.handler_runs.clone(),
        );
        r.register(
            "handler_duration_seconds",
            "How long handler runs took",
            metrics.handler_duration.clone(),
        );
        r.register(
            "handler_retries",
            "Handler runs that were retries",
            metrics.handler_retries.clone(),
        );
        r.register(
            "objects_waiting",
            "Objects with work waiting for a worker",
            metrics.objects_waiting.clone(),
        );
        r.register(
            "objects_in_flight",
            "Objects being handled",
            metrics.objects_in_flight.clone(),
        );
        r.register(
            "slots",
            "Objects the operator keeps state for",
            metrics.slots.clone(),
        );
        r.register(
            "watch_starts",
            "Watches started or restarted",
            metrics.watch_starts.clone(),
        );
        r.register("watch_errors", "Watch errors", metrics.watch_errors.clone());
        r.register(
            "api_requests",
            "API requests by method and status",
            metrics.api_requests.clone(),
        );
        r.register(
            "events_posted",
            "Kubernetes Events posted",
            metrics.events_posted.clone(),
        );
        r.register(
            "admission_failures",
            "Admission handlers that panicked or overran",
            metrics.admission_failures.clone(),
        );
        r.register(
            "conversions",
            "Objects converted between CRD versions",
            metrics.conversions.clone(),
        );
        r.register(
            "conversion_failures",
            "Conversion reviews answered with a failure",
            metrics.conversion_failures.clone(),
        );
        r.register(
            "leader",
            "1 while this replica leads, else 0",
            metrics.leader.clone(),
        );
        r.register(
            "shards_owned",
            "Virtual shards this replica owns",
            metrics.shards_owned.clone(),
        );
        r.register(
            "index_objects",
            "Objects that gave pairs to each index",
            metrics.index_objects.clone(),
        );
        r.register(
            "children_cached",
            "Owned children kept in the cache of each child kind (group/version/plural)",
            metrics.children_cached.clone(),
        );
        r.register(
            "shard_members",
            "Live shard members this replica sees, itself included",
            metrics.shard_members.clone(),
        );
        metrics.registry = Mutex::new(root);
        metrics
    }

    /// Counts a resource's slots at each scrape (`None` once the resource is gone).
    pub(crate) fn count_slots(&self, count: SlotCount) {
        if let Ok(mut counts) = self.slot_counts.lock() {
            counts.push(count);
        }
    }

    /// Records one handler run.
    pub(crate) fn handler_run(
        &self,
        resource: &str,
        handler: &str,
        outcome: &str,
        took: Duration,
        retry: bool,
    ) {
        let labels = HandlerLabels {
            resource: resource.to_string(),
            handler: handler.to_string(),
        };
        self.handler_runs
            .get_or_create(&OutcomeLabels {
                resource: labels.resource.clone(),
                handler: labels.handler.clone(),
                outcome: outcome.to_string(),
            })
            .inc();
        self.handler_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if retry {
            self.handler_retries.get_or_create(&labels).inc();
        }
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        if let Ok(mut counts) = self.slot_counts.lock() {
            counts.retain(|count| match count() {
                Some((resource, n)) => {
                    self.slots
                        .get_or_create(&ResourceLabels { resource })
                        .set(n);
                    true
                }
                None => false,
            });
        }
        let mut text = String::new();
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if prometheus_client::encoding::text::encode(&mut text, &registry).is_err() {
            text.clear();
        }
        text
    }
}

/// Registers one of the author's metrics (any [`prometheus_client`] metric: a counter, gauge,
/// histogram or a family of them) into the process's registry, served on `/metrics` beside
/// kopr's own. Registering a name again gives back the metric registered first, so an
/// operator built twice in one process (as in tests) counts into one metric.
///
/// ```
/// use kopr::metrics::prometheus_client::metrics::gauge::Gauge;
/// let queued: Gauge = kopr::metrics::register("doc_queued", "Jobs queued", Gauge::default()).unwrap();
/// let again: Gauge = kopr::metrics::register("doc_queued", "Jobs queued", Gauge::default()).unwrap();
/// queued.set(3);
/// assert_eq!(again.get(), 3);
/// ```
///
/// # Errors
/// [`MetricsError`] for a name Prometheus refuses, a `kopr_` name, or a name registered with
/// another type of metric.
pub fn register<M>(name: &str, help: &str, metric: M) -> Result<M, MetricsError>
where
    M: Metric + Clone + Any + Send + Sync,
{
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(MetricsError::Name(name.to_owned()));
    }
    if name.starts_with("kopr_") {
        return Err(MetricsError::Reserved(name.to_owned()));
    }
    let metrics = global();
    let mut custom = metrics.custom.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = custom.get(name) {
        return known
            .downcast_ref::<M>()
            .cloned()
            .ok_or_else(|| MetricsError::Conflict(name.to_owned()));
    }
    custom.insert(name.to_owned(), Box::new(metric.clone()));
    metrics
        .registry
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .register(name, help, metric.clone());
    Ok(metric)
}

/// The process's metrics: every operator in the process records into this registry.
///
/// ```
/// let text = kopr::metrics::global().encode();
/// assert!(text.contains("# TYPE kopr_leader gauge"));
/// assert!(text.ends_with("# EOF\n"));
/// ```
pub fn global() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

/// Keeps a gauge raised while alive.
pub(crate) struct Raised(Gauge);

impl Raised {
    pub fn new(gauge: Gauge) -> Raised {
        gauge.inc();
        Raised(gauge)
    }
}

impl Drop for Raised {
    fn drop(&mut self) {
        self.0.dec();
    }
}
