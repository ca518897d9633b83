//! The operator of `kopr-bench index`: an index of pods by node (`pods-by-node`, pod names
//! by `spec.nodeName`) on a resource with no handlers, and nothing else.
//!
//! Run as `index-operator run -A --standalone --metrics-listen ADDR` (KUBECONFIG points at the
//! cluster); `kopr_index_objects{index="pods-by-node"}` tells how many pods are indexed.

use std::process::ExitCode;

use k8s_openapi::api::core::v1::Pod;
use kopr::{Operator, Resource};

#[tokio::main]
async fn main() -> ExitCode {
    Operator::new()
        .resource(Resource::<Pod>::new().index("pods-by-node", |pod: &Pod| {
            let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
            let name = pod.metadata.name.clone().unwrap_or_default();
            node.map(|node| (node, name)).into_iter().collect()
        }))
        .main()
        .await
}
