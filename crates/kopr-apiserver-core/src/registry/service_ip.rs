//! Service address allocation, as kube-apiserver's service registry does it:
//! a cluster IP from the service range (10.96.0.0/12; `10.96.0.1` is the
//! `kubernetes` Service) and node ports from 30000-32767 for NodePort and
//! LoadBalancer Services.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::{Api, ListOptions};
use crate::resources::kind::Known;
use crate::status::ApiError;

/// First address of the service range.
const RANGE_START: u32 = u32::from_be_bytes([10, 96, 0, 0]);
/// Size of the service range (/12).
const RANGE_SIZE: u32 = 1 << 20;
/// The node port range.
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

fn needs_cluster_ip(svc: &Value) -> bool {
    let spec_type = svc
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    let ip = svc
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("");
    spec_type != "ExternalName" && ip.is_empty()
}

impl Api {
    /// Fills in a new Service's cluster IP and node ports.
    pub(super) async fn allocate_service_addresses(&self, svc: &mut Value) -> Result<(), ApiError> {
        let Some(rt) = self.catalog.known(Known::Services) else {
            return Ok(());
        };
        let spec_type = svc
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_string();
        let wants_node_ports = matches!(spec_type.as_str(), "NodePort" | "LoadBalancer");
        if !needs_cluster_ip(svc) && !wants_node_ports {
            return Ok(());
        }
        let existing = self.list(&rt, None, &ListOptions::default()).await?;
        let mut ips = HashSet::new();
        let mut ports = HashSet::new();
        for s in &existing.items {
            if let Some(ip) = s.pointer("/spec/clusterIP").and_then(Value::as_str) {
                ips.insert(ip.to_string());
            }
            for p in s
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(n) = p.get("nodePort").and_then(Value::as_i64) {
                    ports.insert(n);
                }
            }
        }
        if needs_cluster_ip(svc) {
            // .1 is reserved for the kubernetes Service; start after it.
            let ip = (2..RANGE_SIZE - 1)
                .map(|offset| Ipv4Addr::from(RANGE_START + offset).to_string())
                .find(|ip| !ips.contains(ip))
                .ok_or_else(|| {
                    ApiError::internal("failed to allocate a serviceIP: range is full")
                })?;
            if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("clusterIP".into(), json!(ip));
                spec.insert("clusterIPs".into(), json!([ip]));
                spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
                spec.entry("ipFamilyPolicy")
                    .or_insert_with(|| json!("SingleStack"));
            }
        }
        if wants_node_ports {
            let mut next = NODE_PORTS.clone().filter(|p| !ports.contains(p));
            if let Some(list) = svc.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
                for port in list.iter_mut().filter_map(Value::as_object_mut) {
                    if port.get("nodePort").and_then(Value::as_i64).is_none() {
                        let n = next.next().ok_or_else(|| {
                            ApiError::internal("failed to allocate a nodePort: range is full")
                        })?;
                        port.insert("nodePort".into(), json!(n));
                    }
                }
            }
        }
        Ok(())
    }
}
