//! The resource usage of a simulated node and its pods, as the simulated
//! kubelet reports it (`/stats/summary`, `/metrics/resource`).
//!
//! Nothing runs, so nothing is measured: the usage is **synthesized**,
//! deterministically, from what the simulation knows — the node's capacity
//! and creation time, each pod's start time and volumes, each running
//! container's start time, resources and image:
//!
//! - a running container uses a tenth of its CPU request (else of its CPU
//!   limit, else 1m) and half of its memory request (else of its limit,
//!   else 8 MiB) as working set; its cumulative CPU time is that rate times
//!   the time since it (this instance) started; its writable layer holds
//!   [`ROOTFS_BYTES`] and its log file the lines the simulated runtime
//!   wrote ([`simulation::instance_log`]) in the CRI log format;
//! - a pod is the sum of its running containers; its network counters grow
//!   at a fixed rate since the pod started; emptyDir, ConfigMap, Secret,
//!   projected and downward API volumes hold a fixed few files;
//! - the node is the sum of its pods plus fixed system daemons (kubelet,
//!   container runtime, the rest of the OS) running since the node was
//!   created; its filesystem holds a fixed base system, the images its pods'
//!   containers were started from ([`simulation::image_size`]) and the pods'
//!   ephemeral storage. There is no swap.

use std::sync::Arc;

use serde_json::Value;

use crate::node_runtime::Instance;
use crate::object;
use crate::podutil;
use crate::quantity::Quantity;
use crate::simulation;

/// Bytes in a MiB.
const MIB: u64 = 1 << 20;
/// CPU of a container with neither request nor limit: 1m, in nanocores.
const DEFAULT_NANO_CORES: u64 = 1_000_000;
/// Working set of a container with neither request nor limit.
const DEFAULT_WORKING_SET: u64 = 8 * MIB;
/// What a container's writable layer holds.
pub const ROOTFS_BYTES: u64 = 40_960;
/// Inodes of a container's writable layer.
pub const ROOTFS_INODES: u64 = 10;
/// Inodes of a container's log: one file.
pub const LOG_INODES: u64 = 1;
/// Bytes and inodes of a volume of projected files (ConfigMap, Secret, …).
const FILES_VOLUME: (u64, u64) = (12_288, 9);
/// Bytes and inodes of an emptyDir nobody wrote to.
const EMPTY_DIR: (u64, u64) = (4_096, 1);
/// Bytes a pod receives and sends each second.
const POD_NET_PER_SEC: (u64, u64) = (1_200, 600);
/// Bytes the node receives and sends each second, beyond its pods.
const NODE_NET_PER_SEC: (u64, u64) = (3_000, 1_500);
/// The kubelet daemon: nanocores and working set.
const KUBELET: (u64, u64) = (20_000_000, 48 * MIB);
/// The container runtime daemon.
const RUNTIME: (u64, u64) = (10_000_000, 40 * MIB);
/// The rest of the operating system.
const OS: (u64, u64) = (10_000_000, 200 * MIB);
/// The node's page cache, beyond the working sets.
const PAGE_CACHE: u64 = 1024 * MIB;
/// The base system on the node's filesystem: bytes and inodes.
const BASE_SYSTEM: (u64, u64) = (5 << 30, 250_000);
/// Bytes per inode of the node's filesystem.
const BYTES_PER_INODE: u64 = 16_384;
/// Inodes of one image's layers.
const IMAGE_INODES: u64 = 2_000;
/// The kernel's `pid_max`.
pub const MAX_PID: i64 = 4_194_304;
/// Processes outside pods.
const SYSTEM_PROCESSES: i64 = 180;

/// CPU use: the current rate and the cumulative time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cpu {
    /// Cores in use, in billionths.
    pub nano_cores: u64,
    /// Core-nanoseconds used since the start.
    pub core_nanos: u64,
}

impl Cpu {
    fn running(nano_cores: u64, since: jiff::Timestamp, now: jiff::Timestamp) -> Cpu {
        let elapsed = podutil::until(now, since).as_nanos();
        let used = u128::from(nano_cores) * elapsed / 1_000_000_000;
        Cpu {
            nano_cores,
            core_nanos: u64::try_from(used).unwrap_or(u64::MAX),
        }
    }

