//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics, so that
//! of several replicas of an operator one handles objects and the others stand by.
//!
//! - **Acquiring:** every `retry_period` (with up to 20 % jitter) a candidate reads the Lease.
//!   It takes a Lease that does not exist, has no holder, or whose record has not changed for
//!   `lease_duration` *as observed by the candidate's own clock* (the Lease's timestamps are
//!   not compared across machines). Every write is a replace at the resourceVersion read, so
//!   of two candidates one wins and the other gets a conflict.
//! - **Holding:** the leader renews every `retry_period`; a renewal that fails is retried
//!   until `renew_deadline` has passed since the last success, after which leadership is lost.
//!   The operator then stops handling at once and [`run_until`](crate::Operator::run_until)
//!   returns [`Error::LeadershipLost`](crate::Error::LeadershipLost): the process should exit, as controller-runtime's does,
//!   and come back as a candidate.
//! - **Releasing:** on shutdown, after handlers finished (or were cancelled), the leader empties
//!   `holderIdentity`, so a standby takes over within one retry period instead of waiting for
//!   the lease to expire.
//!
//! # Guarantees
//! While the leader's clock and the standby's run at the same rate, a standby takes the Lease
//! only after `lease_duration` without a change it observed, and the leader has stopped
//! handling by `renew_deadline` after its last renewal; as `renew_deadline < lease_duration`,
//! the two never handle objects at the same time. The leader's workers check the deadline
//! themselves before every cycle and event (the start of the last successful renewal plus
//! `renew_deadline`), so a renewal task starved of CPU cannot leave them handling past it.
//!
//! A standby watches nothing and keeps no objects: it holds only the Lease it last read.
//!
//! ```no_run
//! use std::time::Duration;
//! use kopr::leader::LeaderElection;
//! # let operator = kopr::Operator::new();
//! let operator = operator.leader_election(
//!     LeaderElection::new("my-operator")
//!         .namespace("operators")
//!         .lease_duration(Duration::from_secs(15)),
//! );
//! ```

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Leader election settings (client-go's defaults: 15 s, 10 s, 2 s).
///
/// ```
/// use std::time::Duration;
/// use kopr::leader::LeaderElection;
///
/// let election = LeaderElection::new("greeting")
///     .namespace("greeting-system")
///     .identity("greeting-0")
///     .lease_duration(Duration::from_secs(30))
///     .renew_deadline(Duration::from_secs(20))
///     .retry_period(Duration::from_secs(4));
/// assert_eq!(election.lease_namespace(), "greeting-system");
/// assert_eq!(election.holder_identity(), "greeting-0");
/// let operator = kopr::Operator::new().leader_election(election);
/// ```
///
/// # Caveats
/// `renew_deadline` must be shorter than `lease_duration` (the guarantee above rests on it),
/// and longer than 1.2 times `retry_period`; otherwise
/// [`Operator::run_until`](crate::Operator::run_until) fails at start with
/// [`Error::Config`](crate::Error::Config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    name: String,
    namespace: Option<String>,
    identity: Option<String>,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
}

