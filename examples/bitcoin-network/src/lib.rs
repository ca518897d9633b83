//! The BitcoinNetwork operator: the controller the CRD walkthrough sketches, in kopr's
//! reconcile model.
//!
//! A `BitcoinNetwork` (`bitcoinnetworks.christianb93.github.com/v1`) asks for `spec.nodes`
//! bitcoind nodes (at least one; the schema refuses less). For each network the operator keeps
//! a headless Service and a StatefulSet of `spec.nodes` regtest nodes, both named after the
//! network and owned by it, so that deleting the network garbage-collects them; changing
//! `spec.nodes` scales the StatefulSet; a child changed or deleted by hand is applied again.
//! The nodes' pods are listed in the network's status (`status.nodes`: name, IP, ready;
//! `status.readyNodes`), which follows them as they start, become ready and go away.
//!
//! One reconcile does it all: it runs when a network changes, when a child it owns changes
//! (`owns::<StatefulSet>()`, `owns::<Service>()`) and when a pod labelled with the network's
//! name does (`watches::<Pod>(..)`), one run at a time per network. It server-side-applies
//! both children ([`Context::apply`]), which changes nothing when they are as desired, and
//! sets the status from the pods when it differs.
//!
//! A network whose Service or StatefulSet name is taken by an object it does not own gets a
//! Warning event and `status.message` saying so, and is retried; other networks are served
//! meanwhile.

#![warn(missing_docs)]

pub mod children;
pub mod status;

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Service};
use kopr::manifests::Manifests;
use kopr::reconcile::{Action, Key};
use kopr::{Context, HandlerError, HandlerResult, Operator, Resource};
use kube::api::{Api, ListParams};
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::children::NETWORK_LABEL;

/// The desired state of a BitcoinNetwork: how many nodes.
// clippy takes the repeated `type_ = ...` of the printcolumn(...) arguments for duplicated
// attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "christianb93.github.com",
    version = "v1",
    kind = "BitcoinNetwork",
    namespaced,
    doc = "A small network of bitcoind nodes in regtest mode, run as a StatefulSet",
    status = "BitcoinNetworkStatus",
    printcolumn(name = "Nodes", type_ = "integer", json_path = ".spec.nodes"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyNodes"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct BitcoinNetworkSpec {
    /// How many bitcoind nodes the network runs.
    #[schemars(range(min = 1))]
    pub nodes: i32,
}

/// What the operator observed. kopr reports an object it cannot read under `status.kopr`, so
/// the schema keeps unknown fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct BitcoinNetworkStatus {
    /// The running nodes, in ordinal order.
    #[serde(default)]
    pub nodes: Vec<NodeStatus>,
    /// How many of them are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_nodes: Option<i32>,
    /// What the operator did last, or why it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One node of a network.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct NodeStatus {
    /// The pod's name, `<network>-<ordinal>`.
    pub name: String,
    /// The pod's IP, once it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Whether the pod is ready.
    #[serde(default)]
    pub ready: bool,
}