    fn add(&mut self, other: Cpu) {
        self.nano_cores = self.nano_cores.saturating_add(other.nano_cores);
        self.core_nanos = self.core_nanos.saturating_add(other.core_nanos);
    }
}

/// Memory use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// The working set.
    pub working_set: u64,
    /// All memory charged, page cache included.
    pub usage: u64,
    /// Anonymous memory.
    pub rss: u64,
    /// Minor page faults so far.
    pub page_faults: u64,
    /// The limit, when there is one.
    pub limit: Option<u64>,
}

impl Memory {
    fn of_working_set(working_set: u64, limit: Option<u64>) -> Memory {
        let usage = working_set + working_set / 8;
        Memory {
            working_set,
            usage,
            rss: working_set / 4 * 3,
            page_faults: usage / 4096,
            limit,
        }
    }

    fn add(&mut self, other: &Memory) {
        self.working_set = self.working_set.saturating_add(other.working_set);
        self.usage = self.usage.saturating_add(other.usage);
        self.rss = self.rss.saturating_add(other.rss);
        self.page_faults = self.page_faults.saturating_add(other.page_faults);
    }

    /// Memory left under the limit.
    pub fn available(&self) -> Option<u64> {
        self.limit.map(|l| l.saturating_sub(self.working_set))
    }
}

/// Bytes received and sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Network {
    /// Bytes received.
    pub rx: u64,
    /// Bytes sent.
    pub tx: u64,
}

/// One running container.
#[derive(Debug, Clone)]
pub struct ContainerUsage {
    /// The container's name.
    pub name: String,
    /// When this instance started.
    pub start: jiff::Timestamp,
    /// CPU.
    pub cpu: Cpu,
    /// Memory.
    pub memory: Memory,
    /// Bytes of its log file.
    pub log_bytes: u64,
}

/// One volume of a pod that the kubelet measures.
#[derive(Debug, Clone)]
pub struct VolumeUsage {
    /// The volume's name.
    pub name: String,
    /// Bytes used.
    pub used: u64,
    /// Inodes used.
    pub inodes: u64,
    /// Whether it counts as the pod's ephemeral storage.
    pub ephemeral: bool,
}

/// One pod with a start time.
#[derive(Debug, Clone)]
pub struct PodUsage {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
    /// `status.startTime`.
    pub start: jiff::Timestamp,
    /// Its running containers.
    pub containers: Vec<ContainerUsage>,
    /// The pod's CPU (its containers').
    pub cpu: Cpu,
    /// The pod's memory (its containers').
    pub memory: Memory,
    /// Its network interface.
    pub network: Network,
    /// Its measured volumes.
    pub volumes: Vec<VolumeUsage>,
    /// Processes: one per running container, and the sandbox's.
    pub processes: u64,
}

impl PodUsage {
    /// Bytes and inodes of its ephemeral storage: writable layers, logs
    /// and ephemeral volumes.
    pub fn ephemeral(&self) -> (u64, u64) {
        let mut used = 0u64;
        let mut inodes = 0u64;
        for c in &self.containers {
            used = used.saturating_add(ROOTFS_BYTES + c.log_bytes);
            inodes = inodes.saturating_add(ROOTFS_INODES + LOG_INODES);
        }
        for v in self.volumes.iter().filter(|v| v.ephemeral) {
            used = used.saturating_add(v.used);
            inodes = inodes.saturating_add(v.inodes);
        }
        (used, inodes)
    }
}

/// A filesystem's size and use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filesystem {
    /// Capacity in bytes.
    pub capacity: u64,
    /// Bytes used on it.
    pub used: u64,
    /// Its inodes.
    pub inodes: u64,
    /// Inodes used.
    pub inodes_used: u64,
}

impl Filesystem {
    /// Bytes free.
    pub fn available(&self) -> u64 {
        self.capacity.saturating_sub(self.used)
    }

    /// Inodes free.
    pub fn inodes_free(&self) -> u64 {
        self.inodes.saturating_sub(self.inodes_used)
    }
}

/// One system container (`kubelet`, `runtime`, `pods`).
#[derive(Debug, Clone)]
pub struct SystemContainer {
    /// Its name in the summary.
    pub name: &'static str,
    /// CPU.
    pub cpu: Cpu,
    /// Memory.
    pub memory: Memory,
}

