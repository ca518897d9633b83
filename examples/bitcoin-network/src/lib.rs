//! The BitcoinNetwork operator: the controller the CRD walkthrough sketches, in kopr.
//!
//! A `BitcoinNetwork` (`bitcoinnetworks.christianb93.github.com/v1`) asks for `spec.nodes`
//! bitcoind nodes (at least one; the schema refuses less). For each network the operator keeps
//! a headless Service and a StatefulSet of `spec.nodes` regtest nodes, both named after the
//! network and owned by it, so that deleting the network garbage-collects them; changing
//! `spec.nodes` scales the StatefulSet; a child changed or deleted by hand is applied again.
//! The operator also watches the nodes' pods and lists them in the network's status
//! (`status.nodes`: name, IP, ready; `status.readyNodes`), which follows pods as they start,
//! become ready and go away.
//!
//! A network whose Service or StatefulSet name is taken by an object it does not own gets a
//! Warning event and `status.message` saying so, and is retried; other networks are served
//! meanwhile.

#![warn(missing_docs)]

pub mod children;
pub mod status;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Service};
use kopr::manifests::Manifests;
use kopr::{Context, Filtered, Handler, HandlerError, HandlerResult, Matcher, Operator, Resource};
use kube::api::{Api, Patch, PatchParams};
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::children::NETWORK_LABEL;
use crate::status::Refresher;

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

/// What the operator observed. kopr keeps its own bookkeeping beside these fields, so the
/// schema keeps unknown fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
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
                if status.code == 400 || status.code == 422 =>
            {
                HandlerError::permanent(message)
            }
            NetworkError::NoNamespace | NetworkError::Adopt(_) => HandlerError::permanent(message),
            _ => HandlerError::temporary(message, RETRY_DELAY),
        }
    }
}

/// The field manager of the operator's server-side applies.
pub const FIELD_MANAGER: &str = "bitcoin-network";

/// Whether `object` is controlled by the owner with this uid.
fn controlled_by(object: &impl ResourceExt, uid: &str) -> bool {
    object
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// Fails when an object named `name` exists that the network (`owner_uid`) does not control.
async fn check_free<K>(
    api: &Api<K>,
    kind: &'static str,
    name: &str,
    owner_uid: &str,
) -> Result<(), NetworkError>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.get_opt(name).await? {
        Some(existing) if !controlled_by(&existing, owner_uid) => Err(NetworkError::Taken {
            kind,
            name: name.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// Brings the network's Service and StatefulSet in line with its spec (server-side apply),
/// unless one of their names is taken: then nothing is created.
async fn apply_children(
    client: &kube::Client,
    network: &BitcoinNetwork,
) -> Result<String, NetworkError> {
    let namespace = network
        .metadata
        .namespace
        .as_deref()
        .ok_or(NetworkError::NoNamespace)?;
    let name = network.metadata.name.as_deref().unwrap_or_default();
    let uid = network.metadata.uid.as_deref().unwrap_or_default();
    let (service, set) = (
        children::service(network)?,
        children::stateful_set(network)?,
    );
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    check_free(&services, "Service", name, uid).await?;
    check_free(&sets, "StatefulSet", name, uid).await?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    services
        .patch(name, &params, &Patch::Apply(&service))
        .await?;
    sets.patch(name, &params, &Patch::Apply(&set)).await?;
    let nodes = match network.spec.nodes {
        1 => "1 node".to_owned(),
        n => format!("{n} nodes"),
    };
    Ok(format!(
        "StatefulSet {name} runs {nodes} behind the headless Service {name}"
    ))
}

/// The create, update and resume handler: keeps the children, reports in `status.message`.
async fn reconcile(refresher: Arc<Refresher>, ctx: Context<BitcoinNetwork>) -> HandlerResult {
    match apply_children(ctx.client(), &ctx.object).await {
        Ok(message) => {
            tracing::info!("BitcoinNetwork {}: {message}", ctx.name());
            ctx.patch().status("message", message);
            // The node list starts out (or stays) right even before any pod event.
            if let Some(namespace) = ctx.namespace()
                && let Err(error) = refresher.refresh(ctx.client(), namespace, ctx.name()).await
            {
                tracing::warn!(
                    "BitcoinNetwork {}: status not refreshed: {error}",
                    ctx.name()
                );
            }
            Ok(())
        }
        Err(error) => {
            ctx.patch().status("message", error.to_string());
            Err(error.into_handler_error())
        }
    }
}

/// A node's pod changed: refreshes its network's status.
async fn pod_changed(refresher: Arc<Refresher>, ctx: Context<Pod>) -> HandlerResult {
    let network = ctx.object.labels().get(NETWORK_LABEL).cloned();
    if let (Some(network), Some(namespace)) = (network, ctx.namespace()) {
        refresher
            .refresh(ctx.client(), namespace, &network)
            .await
            .map_err(|e| HandlerError::message(e.to_string()))?;
    }
    Ok(())
}

/// A network's StatefulSet or Service changed or went away: applies the network's children
/// again, which puts back hand edits of the fields the operator sets and recreates a deleted
/// child. An apply that changes nothing is not stored, so the operator's own writes and the
/// StatefulSet's status updates end there. Children of a network that is gone or being
/// deleted are left to the garbage collector.
async fn child_changed<K>(ctx: Context<K>) -> HandlerResult
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let owner = ctx
        .object
        .owner_references()
        .iter()
        .find(|r| r.controller == Some(true) && r.kind == "BitcoinNetwork")
        .cloned();
    let (Some(owner), Some(namespace)) = (owner, ctx.namespace()) else {
        return Ok(());
    };
    let networks: Api<BitcoinNetwork> = Api::namespaced(ctx.client().clone(), namespace);
    let network = networks
        .get_opt(&owner.name)
        .await
        .map_err(|e| HandlerError::message(e.to_string()))?;
    let Some(network) = network.filter(|n| {
        n.metadata.uid.as_deref() == Some(owner.uid.as_str())
            && n.metadata.deletion_timestamp.is_none()
    }) else {
        return Ok(());
    };
    apply_children(ctx.client(), &network)
        .await
        .map(drop)
        .map_err(|e| HandlerError::message(e.to_string()))
}

/// How the operator is deployed: it manages StatefulSets and Services (pods it only watches).
pub fn manifests() -> Manifests {
    Manifests::new("bitcoin-network")
        .child::<StatefulSet>()
        .child::<Service>()
}

/// The BitcoinNetwork operator.
pub fn operator() -> Operator {
    let refresher = Arc::new(Refresher::default());
    let handler = |id: &str| {
        let refresher = refresher.clone();
        Handler::new(move |ctx| reconcile(refresher.clone(), ctx)).id(id)
    };
    let networks = Resource::<BitcoinNetwork>::custom()
        .on_create(handler("create"))
        .on_update(handler("update"))
        .on_resume(handler("resume"));
    let on_pod = refresher.clone();
    let pods = Resource::<Pod>::new().on_event(
        Handler::new(move |ctx| pod_changed(on_pod.clone(), ctx))
            .id("network-pods")
            .label(NETWORK_LABEL, Matcher::Present),
    );
    let sets = Resource::<StatefulSet>::new()
        .on_event(Handler::new(child_changed::<StatefulSet>).id("network-statefulsets"));
    let services = Resource::<Service>::new()
        .on_event(Handler::new(child_changed::<Service>).id("network-services"));
    Operator::new()
        .resource(networks)
        .resource(pods)
        .resource(sets)
        .resource(services)
}