/// Why a network could not be reconciled.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// A child's name is used by an object the network does not control.
    #[error("{kind} {name} already exists and does not belong to this BitcoinNetwork")]
    Taken {
        /// The child's kind.
        kind: &'static str,
        /// The child's name.
        name: String,
    },
    /// The network has no namespace (the CRD is namespaced, so only a broken object has none).
    #[error("the BitcoinNetwork has no namespace")]
    NoNamespace,
    /// A child could not be made the network's.
    #[error(transparent)]
    Adopt(#[from] kopr::adopt::AdoptError),
    /// The API server refused a request or could not be reached.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A child could not be applied.
    #[error(transparent)]
    Apply(#[from] kopr::children::ApplyError),
    /// The owned children could not be read.
    #[error(transparent)]
    Lookup(#[from] kopr::LookupError),
    /// A child could not be read from its JSON.
    #[error("a child's JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// How long to wait before trying again after a failure that may go away by itself (a taken
/// name, an unreachable API server).
pub const RETRY_DELAY: Duration = Duration::from_secs(10);

impl NetworkError {
    /// The handler error kopr acts on: requests the server refused as invalid fail for good,
    /// the rest is retried after [`RETRY_DELAY`].
    fn into_handler_error(self) -> HandlerError {
        let message = self.to_string();
        match &self {
            NetworkError::Kube(kube::Error::Api(status))
            | NetworkError::Apply(kopr::children::ApplyError::Api(kube::Error::Api(status)))
                if status.code == 400 || status.code == 422 =>
            {
                HandlerError::permanent(message)
            }
            NetworkError::NoNamespace | NetworkError::Adopt(_) | NetworkError::Json(_) => {
                HandlerError::permanent(message)
            }
            _ => HandlerError::temporary(message, RETRY_DELAY),
        }
    }
}

/// The operator's name: its field manager, and the domain of its finalizer and annotations.
pub const FIELD_MANAGER: &str = "bitcoin-network";

/// Whether `object` is controlled by the owner with this uid.
fn controlled_by(object: &impl ResourceExt, uid: &str) -> bool {
    object
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// Fails when an object named `name` exists that the network does not control. Its own
/// children are in the cache ([`Context::owned`]); anything else is asked for.
async fn check_free<K>(
    ctx: &Context<BitcoinNetwork>,
    kind: &'static str,
) -> Result<(), NetworkError>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let name = ctx.name();
    if ctx
        .owned::<K>()
        .map_err(NetworkError::from)?
        .iter()
        .any(|child| child.name_any() == name)
    {
        return Ok(());
    }
    let namespace = ctx.namespace().ok_or(NetworkError::NoNamespace)?;
    let api: Api<K> = Api::namespaced(ctx.client().clone(), namespace);
    match api.get_opt(name).await? {
        Some(existing) if !controlled_by(&existing, ctx.uid()) => Err(NetworkError::Taken {
            kind,
            name: name.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// Brings the network's Service and StatefulSet in line with its spec (server-side apply),
/// unless one of their names is taken: then nothing is created. Returns what the network
/// runs, and whether anything changed.
async fn apply_children(ctx: &Context<BitcoinNetwork>) -> Result<(String, bool), NetworkError> {
    let network = &*ctx.object;
    let service: Service = serde_json::from_value(children::service(network)?)?;
    let set: StatefulSet = serde_json::from_value(children::stateful_set(network)?)?;
    check_free::<Service>(ctx, "Service").await?;
    check_free::<StatefulSet>(ctx, "StatefulSet").await?;
    let changed = ctx.apply(&service).await?.changed | ctx.apply(&set).await?.changed;
    let name = ctx.name();
    let nodes = match network.spec.nodes {
        1 => "1 node".to_owned(),
        n => format!("{n} nodes"),
    };
    let message = format!("StatefulSet {name} runs {nodes} behind the headless Service {name}");
    Ok((message, changed))
}

/// Keeps the network's children as its spec says and its status as its pods are.
async fn reconcile(ctx: Context<BitcoinNetwork>) -> HandlerResult<Action> {
    let name = ctx.name();
    let applied = apply_children(&ctx).await;
    let mut status = ctx.object.status.clone().unwrap_or_default();
    let previous = status.clone();
    status.message = Some(match &applied {
        Ok((message, changed)) => {
            if *changed {
                tracing::info!("BitcoinNetwork {name}: {message}");
            }
            message.clone()
        }
        Err(error) => error.to_string(),
    });
    // The node list, from the pods (their changes run this reconcile).
    let pods: Api<Pod> = Api::namespaced(ctx.client().clone(), ctx.namespace().unwrap_or_default());
    let selector = ListParams::default().labels(&format!("{NETWORK_LABEL}={name}"));
    status.nodes = status::nodes(&pods.list(&selector).await?.items, name);
    let ready = status.nodes.iter().filter(|n| n.ready).count();
    status.ready_nodes = Some(i32::try_from(ready).unwrap_or(i32::MAX));
    if status != previous {
        if status.nodes != previous.nodes {
            let total = status.nodes.len();
            tracing::info!("BitcoinNetwork {name}: {ready} of {total} nodes ready");
        }
        ctx.patch().set("status", &status);
    }
    match applied {
        Ok(_) => Ok(Action::await_change()),
        Err(error) => Err(error.into_handler_error()),
    }
}

/// How the operator is deployed. Its RBAC follows from the operator: the StatefulSets and
/// Services it owns are children, the pods it watches are read.
pub fn manifests() -> Manifests {
    Manifests::new("bitcoin-network")
}

/// The BitcoinNetwork operator.
pub fn operator() -> Operator {
    let networks = Resource::<BitcoinNetwork>::custom()
        .reconcile(reconcile)
        .owns::<StatefulSet>()
        .owns::<Service>()
        // A node's pod names its network in a label.
        .watches(|pod: &Pod| {
            let network = pod.labels().get(NETWORK_LABEL).cloned();
            let namespace = pod.namespace().unwrap_or_default();
            network
                .map(|network| Key::namespaced(namespace, network))
                .into_iter()
                .collect()
        });
    Operator::new().name(FIELD_MANAGER).resource(networks)
}