/// A node and its pods, at one instant.
#[derive(Debug, Clone)]
pub struct NodeUsage {
    /// The node's name.
    pub node_name: String,
    /// When the numbers were taken.
    pub now: jiff::Timestamp,
    /// When the node (and its kubelet) started: its creation.
    pub start: jiff::Timestamp,
    /// The whole node's CPU.
    pub cpu: Cpu,
    /// The whole node's memory (limit: its capacity).
    pub memory: Memory,
    /// Its network interface.
    pub network: Network,
    /// Its root filesystem.
    pub fs: Filesystem,
    /// Bytes and inodes of the images on it.
    pub images: (u64, u64),
    /// Processes running.
    pub processes: i64,
    /// `kubelet`, `runtime` and `pods`.
    pub system: Vec<SystemContainer>,
    /// Pods with a start time and not finished, by namespace and name.
    pub pods: Vec<PodUsage>,
}

fn quantity(v: &Value, pointer: &str) -> Option<Quantity> {
    podutil::at(v, pointer)
        .and_then(Value::as_str)
        .and_then(Quantity::parse)
}

fn bytes(q: &Quantity) -> u64 {
    u64::try_from(q.value()).unwrap_or(0)
}

fn time_at(v: &Value, pointer: &str) -> Option<jiff::Timestamp> {
    podutil::at(v, pointer)
        .and_then(Value::as_str)
        .and_then(podutil::parse_time)
}

/// What a running container uses: rate and working set, from its resources.
fn container_rates(spec: &Value) -> (u64, u64, Option<u64>) {
    let first = |a: &str, b: &str| quantity(spec, a).or_else(|| quantity(spec, b));
    let nano_cores = first("/resources/requests/cpu", "/resources/limits/cpu")
        .map(|q| u64::try_from(q.milli_value()).unwrap_or(0) * 100_000)
        .unwrap_or(DEFAULT_NANO_CORES);
    let working_set = first("/resources/requests/memory", "/resources/limits/memory")
        .map(|q| bytes(&q) / 2)
        .unwrap_or(DEFAULT_WORKING_SET);
    let limit = quantity(spec, "/resources/limits/memory").map(|q| bytes(&q));
    (nano_cores, working_set, limit)
}

/// The bytes of a container instance's log file, as the CRI writes it
/// (`<RFC 3339 time> stdout F <line>`).
fn log_bytes(pod: &Value, spec: &Value, init: bool, started_at: jiff::Timestamp) -> u64 {
    let instance = Instance {
        started_at,
        finished: None,
    };
    simulation::instance_log(pod, spec, init, &instance)
        .iter()
        .map(|l| (l.time.to_string().len() + " stdout F \n".len() + l.text.len()) as u64)
        .sum()
}

/// The running containers of a pod (sidecars included), in status order.
fn running_containers(pod: &Value, now: jiff::Timestamp) -> Vec<ContainerUsage> {
    let mut out = Vec::new();
    for (statuses, specs, init) in [
        (
            "/status/initContainerStatuses",
            "/spec/initContainers",
            true,
        ),
        ("/status/containerStatuses", "/spec/containers", false),
    ] {
        let specs = podutil::at(pod, specs)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for status in podutil::at(pod, statuses)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(started_at) = time_at(status, "/state/running/startedAt") else {
                continue;
            };
            let name = podutil::str_at(status, "/name");
            let Some(spec) = specs.iter().find(|s| podutil::str_at(s, "/name") == name) else {
                continue;
            };
            let (nano_cores, working_set, limit) = container_rates(spec);
            out.push(ContainerUsage {
                name: name.to_string(),
                start: started_at,
                cpu: Cpu::running(nano_cores, started_at, now),
                memory: Memory::of_working_set(working_set, limit),
                log_bytes: log_bytes(pod, spec, init, started_at),
            });
        }
    }
    out
}

