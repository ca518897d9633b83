//! How a replica takes part beside the others: alone (`--standalone`), as a leader candidate
//! ([`leader`](crate::runtime::leader)), or as a shard member
//! ([`shards`](crate::runtime::shards)). The operator asks it to join, to hold on while it
//! handles objects (and while it stops, so that no other replica takes over before running
//! handlers finished), and to let go at the end.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::handling::errors::Error;
use crate::runtime::leader::{Elector, LeaderElection};
use crate::runtime::shards::{Coordinator, ShardFilter, Sharding};

/// One replica's way of taking part.
pub(crate) enum Membership {
    /// Handles every object, whatever other replicas do.
    Alone,
    /// Handles every object while it leads.
    Leader(Box<Elector>, LeaderElection),
    /// Handles the objects of the shards it owns.
    Member(Box<Coordinator>, Sharding),
}

impl Membership {
    /// The membership the settings ask for.
    ///
    /// # Errors
    /// Both leader election and sharding asked for, or timings client-go would refuse.
    pub(crate) fn new(
        client: &kube::Client,
        leader: Option<&LeaderElection>,
        sharding: Option<&Sharding>,
        filter: Option<&Arc<ShardFilter>>,
    ) -> Result<Membership, Error> {
        match (leader, sharding, filter) {
            (Some(_), Some(_), _) => Err(Error::Config(
                "leader election and sharding exclude each other: choose one".into(),
            )),
            (Some(settings), None, filter) => {
                settings.check()?;
                let mut elector = Elector::new(client.clone(), settings.clone());
                if let Some(filter) = filter {
                    // The leader owns the one shard of everything, until its renew deadline.
                    filter.set(vec![true]);
                    let (filter, deadline) = (filter.clone(), settings.deadline());
                    elector =
                        elector.on_renewed(move |started| filter.valid_until(started + deadline));
                }
                Ok(Membership::Leader(Box::new(elector), settings.clone()))
            }
            (None, Some(sharding), Some(filter)) => {
                sharding.election().check()?;
                let coordinator =
                    Coordinator::new(client.clone(), sharding.clone(), filter.clone());
                Ok(Membership::Member(Box::new(coordinator), sharding.clone()))
            }
            _ => Ok(Membership::Alone),
        }
    }

    /// Whether this replica waits for its turn before handling anything (a leader candidate).
    pub(crate) fn stands_by(&self) -> bool {
        matches!(self, Membership::Leader(..))
    }

    /// Waits until this replica may handle objects: it leads, or joined the shard members.
    pub(crate) async fn join(&mut self) {
        let forever = CancellationToken::new();
        match self {
            Membership::Alone => {}
            Membership::Leader(elector, _) => {
                elector.acquire(&forever).await;
            }
            Membership::Member(coordinator, _) => {
                coordinator.join(&forever).await;
            }
        }
    }

    /// Renews until `stop` (returns `true`) or until this replica lost its Lease (`false`).
    pub(crate) async fn hold(&mut self, stop: &CancellationToken) -> bool {
        match self {
            Membership::Alone => {
                stop.cancelled().await;
                true
            }
            Membership::Leader(elector, _) => elector.hold(stop).await,
            Membership::Member(coordinator, _) => coordinator.hold(stop).await,
        }
    }

    /// The operator is stopping: a shard member takes no more shards (it only renews).
    pub(crate) fn leave(&mut self) {
        if let Membership::Member(coordinator, _) = self {
            coordinator.leave();
        }
    }

    /// How long a replica that lost its Lease may take to stop: half the time between the
    /// renew deadline and the lease's expiry (`None` alone).
    pub(crate) fn margin(&self) -> Option<Duration> {
        match self {
            Membership::Alone => None,
            Membership::Leader(_, settings) => Some(settings.margin()),
            Membership::Member(_, sharding) => Some(sharding.election().margin()),
        }
    }

    /// This replica's identity (`None` alone).
    pub(crate) fn identity(&self) -> Option<String> {
        match self {
            Membership::Alone => None,
            Membership::Leader(elector, _) => Some(elector.identity().to_string()),
            Membership::Member(coordinator, _) => Some(coordinator.identity().to_string()),
        }
    }

    /// Lets go once nothing is handled any more: the leader empties the Lease's holder, a
    /// shard member hands its shards over and deletes its member Lease.
    pub(crate) async fn release(&mut self) {
        match self {
            Membership::Alone => {}
            Membership::Leader(elector, _) => elector.release().await,
            Membership::Member(coordinator, _) => coordinator.release().await,
        }
    }
}
