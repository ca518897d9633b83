//! The kubelet's `/stats/summary` body: a [`NodeUsage`] in the shape of
//! `stats/v1alpha1.Summary`, fields in the Go types' order and with their
//! `omitempty` rules, written as go-restful writes it
//! (`json.MarshalIndent(v, "", " ")`: one-space indent, no final newline).
//! With `only_cpu_and_memory=true` the kubelet answers with its CPU and
//! memory summary: node and pods without network, filesystems, volumes,
//! rlimit and process counts.

use serde::Serialize;

use super::stats::{self, ContainerUsage, Cpu, Filesystem, Memory, Network, NodeUsage, PodUsage};
use crate::podutil::rfc3339;

#[derive(Serialize)]
struct Summary {
    node: NodeStats,
    pods: Vec<PodStats>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeStats {
    node_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system_containers: Vec<ContainerStats>,
    start_time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<MemoryStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<NetworkStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fs: Option<FsStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<RuntimeStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rlimit: Option<RlimitStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    swap: Option<SwapStats>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PodStats {
    pod_ref: PodReference,
    start_time: String,
    /// `containers` has no `omitempty`: a pod without running containers
    /// has `null`, as Go writes a nil slice.
    containers: Option<Vec<ContainerStats>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<MemoryStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<NetworkStats>,
    #[serde(rename = "volume", skip_serializing_if = "Vec::is_empty")]
    volume: Vec<VolumeStats>,
    #[serde(rename = "ephemeral-storage", skip_serializing_if = "Option::is_none")]
    ephemeral_storage: Option<FsStats>,
    #[serde(rename = "process_stats", skip_serializing_if = "Option::is_none")]
    process_stats: Option<ProcessStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    swap: Option<SwapStats>,
}

#[derive(Serialize)]
struct PodReference {
    name: String,
    namespace: String,
    uid: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ContainerStats {
    name: String,
    start_time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<MemoryStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rootfs: Option<FsStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logs: Option<FsStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    swap: Option<SwapStats>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CpuStats {
    time: String,
    usage_nano_cores: u64,
    usage_core_nano_seconds: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MemoryStats {
    time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    available_bytes: Option<u64>,
    usage_bytes: u64,
    working_set_bytes: u64,
    rss_bytes: u64,
    page_faults: u64,
    major_page_faults: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InterfaceStats {
    name: &'static str,
    rx_bytes: u64,
    rx_errors: u64,
    tx_bytes: u64,
    tx_errors: u64,
}

/// The default interface's counters inline, then every interface.
#[derive(Serialize)]
struct NetworkStats {
    time: String,
    #[serde(flatten)]
    default: InterfaceStats,
    interfaces: Vec<InterfaceStats>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FsStats {
    time: String,
    available_bytes: u64,
    capacity_bytes: u64,
    used_bytes: u64,
    inodes_free: u64,
    inodes: u64,
    inodes_used: u64,
}

#[derive(Serialize)]
struct VolumeStats {
    #[serde(flatten)]
    fs: FsStats,
    name: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RuntimeStats {
    image_fs: FsStats,
    container_fs: FsStats,
}

#[derive(Serialize)]
struct RlimitStats {
    time: String,
    maxpid: i64,
    curproc: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SwapStats {
    time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    swap_available_bytes: Option<u64>,
    swap_usage_bytes: u64,
}

#[derive(Serialize)]
struct ProcessStats {
    process_count: u64,
}

/// Renders the summary (`only_cpu_and_memory`: the CPU and memory one).
pub fn render(u: &NodeUsage, only_cpu_and_memory: bool) -> Vec<u8> {
    let w = Writer {
        time: rfc3339(u.now),
        usage: u,
    };
    let full = !only_cpu_and_memory;
    let summary = Summary {
        node: NodeStats {
            node_name: u.node_name.clone(),
            system_containers: u
                .system
                .iter()
                .map(|s| ContainerStats {
                    name: s.name.into(),
                    start_time: rfc3339(u.start),
                    cpu: Some(w.cpu(&s.cpu)),
                    memory: Some(w.memory(&s.memory)),
                    rootfs: None,
                    logs: None,
                    swap: Some(w.swap(false)),
                })
                .collect(),
            start_time: rfc3339(u.start),
            cpu: Some(w.cpu(&u.cpu)),
            memory: Some(w.memory(&u.memory)),
            network: full.then(|| w.network(&u.network)),
            fs: full.then(|| w.fs(&u.fs, u.fs.used, u.fs.inodes_used)),
            runtime: full.then(|| RuntimeStats {
                image_fs: w.fs(&u.fs, u.images.0, u.images.1),
                container_fs: w.fs(&u.fs, u.images.0, u.images.1),
            }),
            rlimit: full.then(|| RlimitStats {
                time: w.time.clone(),
                maxpid: stats::MAX_PID,
                curproc: u.processes,
            }),
            swap: Some(w.swap(true)),
        },
        pods: u.pods.iter().map(|p| w.pod(p, full)).collect(),
    };
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        serde_json::ser::PrettyFormatter::with_indent(b" "),
    );
    if summary.serialize(&mut ser).is_err() {
        out.clear();
    }
    out
}

/// Builds the stats of one instant.
struct Writer<'a> {
    time: String,
    usage: &'a NodeUsage,
}

impl Writer<'_> {
    fn cpu(&self, c: &Cpu) -> CpuStats {
        CpuStats {
            time: self.time.clone(),
            usage_nano_cores: c.nano_cores,
            usage_core_nano_seconds: c.core_nanos,
        }
    }

    fn memory(&self, m: &Memory) -> MemoryStats {
        MemoryStats {
            time: self.time.clone(),
            available_bytes: m.available(),
            usage_bytes: m.usage,
            working_set_bytes: m.working_set,
            rss_bytes: m.rss,
            page_faults: m.page_faults,
            major_page_faults: 0,
        }
    }

    /// No swap: the node's limit is its (empty) swap space; containers'
    /// and pods' swap is unlimited, so without an available figure.
    fn swap(&self, node: bool) -> SwapStats {
        SwapStats {
            time: self.time.clone(),
            swap_available_bytes: node.then_some(0),
            swap_usage_bytes: 0,
        }
    }

    fn network(&self, n: &Network) -> NetworkStats {
        let eth0 = || InterfaceStats {
            name: "eth0",
            rx_bytes: n.rx,
            rx_errors: 0,
            tx_bytes: n.tx,
            tx_errors: 0,
        };
        NetworkStats {
            time: self.time.clone(),
            default: eth0(),
            interfaces: vec![eth0()],
        }
    }

    /// A filesystem of the node's disk, with `used` bytes and inodes.
    fn fs(&self, disk: &Filesystem, used: u64, inodes_used: u64) -> FsStats {
        FsStats {
            time: self.time.clone(),
            available_bytes: disk.available(),
            capacity_bytes: disk.capacity,
            used_bytes: used,
            inodes_free: disk.inodes_free(),
            inodes: disk.inodes,
            inodes_used,
        }
    }

    fn container(&self, c: &ContainerUsage, full: bool) -> ContainerStats {
        let disk = &self.usage.fs;
        ContainerStats {
            name: c.name.clone(),
            start_time: rfc3339(c.start),
            cpu: Some(self.cpu(&c.cpu)),
            memory: Some(self.memory(&c.memory)),
            rootfs: full.then(|| self.fs(disk, stats::ROOTFS_BYTES, stats::ROOTFS_INODES)),
            logs: full.then(|| self.fs(disk, c.log_bytes, stats::LOG_INODES)),
            swap: Some(self.swap(false)),
        }
    }

    fn pod(&self, p: &PodUsage, full: bool) -> PodStats {
        let disk = &self.usage.fs;
        let containers: Vec<ContainerStats> = p
            .containers
            .iter()
            .map(|c| self.container(c, full))
            .collect();
        let (ephemeral, ephemeral_inodes) = p.ephemeral();
        PodStats {
            pod_ref: PodReference {
                name: p.name.clone(),
                namespace: p.namespace.clone(),
                uid: p.uid.clone(),
            },
            start_time: rfc3339(p.start),
            containers: (!containers.is_empty()).then_some(containers),
            cpu: Some(self.cpu(&p.cpu)),
            memory: Some(self.memory(&p.memory)),
            network: full.then(|| self.network(&p.network)),
            volume: if full {
                p.volumes
                    .iter()
                    .map(|v| VolumeStats {
                        fs: self.fs(disk, v.used, v.inodes),
                        name: v.name.clone(),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            ephemeral_storage: full.then(|| self.fs(disk, ephemeral, ephemeral_inodes)),
            process_stats: full.then_some(ProcessStats {
                process_count: p.processes,
            }),
            swap: Some(self.swap(false)),
        }
    }
}
