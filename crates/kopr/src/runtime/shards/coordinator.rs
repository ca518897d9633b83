//! One replica's side of sharding: its member Lease, the members it sees alive, and the shard
//! map it reads and writes (see the [module](super) for the protocol and its proof sketch).

use std::collections::{BTreeSet, HashMap};
use std::hash::Hasher;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::filter::ShardFilter;
use super::ring::assign;
use super::{MEMBER_LABEL, OWNERS_ANNOTATION, Sharding};
use crate::handling::errors::chain;
use crate::runtime::leader::{Elector, LeaderElection};

/// The shard map as stored in its annotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ShardMap {
    count: u32,
    owners: Vec<String>,
}

/// The map as read: its Lease (for the conditional write) and owners, or why it is unusable.
enum Read {
    Map(Box<Lease>, ShardMap),
    Missing,
    Broken(Box<Lease>, String),
}

/// One replica's membership and view of the shard map.
pub(crate) struct Coordinator {
    settings: Sharding,
    identity: String,
    member: Elector,
    member_name: String,
    leases: Api<Lease>,
    filter: Arc<ShardFilter>,
    /// Other members' Lease specs as last seen, and when they last changed (this clock).
    observed: HashMap<String, (LeaseSpec, Instant)>,
    /// When the member Lease was last renewed.
    last_renewal: Option<Instant>,
    /// The uid of the map this replica took shards from.
    map_uid: Option<String>,
    /// Stop taking part in rebalancing (the replica is leaving): renew only.
    leaving: bool,
    /// The shard map's resourceVersion as this replica last read or wrote it.
    map_version: Option<String>,
    /// Shards being handed over whose objects were still held at the last round.
    draining: Option<Vec<bool>>,
    /// The last state logged, so that a steady state is logged once.
    said: String,
}

/// `<name>-member-<16 hex digits of a hash of the identity>`: a valid name for any identity.
fn member_name(name: &str, identity: &str) -> String {
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(identity.as_bytes());
    format!("{name}-member-{:016x}", hasher.finish())
}

/// How often a replica handing shards over looks whether their objects were let go.
const DRAIN_CHECK: Duration = Duration::from_millis(50);

fn conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 409)
}

impl Coordinator {
    pub(crate) fn new(
        client: kube::Client,
        settings: Sharding,
        filter: Arc<ShardFilter>,
    ) -> Coordinator {
        let election = settings.election();
        let identity = election.holder_identity();
        let name = election.name().to_string();
        let member_name = member_name(&name, &identity);
        let namespace = election.lease_namespace();
        let member_settings = LeaderElection::new(member_name.clone())
            .namespace(namespace.clone())
            .identity(identity.clone())
            .lease_duration(election.duration())
            .renew_deadline(election.deadline())
            .retry_period(election.period());
        let member = Elector::new(client.clone(), member_settings).labelled(MEMBER_LABEL, &name);
        Coordinator {
            leases: Api::namespaced(client, &namespace),
            settings,
            identity,
            member,
            member_name,
            filter,
            observed: HashMap::new(),
            last_renewal: None,
            map_uid: None,
            leaving: false,
            map_version: None,
            draining: None,
            said: String::new(),
        }
    }

    /// This replica's identity.
    pub(crate) fn identity(&self) -> &str {
        &self.identity
    }

    fn election(&self) -> &LeaderElection {
        self.settings.election()
    }

    /// Joins: writes the member Lease (retrying every retry period) and takes part once; `false`
    /// when `stop` came first.
    pub(crate) async fn join(&mut self, stop: &CancellationToken) -> bool {
        let mut said = false;
        loop {
            let started = Instant::now();
            if self.member.try_acquire_or_renew().await {
                self.renewed(started);
                tracing::info!(identity = %self.identity, lease = %self.member_name, "joined the shard members");
                // Right away, so that a first replica takes its shards without waiting a period;
                // a loss shows again at the next round.
                let _ = self.tick().await;
                return true;
            }
            if !said {
                tracing::warn!(lease = %self.member_name, "cannot write the shard member Lease; retrying");
                said = true;
            }
            tokio::select! {
                () = stop.cancelled() => return false,
                () = tokio::time::sleep(self.pause()) => {}
            }
        }
    }

    fn pause(&self) -> Duration {
        self.election()
            .period()
            .mul_f64(rand::random_range(1.0..1.2))
    }

