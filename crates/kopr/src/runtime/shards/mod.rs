//! Sharding: every replica of an operator handles objects, each a disjoint part of them.
//!
//! Objects map to `count` virtual shards (64 by default) by a fixed hash of their
//! `namespace/name` ([`shard_of`]). Each replica keeps a **member Lease**
//! (`<name>-member-<hash of its identity>`, labelled `kopr.dev/shard-of=<name>`) renewed as a
//! leader renews its Lease, and all replicas share a **shard map**: the Lease `<name>-shards`,
//! whose annotation `kopr.dev/shard-owners` names each shard's owner. The owner a shard should
//! have is the live member that ranks highest for it by rendezvous hashing ([`assign`]), so a
//! member joining takes only the shards it now ranks highest for, and one leaving or dying
//! gives away only its own: the rest do not move.
//!
//! Every retry period (and at once when another replica changed the map, which it watches, or
//! when the objects of shards it hands over were let go) each replica renews its member Lease,
//! lists the members, reads the map and, with writes conditional on the map's resourceVersion:
//! - **hands over** a shard it owns whose owner should now be another member: it stops
//!   handling the shard's objects at once, and writes the new owner into the map only once no
//!   object of the shard is held any more (no cycle in flight, no outcome waiting to land, no
//!   timer or daemon running);
//! - **assigns** shards that have no owner, or whose owner's member Lease is gone or has not
//!   changed for the lease duration on this replica's clock (a dead member), to the members
//!   that should own them;
//! - **takes** the shards the map names it for, and lists their objects again (the watches
//!   relist; resume handlers run for them, as after a failover).
//!
//! On SIGTERM a replica stops handling, lets handlers finish, hands all its shards to the
//! others and deletes its member Lease, so they are taken within a retry period. A replica
//! that cannot renew its member Lease within the renew deadline stops handling at once and
//! [`run_until`](crate::Operator::run_until) returns [`Error::LeadershipLost`](crate::Error::LeadershipLost):
//! the process should exit and start again.
//!
//! # Guarantees
//! An object is never handled by two replicas at once. Proof sketch, with the clock
//! assumption of leader election (replicas' clocks run at the same rate):
//! 1. A replica handles an object only while the last shard map it read names it for the
//!    object's shard, and only while its member Lease was renewed within the renew deadline.
//!    The reactor checks ownership under the object's slot lock before it starts a cycle or
//!    admits an event, so a shard dropped from the owned set starts nothing new.
//! 2. A shard's owner changes in the map (every write conditional on the version read) only
//!    (a) by the owner itself, after it dropped the shard and saw none of its objects held,
//!    or (b) by another replica, when the owner is absent from the map of members or its
//!    member Lease has not changed for the lease duration as that replica observed it. In
//!    case (b) the owner has gone at least the lease duration without a renewal, so it stopped
//!    handling by the renew deadline (shorter) plus its stop margin.
//! 3. The new owner handles the shard only after reading the map naming it, so after (a) or
//!    (b): the two never overlap.
//!
//! The map must not be deleted while replicas run: a replica holding shards that finds it
//! missing or replaced stops (as on a lost renewal), but another may have taken shards from
//! a fresh map within one retry period before that. Delete it only with every replica
//! stopped (say, to change the shard count, which is fixed when the map is created).
//!
//! `on_event` handlers are fenced too: an object's queued events hold its shard as a cycle
//! does, and none runs once the shard is dropped.
//!
//! # Watch cost
//! Every replica still watches every object of each resource and drops the events of shards
//! it does not own, so each replica pays the watch traffic and decoding of all objects, but
//! keeps slots, cycles and handler work for its share only. A label-based split (a label per
//! object naming its shard, watched by selector) would cut that traffic, but it needs a write
//! to every object, a label the operator's users see and may edit, and a relabelling pass when
//! the shard count changes; kopr keeps objects as they are.
//!
//! ```no_run
//! use kopr::leader::LeaderElection;
//! use kopr::shards::Sharding;
//! # let operator = kopr::Operator::new();
//! let operator = operator.sharding(Sharding::new(LeaderElection::new("my-operator")).count(64));
//! ```

mod coordinator;
mod filter;
mod ring;

pub(crate) use coordinator::Coordinator;
pub(crate) use filter::ShardFilter;
pub use ring::{assign, shard_of};

use crate::runtime::leader::LeaderElection;

/// The label on every member Lease, valued with the operator's name.
pub const MEMBER_LABEL: &str = "kopr.dev/shard-of";
/// The shard map's annotation: `{"count": N, "owners": [identity or "", …]}`.
pub const OWNERS_ANNOTATION: &str = "kopr.dev/shard-owners";

/// Sharding settings: the Lease names, namespace, identity and timings of a
/// [`LeaderElection`], and the number of virtual shards.
///
/// ```
/// use kopr::leader::LeaderElection;
/// use kopr::shards::Sharding;
///
/// let sharding = Sharding::new(LeaderElection::new("greeting").namespace("greeting-system")).count(128);
/// assert_eq!(sharding.map_name(), "greeting-shards");
/// let operator = kopr::Operator::new().sharding(sharding);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sharding {
    election: LeaderElection,
    count: u32,
}

impl Sharding {
    /// Shards with `election`'s name (the operator's), namespace, identity and timings (lease
    /// duration 15 s, renew deadline 10 s, retry period 2 s by default), over 64 virtual
    /// shards.
    pub fn new(election: LeaderElection) -> Sharding {
        Sharding {
            election,
            count: 64,
        }
    }

    /// The number of virtual shards (default 64; at least 1). It is fixed when the shard map
    /// is created: replicas follow the map's count.
    pub fn count(mut self, count: u32) -> Self {
        self.count = count.clamp(1, 4096);
        self
    }

    /// The Lease settings.
    pub fn election(&self) -> &LeaderElection {
        &self.election
    }

    /// The shard map's name: `<name>-shards`.
    pub fn map_name(&self) -> String {
        format!("{}-shards", self.election.name())
    }

    pub(crate) fn shard_count(&self) -> u32 {
        self.count
    }
}
