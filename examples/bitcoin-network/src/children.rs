//! The objects a BitcoinNetwork owns: a headless Service and a StatefulSet of bitcoind nodes,
//! both named after the network.
//!
//! The nodes run bitcoind in regtest mode. The StatefulSet gives them stable names
//! (`<network>-0`, `<network>-1`, ...) and the headless Service stable DNS names
//! (`<network>-0.<network>`), so every node can find the first one, `<network>-0`, and learn
//! about the others from it. Pods start in parallel: bitcoin nodes need no start order.

use std::collections::BTreeMap;

use kopr::adopt::AdoptError;
use serde_json::{Value, json};

use crate::BitcoinNetwork;

/// The bitcoind image the nodes run.
pub const BITCOIND_IMAGE: &str = "ruimarinho/bitcoin-core:24";

/// The peer-to-peer port of a regtest node.
pub const P2P_PORT: i32 = 18444;

/// The JSON-RPC port of a regtest node.
pub const RPC_PORT: i32 = 18443;

/// The label that ties a node's pod to its network (the value is the network's name).
pub const NETWORK_LABEL: &str = "christianb93.github.com/bitcoin-network";

/// The labels of the nodes' pods: the StatefulSet's selector and the Service's.
pub fn pod_labels(network: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NETWORK_LABEL.to_owned(), network.to_owned()),
        ("app.kubernetes.io/name".to_owned(), "bitcoind".to_owned()),
    ])
}

/// The bitcoind command line of every node of `network`.
pub fn bitcoind_args(network: &str) -> Vec<String> {
    vec![
        "-regtest".to_owned(),
        "-server".to_owned(),
        "-listen".to_owned(),
        "-dnsseed=0".to_owned(),
        "-rpcbind=0.0.0.0".to_owned(),
        "-rpcallowip=0.0.0.0/0".to_owned(),
        format!("-addnode={network}-0.{network}:{P2P_PORT}"),
    ]
}

/// The headless Service of `network`: a DNS name per node, published before the node is ready
/// so that peers can connect while it starts.
pub fn service(network: &BitcoinNetwork) -> Result<Value, AdoptError> {
    let name = network.metadata.name.as_deref().unwrap_or_default();
    let mut service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": true,
            "selector": pod_labels(name),
            "ports": [
                {"name": "p2p", "port": P2P_PORT, "targetPort": P2P_PORT},
                {"name": "rpc", "port": RPC_PORT, "targetPort": RPC_PORT},
            ],
        },
    });
    kopr::adopt(&mut service, network)?;
    Ok(service)
}

/// The StatefulSet of `network`, with `spec.nodes` replicas.
pub fn stateful_set(network: &BitcoinNetwork) -> Result<Value, AdoptError> {
    let name = network.metadata.name.as_deref().unwrap_or_default();
    let labels = pod_labels(name);
    let mut set = json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": network.spec.nodes,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{
                        "name": "bitcoind",
                        "image": BITCOIND_IMAGE,
                        "args": bitcoind_args(name),
                        "ports": [
                            {"name": "p2p", "containerPort": P2P_PORT},
                            {"name": "rpc", "containerPort": RPC_PORT},
                        ],
                        "readinessProbe": {"tcpSocket": {"port": "rpc"}},
                    }],
                },
            },
        },
    });
    kopr::adopt(&mut set, network)?;
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BitcoinNetworkSpec;

    fn network() -> BitcoinNetwork {
        let mut network = BitcoinNetwork::new("regtest", BitcoinNetworkSpec { nodes: 3 });
        network.metadata.namespace = Some("chain".into());
        network.metadata.uid = Some("uid-1".into());
        network
    }

    #[test]
    fn the_stateful_set_is_owned_and_sized_by_the_network() {
        let set = stateful_set(&network()).expect("adopted");
        assert_eq!(set["metadata"]["namespace"], "chain");
        assert_eq!(set["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(set["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(set["spec"]["replicas"], 3);
        assert_eq!(set["spec"]["serviceName"], "regtest");
        assert_eq!(
            set["spec"]["template"]["metadata"]["labels"][NETWORK_LABEL],
            "regtest"
        );
        let args = &set["spec"]["template"]["spec"]["containers"][0]["args"];
        assert!(
            args.as_array()
                .is_some_and(|a| a.contains(&json!("-addnode=regtest-0.regtest:18444"))),
            "{args}"
        );
    }

    #[test]
    fn the_service_is_headless() {
        let service = service(&network()).expect("adopted");
        assert_eq!(service["spec"]["clusterIP"], "None");
        assert_eq!(service["spec"]["selector"][NETWORK_LABEL], "regtest");
        assert_eq!(
            service["metadata"]["ownerReferences"][0]["kind"],
            "BitcoinNetwork"
        );
    }
}