/// The volumes the kubelet measures (those whose plugins report metrics).
fn volumes(pod: &Value) -> Vec<VolumeUsage> {
    let mut out = Vec::new();
    for v in podutil::at(pod, "/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = podutil::str_at(v, "/name").to_string();
        let (size, ephemeral) = if let Some(dir) = v.get("emptyDir") {
            let memory = podutil::str_at(dir, "/medium") == "Memory";
            (EMPTY_DIR, !memory)
        } else if v.get("configMap").is_some() {
            (FILES_VOLUME, true)
        } else if ["secret", "projected", "downwardAPI"]
            .iter()
            .any(|k| v.get(*k).is_some())
        {
            (FILES_VOLUME, false)
        } else {
            continue;
        };
        out.push(VolumeUsage {
            name,
            used: size.0,
            inodes: size.1,
            ephemeral,
        });
    }
    out
}

fn pod_usage(pod: &Value, now: jiff::Timestamp) -> Option<PodUsage> {
    if podutil::is_terminal(pod) {
        return None;
    }
    let start = time_at(pod, "/status/startTime")?;
    let containers = running_containers(pod, now);
    let mut cpu = Cpu::default();
    let mut memory = Memory::default();
    let mut limits = Some(0u64);
    for c in &containers {
        cpu.add(c.cpu);
        memory.add(&c.memory);
        limits = limits.zip(c.memory.limit).map(|(a, b)| a.saturating_add(b));
    }
    memory.limit = limits.filter(|_| !containers.is_empty());
    let up = podutil::until(now, start).as_secs();
    Some(PodUsage {
        name: object::name(pod).to_string(),
        namespace: object::namespace(pod).to_string(),
        uid: object::uid(pod).to_string(),
        start,
        processes: containers.len() as u64 + 1,
        containers,
        cpu,
        memory,
        network: Network {
            rx: up.saturating_mul(POD_NET_PER_SEC.0),
            tx: up.saturating_mul(POD_NET_PER_SEC.1),
        },
        volumes: volumes(pod),
    })
}

/// Bytes and inodes of the images the node's pods' containers run from.
fn images(pods: &[Arc<Value>]) -> (u64, u64) {
    let mut seen = std::collections::BTreeSet::new();
    for pod in pods {
        for key in ["/status/initContainerStatuses", "/status/containerStatuses"] {
            for cs in podutil::at(pod, key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let image = podutil::str_at(cs, "/image");
                if !podutil::str_at(cs, "/imageID").is_empty() && !image.is_empty() {
                    seen.insert(simulation::qualified_image(image));
                }
            }
        }
    }
    let size = seen.iter().map(|i| simulation::image_size(i)).sum();
    (size, seen.len() as u64 * IMAGE_INODES)
}

