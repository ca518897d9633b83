//! One simulated node: the pod IPs of its CIDR.

#[allow(unused_imports)]
use super::*;

/// The simulated runtime's view of one node: its images and pod IPs.
pub(super) struct NodeRt {
    pub(super) images: HashSet<String>,
    pub(super) host_ip: String,
    pub(super) base: Option<[u8; 3]>,
    pub(super) used: HashSet<u8>,
    pub(super) next: u8,
}

impl NodeRt {
    pub(super) fn new(node: &Value, pods: &[Arc<Value>]) -> NodeRt {
        let name = object::name(node);
        let base = podutil::str_at(node, "/spec/podCIDR")
            .split('/')
            .next()
            .and_then(|ip| ip.parse::<std::net::Ipv4Addr>().ok())
            .map(|ip| {
                let o = ip.octets();
                [o[0], o[1], o[2]]
            });
        let mut rt = NodeRt {
            images: HashSet::new(),
            host_ip: nodes::internal_ip(node).unwrap_or("").to_string(),
            base,
            used: HashSet::new(),
            next: 2,
        };
        for p in pods {
            if podutil::str_at(p, "/spec/nodeName") != name {
                continue;
            }
            if !podutil::is_terminal(p) {
                rt.reserve(podutil::str_at(p, "/status/podIP"));
            }
            for cs in p
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !cs
                    .get("imageID")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                    && let Some(img) = cs.get("image").and_then(Value::as_str)
                {
                    rt.images.insert(simulation::qualified_image(img));
                }
            }
        }
        rt
    }

    pub(super) fn host_of(&self, ip: &str) -> Option<u8> {
        let base = self.base?;
        let addr: std::net::Ipv4Addr = ip.parse().ok()?;
        let o = addr.octets();
        (o[..3] == base).then_some(o[3])
    }

    pub(super) fn reserve(&mut self, ip: &str) {
        if let Some(h) = self.host_of(ip) {
            self.used.insert(h);
        }
    }

    pub(super) fn allocate(&mut self) -> Option<String> {
        let base = self.base?;
        for i in 0..253u16 {
            let h = 2 + ((u16::from(self.next) - 2 + i) % 253) as u8;
            if self.used.insert(h) {
                self.next = if h >= 254 { 2 } else { h + 1 };
                return Some(format!("{}.{}.{}.{h}", base[0], base[1], base[2]));
            }
        }
        None
    }

    pub(super) fn release(&mut self, ip: Option<&str>, host_network: bool) {
        if host_network {
            return;
        }
        if let Some(h) = ip.and_then(|ip| self.host_of(ip)) {
            self.used.remove(&h);
        }
    }
}