impl LeaderElection {
    /// Elects a leader through the Lease `name` (usually the operator's name).
    pub fn new(name: impl Into<String>) -> LeaderElection {
        LeaderElection {
            name: name.into(),
            namespace: None,
            identity: None,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// The Lease's namespace (default: the pod's namespace in a cluster, else `default`).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// This replica's identity in the Lease (default: `POD_NAME` or the host name, with a
    /// random suffix).
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// How long a Lease whose record does not change stays held (default 15 s).
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How long the leader keeps retrying a failed renewal before it gives up (default 10 s;
    /// must be less than the lease duration).
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.renew_deadline = deadline;
        self
    }

    /// How often candidates try to acquire and the leader renews (default 2 s).
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.retry_period = period;
        self
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace the Lease is in.
    pub fn lease_namespace(&self) -> String {
        self.namespace.clone().unwrap_or_else(default_namespace)
    }

    /// This replica's identity.
    pub fn holder_identity(&self) -> String {
        self.identity.clone().unwrap_or_else(default_identity)
    }

    /// How long a Lease whose record does not change stays held.
    pub(crate) fn duration(&self) -> Duration {
        self.lease_duration
    }

    /// How long a failed renewal is retried.
    pub(crate) fn deadline(&self) -> Duration {
        self.renew_deadline
    }

    /// How often candidates try and holders renew.
    pub(crate) fn period(&self) -> Duration {
        self.retry_period
    }

    /// How long a leader that lost the Lease may take to stop: half the time between its
    /// renew deadline and the lease's expiry.
    pub(crate) fn margin(&self) -> Duration {
        self.lease_duration.saturating_sub(self.renew_deadline) / 2
    }

    /// Checks the timings as client-go does.
    ///
    /// # Errors
    /// A renew deadline not below the lease duration, or a retry period not below the
    /// deadline (or zero).
    pub(crate) fn check(&self) -> Result<(), crate::Error> {
        if self.renew_deadline >= self.lease_duration {
            return Err(crate::Error::Config(
                "leader election: the lease duration must be greater than the renew deadline"
                    .into(),
            ));
        }
        if self.retry_period.is_zero() || self.retry_period.mul_f64(1.2) >= self.renew_deadline {
            return Err(crate::Error::Config(
                "leader election: the renew deadline must be greater than 1.2 times the retry period"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// The namespace of the pod the operator runs in, else `default`.
pub fn default_namespace() -> String {
    std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        .ok()
        .map(|ns| ns.trim().to_string())
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".into())
}

/// `POD_NAME` or the host name, with a random suffix (two processes on one host differ).
pub fn default_identity() -> String {
    let host = std::env::var("POD_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|n| !n.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "kopr".into());
    format!("{host}_{:08x}", rand::random::<u32>())
}

/// How one attempt went.
enum Attempt {
    /// This replica holds the Lease.
    Held,
    /// Another replica does.
    Other(String),
    /// The API server could not be asked, or the write conflicted.
    Failed(String),
}

/// A failed write: a conflict means another candidate wrote first.
fn failed(error: &kube::Error) -> Attempt {
    match error {
        kube::Error::Api(status) if status.code == 409 => Attempt::Other("another replica".into()),
        other => Attempt::Failed(crate::handling::errors::chain(other)),
    }
}

/// One replica's side of the election.
pub(crate) struct Elector {
    settings: LeaderElection,
    identity: String,
    api: Api<Lease>,
    /// Labels a Lease this replica creates carries.
    labels: std::collections::BTreeMap<String, String>,
    /// The Lease's spec as last read or written, and when (on this replica's clock).
    observed: Option<(LeaseSpec, Instant)>,
    /// When the last successful acquisition or renewal started.
    last_renewal: Option<Instant>,
    /// Told the start of every successful acquisition or renewal.
    on_renewed: Option<Box<dyn Fn(Instant) + Send + Sync>>,
}

impl Elector {
    pub fn new(client: kube::Client, settings: LeaderElection) -> Elector {
        let api = Api::namespaced(client, &settings.lease_namespace());
        Elector {
            identity: settings.holder_identity(),
            settings,
            api,
            labels: std::collections::BTreeMap::new(),
            observed: None,
            last_renewal: None,
            on_renewed: None,
        }
    }

    /// Calls `renewed` with the start of every successful acquisition or renewal: the Lease
    /// cannot have changed before then, so handling may go on until that start plus the renew
    /// deadline (the operator's fence).
    pub fn on_renewed(mut self, renewed: impl Fn(Instant) + Send + Sync + 'static) -> Elector {
        self.on_renewed = Some(Box::new(renewed));
        self
    }

    fn renewed(&mut self, started: Instant) {
        self.last_renewal = Some(started);
        if let Some(renewed) = &self.on_renewed {
            renewed(started);
        }
    }

    /// Labels the Lease when this replica creates it.
    pub fn labelled(mut self, key: &str, value: &str) -> Elector {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn now() -> MicroTime {
        MicroTime(jiff::Timestamp::now())
    }

    /// One attempt: takes or renews the Lease; `false` when another holds it or the write
    /// failed.
    pub(crate) async fn try_acquire_or_renew(&mut self) -> bool {
        matches!(self.attempt().await, Attempt::Held)
    }

    /// One attempt, and why it failed.
    async fn attempt(&mut self) -> Attempt {
        let now = Self::now();
        let seconds = i32::try_from(self.settings.lease_duration.as_secs().max(1)).unwrap_or(15);
        let mut desired = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(seconds),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        };
        let current = match self.api.get_opt(&self.settings.name).await {
            Ok(current) => current,
            Err(error) => return Attempt::Failed(crate::handling::errors::chain(&error)),
        };
        let Some(mut lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.settings.name.clone()),
                    labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(desired.clone()),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    self.observed = Some((desired, Instant::now()));
                    Attempt::Held
                }
                Err(error) => failed(&error),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if self.observed.as_ref().is_none_or(|(seen, _)| *seen != spec) {
            self.observed = Some((spec.clone(), Instant::now()));
        }
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let mine = holder == self.identity;
        let expired = self.observed.as_ref().is_some_and(|(_, at)| {
            let duration = spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.settings.lease_duration, Duration::from_secs);
            at.elapsed() >= duration
        });
        if !holder.is_empty() && !mine && !expired {
            return Attempt::Other(holder);
        }
        let transitions = spec.lease_transitions.unwrap_or(0);
        if mine {
            desired.acquire_time = spec.acquire_time.clone();
            desired.lease_transitions = Some(transitions);
        } else {
            desired.lease_transitions = Some(transitions + 1);
        }
        lease.spec = Some(desired.clone());
        match self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.observed = Some((desired, Instant::now()));
                Attempt::Held
            }
            Err(error) => failed(&error),
        }
    }

    /// Waits until this replica leads; `false` when `shutdown` came first.
    pub async fn acquire(&mut self, shutdown: &CancellationToken) -> bool {
        let mut said = String::new();
        loop {
            let started = Instant::now();
            let message = match self.attempt().await {
                Attempt::Held => {
                    self.renewed(started);
                    tracing::info!(lease = %self.settings.name, identity = %self.identity, "leading");
                    return true;
                }
                Attempt::Other(holder) => format!("standing by; {holder} leads"),
                Attempt::Failed(error) => format!(
                    "cannot ask the API server for the leader election Lease ({error}); retrying"
                ),
            };
            if message != said {
                if message.starts_with("standing by") {
                    tracing::info!(lease = %self.settings.name, "{message}");
                } else {
                    tracing::warn!(lease = %self.settings.name, "{message}");
                }
                said = message;
            }
            let pause = self
                .settings
                .retry_period
                .mul_f64(rand::random_range(1.0..1.2));
            tokio::select! {
                () = shutdown.cancelled() => return false,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Renews the Lease until `shutdown` (returns `true`) or until a renewal fails for longer
    /// than the renew deadline (returns `false`: leadership lost).
    pub async fn hold(&mut self, shutdown: &CancellationToken) -> bool {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return true,
                () = tokio::time::sleep(self.settings.retry_period) => {}
            }
            let last = *self.last_renewal.get_or_insert_with(Instant::now);
            let started = Instant::now();
            let attempt = tokio::time::timeout(
                self.settings.renew_deadline.saturating_sub(last.elapsed()),
                self.try_acquire_or_renew(),
            );
            match attempt.await {
                Ok(true) => self.renewed(started),
                _ if last.elapsed() >= self.settings.renew_deadline => {
                    tracing::error!(lease = %self.settings.name, identity = %self.identity,
                        "could not renew the lease within the renew deadline; leadership lost");
                    return false;
                }
                _ => {}
            }
        }
    }

    /// Gives the Lease up if this replica holds it, so a standby takes over at once.
    pub async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.settings.name).await else {
            return;
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        let now = Self::now();
        lease.spec = Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: spec.lease_transitions,
            ..LeaseSpec::default()
        });
        match self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!(lease = %self.settings.name, "lease released"),
            Err(error) => tracing::warn!(%error, "could not release the lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_are_checked_as_client_go_checks_them() {
        assert!(LeaderElection::new("op").check().is_ok());
        let bad = LeaderElection::new("op").renew_deadline(Duration::from_secs(20));
        assert!(bad.check().is_err());
        let bad = LeaderElection::new("op").retry_period(Duration::from_secs(9));
        assert!(bad.check().is_err());
    }

    #[test]
    fn identities_differ_between_processes_on_one_host() {
        assert_ne!(default_identity(), default_identity());
    }
}