/// The usage of `node` and the pods bound to it, at `now`.
pub fn node_usage(node: &Value, pods: &[Arc<Value>], now: jiff::Timestamp) -> NodeUsage {
    let start = time_at(node, "/metadata/creationTimestamp").unwrap_or(now);
    let up = podutil::until(now, start);
    let mut usage: Vec<PodUsage> = pods.iter().filter_map(|p| pod_usage(p, now)).collect();
    usage.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));

    let capacity = |r: &str| {
        quantity(node, &format!("/status/capacity/{r}"))
            .map(|q| bytes(&q))
            .unwrap_or(0)
    };
    let allocatable = quantity(node, "/status/allocatable/memory").map(|q| bytes(&q));
    let daemon = |(nano_cores, working_set): (u64, u64)| {
        (
            Cpu::running(nano_cores, start, now),
            Memory::of_working_set(working_set, None),
        )
    };
    let mut pods_cpu = Cpu::default();
    let mut pods_memory = Memory {
        limit: allocatable,
        ..Memory::default()
    };
    let mut network = Network {
        rx: up.as_secs().saturating_mul(NODE_NET_PER_SEC.0),
        tx: up.as_secs().saturating_mul(NODE_NET_PER_SEC.1),
    };
    let mut ephemeral = (0u64, 0u64);
    let mut processes = SYSTEM_PROCESSES;
    for p in &usage {
        pods_cpu.add(p.cpu);
        pods_memory.add(&p.memory);
        network.rx = network.rx.saturating_add(p.network.rx);
        network.tx = network.tx.saturating_add(p.network.tx);
        let (used, inodes) = p.ephemeral();
        ephemeral = (ephemeral.0 + used, ephemeral.1 + inodes);
        processes += p.processes as i64;
    }
    let (kubelet_cpu, kubelet_memory) = daemon(KUBELET);
    let (runtime_cpu, runtime_memory) = daemon(RUNTIME);
    let (os_cpu, os_memory) = daemon(OS);
    let mut cpu = pods_cpu;
    let mut memory = Memory {
        limit: Some(capacity("memory")),
        ..pods_memory
    };
    for (c, m) in [
        (kubelet_cpu, kubelet_memory),
        (runtime_cpu, runtime_memory),
        (os_cpu, os_memory),
    ] {
        cpu.add(c);
        memory.add(&m);
    }
    memory.usage = memory.usage.saturating_add(PAGE_CACHE);
    memory.page_faults = memory.usage / 4096;
    let images = images(pods);
    let disk = capacity("ephemeral-storage");
    let fs = Filesystem {
        capacity: disk,
        used: BASE_SYSTEM.0 + images.0 + ephemeral.0,
        inodes: disk / BYTES_PER_INODE,
        inodes_used: BASE_SYSTEM.1 + images.1 + ephemeral.1,
    };
    NodeUsage {
        node_name: object::name(node).to_string(),
        now,
        start,
        cpu,
        memory,
        network,
        fs,
        images,
        processes,
        system: vec![
            SystemContainer {
                name: "kubelet",
                cpu: kubelet_cpu,
                memory: kubelet_memory,
            },
            SystemContainer {
                name: "runtime",
                cpu: runtime_cpu,
                memory: runtime_memory,
            },
            SystemContainer {
                name: "pods",
                cpu: pods_cpu,
                memory: pods_memory,
            },
        ],
        pods: usage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> jiff::Timestamp {
        podutil::parse_time(s).expect("time")
    }

    #[test]
    fn node_totals_are_pods_plus_system_daemons() {
        let node = json!({
            "metadata": {"name": "n", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "status": {"capacity": {"memory": "16Gi", "ephemeral-storage": "100Gi"},
                       "allocatable": {"memory": "16Gi"}},
        });
        let pod = Arc::new(json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"nodeName": "n", "containers": [
                {"name": "a", "image": "nginx", "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}},
                {"name": "b", "image": "nginx"},
            ], "volumes": [{"name": "cache", "emptyDir": {}}, {"name": "h", "hostPath": {"path": "/"}}]},
            "status": {"phase": "Running", "startTime": "2025-01-01T00:01:00Z", "containerStatuses": [
                {"name": "a", "image": "docker.io/library/nginx:latest", "imageID": "x", "state": {"running": {"startedAt": "2025-01-01T00:01:00Z"}}},
                {"name": "b", "image": "docker.io/library/nginx:latest", "imageID": "x", "state": {"running": {"startedAt": "2025-01-01T00:01:40Z"}}},
            ]},
        }));
        let now = at("2025-01-01T00:02:00Z");
        let u = node_usage(&node, &[pod], now);
        let p = &u.pods[0];
        assert_eq!(p.containers.len(), 2);
        // 200m / 10 for 60 s; 1m for 20 s.
        assert_eq!(p.containers[0].cpu.nano_cores, 20_000_000);
        assert_eq!(p.containers[0].cpu.core_nanos, 1_200_000_000);
        assert_eq!(p.containers[1].cpu.core_nanos, 20_000_000);
        assert_eq!(p.containers[0].memory.working_set, 32 * MIB);
        assert_eq!(p.containers[0].memory.available(), Some(96 * MIB));
        assert_eq!(p.memory.limit, None, "one container has no limit");
        assert_eq!(p.cpu.nano_cores, 21_000_000);
        assert_eq!(p.volumes.len(), 1);
        let system: u64 = KUBELET.0 + RUNTIME.0 + OS.0;
        assert_eq!(u.cpu.nano_cores, p.cpu.nano_cores + system);
        assert_eq!(
            u.memory.working_set,
            p.memory.working_set + KUBELET.1 + RUNTIME.1 + OS.1
        );
        assert_eq!(u.system[2].cpu, p.cpu);
        assert_eq!(
            u.memory.available(),
            Some((16 << 30) - u.memory.working_set)
        );
        assert_eq!(u.images.0, simulation::image_size("nginx"));
        assert_eq!(u.fs.inodes, 6_553_600);
        assert_eq!(u.processes, SYSTEM_PROCESSES + 3);
    }
}