    /// Takes part every retry period until `stop` (returns `true`) or until the member Lease
    /// could not be renewed within the renew deadline or the map vanished under this
    /// replica's shards (returns `false`: membership lost).
    ///
    /// A round comes every retry period, and sooner when another replica changed the shard
    /// map (watched), or when every object of the shards being handed over was let go: so a
    /// handover leaves its shards unhandled for milliseconds, not for two retry periods.
    pub(crate) async fn hold(&mut self, stop: &CancellationToken) -> bool {
        let config = watcher::Config::default()
            .fields(&format!("metadata.name={}", self.settings.map_name()));
        let changes = watcher::watcher(self.leases.clone(), config).default_backoff();
        futures::pin_mut!(changes);
        loop {
            let due = tokio::time::sleep(self.pause());
            tokio::pin!(due);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return true,
                    () = &mut due => break,
                    event = changes.next() => {
                        if let Some(Ok(Event::Apply(lease) | Event::InitApply(lease))) = event
                            && lease.metadata.resource_version != self.map_version
                        {
                            break;
                        }
                    }
                    () = tokio::time::sleep(DRAIN_CHECK), if self.draining.is_some() => {
                        if self.drained() {
                            break;
                        }
                    }
                }
            }
            if !self.tick().await {
                crate::runtime::metrics::global().shards_owned.set(0);
                return false;
            }
        }
    }

    /// Whether the shards being handed over hold no object any more.
    fn drained(&self) -> bool {
        let Some(draining) = &self.draining else {
            return false;
        };
        let held = self.filter.held(self.filter.count());
        !draining.iter().zip(&held).any(|(d, h)| *d && *h)
    }

    /// From now on, only renews the member Lease: the replica is stopping.
    pub(crate) fn leave(&mut self) {
        self.leaving = true;
        self.draining = None;
        self.filter.set(vec![false; self.filter.count() as usize]);
        crate::runtime::metrics::global().shards_owned.set(0);
    }

    /// A renewal that started at `started` succeeded. Others see the Lease change no earlier
    /// than that, so ownership holds until `started` plus the renew deadline.
    fn renewed(&mut self, started: Instant) {
        self.last_renewal = Some(started);
        self.filter
            .valid_until(started + self.election().deadline());
    }

    /// Renews the member Lease; `false` once the renew deadline passed without a renewal.
    async fn renew(&mut self) -> bool {
        let deadline = self.election().deadline();
        let last = self.last_renewal.unwrap_or_else(Instant::now);
        let left = deadline.saturating_sub(last.elapsed());
        let started = Instant::now();
        match tokio::time::timeout(left, self.member.try_acquire_or_renew()).await {
            Ok(true) => {
                self.renewed(started);
                true
            }
            _ if last.elapsed() >= deadline => {
                tracing::error!(identity = %self.identity, lease = %self.member_name,
                    "could not renew the shard member Lease within the renew deadline; membership lost");
                false
            }
            _ => true,
        }
    }

    /// The live members' identities (this replica always among them), and the Leases of dead
    /// members (name, resourceVersion, holder).
    fn observe(&mut self, leases: Vec<Lease>) -> (Vec<String>, Vec<(String, String, String)>) {
        let mut live = BTreeSet::from([self.identity.clone()]);
        let mut dead = Vec::new();
        let mut seen = HashMap::new();
        for lease in leases {
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            let spec = lease.spec.clone().unwrap_or_default();
            let at = match self.observed.remove(&name) {
                Some((old, at)) if old == spec => at,
                _ => Instant::now(),
            };
            let holder = spec.holder_identity.clone().unwrap_or_default();
            let duration = spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.election().duration(), Duration::from_secs);
            let alive = !holder.is_empty() && at.elapsed() < duration;
            if alive {
                live.insert(holder);
            } else if holder != self.identity {
                let version = lease.metadata.resource_version.clone().unwrap_or_default();
                dead.push((name.clone(), version, holder));
            }
            seen.insert(name, (spec, at));
        }
        self.observed = seen;
        (live.into_iter().collect(), dead)
    }

    async fn read_map(&self) -> Result<Read, kube::Error> {
        let Some(lease) = self.leases.get_opt(&self.settings.map_name()).await? else {
            return Ok(Read::Missing);
        };
        let text = lease
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(OWNERS_ANNOTATION))
            .cloned()
            .unwrap_or_default();
        Ok(match serde_json::from_str::<ShardMap>(&text) {
            Ok(map) if map.count >= 1 && map.owners.len() == map.count as usize => {
                Read::Map(Box::new(lease), map)
            }
            Ok(_) => Read::Broken(Box::new(lease), "the owners do not match the count".into()),
            Err(error) => Read::Broken(Box::new(lease), error.to_string()),
        })
    }

    fn map_lease(&self, mut lease: Lease, map: &ShardMap) -> Lease {
        let text = serde_json::to_string(map).unwrap_or_default();
        lease
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(OWNERS_ANNOTATION.to_string(), text);
        lease.metadata.name = Some(self.settings.map_name());
        lease
    }

    /// Creates (or, when broken, rewrites) the map with every shard unowned.
    async fn fresh_map(&self, broken: Option<Lease>) {
        let count = self.settings.shard_count();
        let map = ShardMap {
            count,
            owners: vec![String::new(); count as usize],
        };
        let result = match broken {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta::default(),
                    spec: Some(LeaseSpec::default()),
                };
                let lease = self.map_lease(lease, &map);
                self.leases.create(&PostParams::default(), &lease).await
            }
            Some(lease) => {
                let lease = self.map_lease(lease, &map);
                let name = self.settings.map_name();
                self.leases
                    .replace(&name, &PostParams::default(), &lease)
                    .await
            }
        };
        match result {
            Ok(_) => tracing::info!(map = %self.settings.map_name(), count, "shard map created"),
            Err(error) if conflict(&error) => {}
            Err(error) => tracing::warn!(error = %chain(&error), "cannot create the shard map"),
        }
    }

    /// Whether this replica owns or still holds any shard.
    fn holding(&self) -> bool {
        self.filter.owned_count() > 0 || self.filter.held(self.filter.count()).contains(&true)
    }

    /// One round: renew, see the members, read the map, hand over, assign, take. `false` when
    /// membership is lost.
    async fn tick(&mut self) -> bool {
        if !self.renew().await {
            return false;
        }
        if self.leaving {
            return true;
        }
        let selector = format!("{MEMBER_LABEL}={}", self.election().name());
        let leases = match self
            .leases
            .list(&ListParams::default().labels(&selector))
            .await
        {
            Ok(list) => list.items,
            Err(error) => {
                self.say(format!("cannot list the shard members ({})", chain(&error)));
                return true;
            }
        };
        let (live, dead) = self.observe(leases);
        let (lease, map) = match self.read_map().await {
            Ok(Read::Map(lease, map)) => (lease, map),
            Ok(other) => {
                if self.holding() {
                    tracing::error!(map = %self.settings.map_name(),
                        "the shard map is gone or unreadable while this replica holds shards; stopping");
                    return false;
                }
                match other {
                    Read::Broken(lease, why) => {
                        tracing::error!(map = %self.settings.map_name(), %why, "the shard map is unreadable; writing a new one");
                        self.fresh_map(Some(*lease)).await;
                    }
                    _ => self.fresh_map(None).await,
                }
                return true;
            }
            Err(error) => {
                self.say(format!("cannot read the shard map ({})", chain(&error)));
                return true;
            }
        };
        let uid = lease.metadata.uid.clone();
        self.map_version = lease.metadata.resource_version.clone();
        if self.map_uid.is_some() && self.map_uid != uid && self.holding() {
            tracing::error!(map = %self.settings.map_name(),
                "the shard map was replaced while this replica holds shards; stopping");
            return false;
        }
        self.map_uid = uid;
        let count = map.count;
        let me = self.identity.clone();
        let targets = assign(count, &live);
        let owners = map.owners.clone();
        let drop: Vec<bool> = (0..count as usize)
            .map(|n| owners[n] == me && targets[n] != me)
            .collect();
        let own = |owners: &[String]| -> Vec<bool> {
            (0..count as usize)
                .map(|n| owners[n] == me && targets[n] == me)
                .collect()
        };
        // Stop handling what goes away before asking what is still held.
        self.filter.set(own(&owners));
        let held = if drop.contains(&true) {
            self.filter.held(count)
        } else {
            vec![false; count as usize]
        };
        let mut next = owners.clone();
        let (mut handed, mut assigned) = (0, 0);
        for n in 0..count as usize {
            if drop[n] && !held[n] {
                next[n] = targets[n].clone();
                handed += 1;
            } else if owners[n] != me && !live.contains(&owners[n]) && !targets[n].is_empty() {
                next[n] = targets[n].clone();
                assigned += 1;
            }
        }
        let mut current = owners;
        if next != current {
            let lease = self.map_lease(
                *lease,
                &ShardMap {
                    count,
                    owners: next.clone(),
                },
            );
            let name = self.settings.map_name();
            match self
                .leases
                .replace(&name, &PostParams::default(), &lease)
                .await
            {
                Ok(written) => {
                    self.map_version = written.metadata.resource_version;
                    if handed > 0 || assigned > 0 {
                        tracing::info!(
                            handed_over = handed,
                            assigned,
                            members = live.len(),
                            "shard map updated"
                        );
                    }
                    current = next;
                    self.filter.set(own(&current));
                }
                Err(error) if conflict(&error) => {}
                Err(error) => {
                    self.say(format!("cannot write the shard map ({})", chain(&error)));
                }
            }
        }
        for (name, version, holder) in dead {
            if !current.contains(&holder) || holder.is_empty() {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: Some(version),
                        uid: None,
                    }),
                    ..DeleteParams::default()
                };
                if self.leases.delete(&name, &params).await.is_ok() {
                    tracing::info!(lease = %name, %holder, "a dead shard member's Lease deleted");
                }
            }
        }
        let owned = self.filter.owned_count();
        let metrics = crate::runtime::metrics::global();
        metrics
            .shards_owned
            .set(i64::try_from(owned).unwrap_or(i64::MAX));
        metrics
            .shard_members
            .set(i64::try_from(live.len()).unwrap_or(i64::MAX));
        let still: Vec<bool> = drop.iter().zip(&held).map(|(d, h)| *d && *h).collect();
        let draining = still.iter().filter(|s| **s).count();
        self.draining = (draining > 0).then_some(still);
        self.say(format!(
            "owning {owned} of {count} shards with {} members{}",
            live.len(),
            if draining > 0 {
                format!("; {draining} waiting for objects in flight before handover")
            } else {
                String::new()
            }
        ));
        true
    }

    fn say(&mut self, text: String) {
        if text != self.said {
            if text.starts_with("cannot") {
                tracing::warn!(identity = %self.identity, "{text}");
            } else {
                tracing::info!(identity = %self.identity, "{text}");
            }
            self.said = text;
        }
    }

    /// Leaves for good: hands every shard it owns to the remaining members (or unowned when
    /// none remain) and deletes the member Lease. Called once the reactor stopped handling.
    pub(crate) async fn release(&mut self) {
        self.leave();
        let selector = format!("{MEMBER_LABEL}={}", self.election().name());
        for _ in 0..5 {
            let others = match self
                .leases
                .list(&ListParams::default().labels(&selector))
                .await
            {
                Ok(list) => {
                    let (live, _) = self.observe(list.items);
                    live.into_iter()
                        .filter(|m| *m != self.identity)
                        .collect::<Vec<_>>()
                }
                Err(_) => Vec::new(),
            };
            let Ok(Read::Map(lease, map)) = self.read_map().await else {
                break;
            };
            if !map.owners.contains(&self.identity) {
                break;
            }
            let targets = assign(map.count, &others);
            let owners: Vec<String> = map
                .owners
                .iter()
                .zip(&targets)
                .map(|(owner, target)| {
                    if *owner == self.identity {
                        target.clone()
                    } else {
                        owner.clone()
                    }
                })
                .collect();
            let lease = self.map_lease(
                *lease,
                &ShardMap {
                    count: map.count,
                    owners,
                },
            );
            match self
                .leases
                .replace(&self.settings.map_name(), &PostParams::default(), &lease)
                .await
            {
                Ok(_) => {
                    tracing::info!(to = others.len(), "shards handed over");
                    break;
                }
                Err(error) if conflict(&error) => continue,
                Err(error) => {
                    tracing::warn!(error = %chain(&error), "could not hand the shards over");
                    break;
                }
            }
        }
        match self
            .leases
            .delete(&self.member_name, &DeleteParams::default())
            .await
        {
            Ok(_) => tracing::info!(lease = %self.member_name, "left the shard members"),
            // Stopped before its member Lease was written: nothing to leave.
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => {
                tracing::warn!(error = %chain(&error), "could not delete the member Lease")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_are_valid_whatever_the_identity() {
        let name = member_name("op", "Host_Name.example:1");
        assert!(name.starts_with("op-member-"));
        assert_eq!(name.len(), "op-member-".len() + 16);
        assert_ne!(name, member_name("op", "other"));
    }
}
