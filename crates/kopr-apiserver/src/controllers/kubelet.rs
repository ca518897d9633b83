//! The simulated kubelet of every node carrying the
//! [`super::nodes::SIMULATED`] annotation. It runs no processes: it keeps,
//! for each pod bound to such a node, the state a kubelet and its container
//! runtime would have (image pulls, container instances, restarts and their
//! back-off) and posts the pod status and Events a kubelet posts, with the
//! kubelet's reasons and messages:
//!
//! - image pulls: `Pulling` / `Pulled` (`Container image "…" already present
//!   on machine` once a node has the image); a `:missing` tag fails with
//!   `ErrImagePull`, then waits in `ImagePullBackOff` (`Back-off pulling
//!   image "…"`), retried after 10 s, 20 s, … up to 300 s;
//! - containers: `Created` / `Started`; a container that exits is restarted
//!   according to the restart policy, immediately the first time and then
//!   after the kubelet's crash-loop back-off (10 s doubling to 300 s), with
//!   `CrashLoopBackOff` and `back-off 10s restarting failed container=C
//!   pod=P_NS(UID)`;
//! - pod status: phase, `PodReadyToStartContainers`, `Initialized`,
//!   `ContainersReady`, `Ready`, container statuses (state, lastState,
//!   ready, started, restartCount, image, imageID, containerID), pod IPs
//!   from the node's pod CIDR, host IP, start time;
//! - deletion: `Killing` (`Stopping container C`), containers stop (at once,
//!   or when the grace period ends for containers that ignore SIGTERM), the
//!   pod reaches a terminal phase and is deleted with a zero grace period.
//!
//! Work is driven by pod changes and by timers for real delays only (pulls,
//! run times, back-offs); an idle running pod costs nothing.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::informer::{Informer, Kind};
use super::nodes;
use super::podutil::{self, after, go_duration, rfc3339};
use super::recorder::{Recorder, Source};
use super::simulation::{self, Behavior};
use super::writes::{self, Part};
use crate::object;
use crate::registry::Api;
use crate::status::ApiError;

/// First crash-loop and image-pull back-off.
const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
/// Longest crash-loop and image-pull back-off.
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// How long after a failed pull the container shows `ImagePullBackOff`
/// rather than `ErrImagePull` (the kubelet's next pod sync).
const SHOW_PULL_BACKOFF: Duration = Duration::from_secs(2);

/// The conditions the kubelet owns.
const KUBELET_CONDITIONS: [&str; 4] = [
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
];

#[derive(Debug, Clone)]
struct Term {
    exit_code: i32,
    reason: &'static str,
    started_at: jiff::Timestamp,
    finished_at: jiff::Timestamp,
    container_id: String,
}

#[derive(Debug, Clone)]
enum CState {
    /// Not yet handled (waiting: ContainerCreating / PodInitializing).
    New,
    /// Pulling its image.
    Pulling { done_at: jiff::Timestamp },
    /// The pull failed; retried at `retry_at`.
    PullFailed {
        failed_at: jiff::Timestamp,
        message: String,
        backoff_shown: bool,
        retry_at: jiff::Timestamp,
    },
    /// The image is absent and the pull policy is Never.
    NeverPull { message: String },
    /// Running.
    Running {
        started_at: jiff::Timestamp,
        ready_at: Option<jiff::Timestamp>,
        exit_at: Option<(jiff::Timestamp, i32)>,
    },
    /// Exited (for good, or until it is restarted).
    Exited(Term),
    /// Exited and waiting for the crash-loop back-off to end.
    CrashBackOff {
        term: Term,
        until: jiff::Timestamp,
        delay: Duration,
        message: String,
    },
}

#[derive(Debug, Clone)]
struct Ctr {
    name: String,
    image: String,
    pull_policy: String,
    behavior: Behavior,
    sidecar: bool,
    init: bool,
    ignores_sigterm: bool,
    ready_delay: Option<Duration>,
    state: CState,
    restart_count: i64,
    last_term: Option<Term>,
    created: bool,
    container_id: String,
    ready: bool,
    crash_backoff: Option<(Duration, jiff::Timestamp)>,
    pull_backoff: Option<(Duration, jiff::Timestamp)>,
}

struct Ev {
    path: Option<String>,
    warning: bool,
    reason: &'static str,
    message: String,
}

fn earliest(a: Option<jiff::Timestamp>, b: Option<jiff::Timestamp>) -> Option<jiff::Timestamp> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn next_backoff(
    current: Option<(Duration, jiff::Timestamp)>,
    at: jiff::Timestamp,
) -> (Duration, jiff::Timestamp) {
    match current {
        Some((d, last)) if !expired(last, at) => ((d * 2).min(BACKOFF_MAX), at),
        _ => (BACKOFF_INITIAL, at),
    }
}

/// A back-off entry is forgotten after twice the maximum back-off.
fn expired(last: jiff::Timestamp, at: jiff::Timestamp) -> bool {
    podutil::until(at, last) > BACKOFF_MAX * 2
}

impl Ctr {
    fn from_spec(pod: &Value, spec: &Value, init: bool) -> Ctr {
        let s = |k: &str| {
            spec.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let sidecar = init && s("restartPolicy") == "Always";
        let ready_delay = spec
            .get("readinessProbe")
            .filter(|p| p.is_object())
            .map(|p| {
                Duration::from_secs(
                    p.get("initialDelaySeconds")
                        .and_then(Value::as_i64)
                        .unwrap_or(0)
                        .max(0) as u64,
                )
            });
        Ctr {
            name: s("name"),
            image: s("image"),
            pull_policy: s("imagePullPolicy"),
            behavior: simulation::behavior(pod, spec, init),
            sidecar,
            init,
            ignores_sigterm: simulation::ignores_sigterm(spec),
            ready_delay,
            state: CState::New,
            restart_count: 0,
            last_term: None,
            created: false,
            container_id: String::new(),
            ready: false,
            crash_backoff: None,
            pull_backoff: None,
        }
    }

    /// Picks up where a status left off (after a restart of the server).
    fn adopt(&mut self, status: &Value) {
        let time = |v: &Value, k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .and_then(podutil::parse_time)
                .unwrap_or_else(podutil::now)
        };
        let term_of = |t: &Value| Term {
            exit_code: t.get("exitCode").and_then(Value::as_i64).unwrap_or(0) as i32,
            reason: if t.get("exitCode").and_then(Value::as_i64).unwrap_or(0) == 0 {
                "Completed"
            } else {
                "Error"
            },
            started_at: time(t, "startedAt"),
            finished_at: time(t, "finishedAt"),
            container_id: t
                .get("containerID")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        };
        self.restart_count = status
            .get("restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        self.last_term = status.pointer("/lastState/terminated").map(term_of);
        self.container_id = status
            .get("containerID")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        self.created = !self.container_id.is_empty();
        if let Some(r) = status.pointer("/state/running") {
            let started_at = time(r, "startedAt");
            self.ready = status.get("ready").and_then(Value::as_bool) == Some(true);
            let exit_at = match self.behavior {
                Behavior::Exit { after: d, code } => Some((after(started_at, d), code)),
                Behavior::Serve => None,
            };
            let ready_at =
                (!self.ready).then(|| after(started_at, self.ready_delay.unwrap_or_default()));
            self.state = CState::Running {
                started_at,
                ready_at,
                exit_at,
            };
        } else if let Some(t) = status.pointer("/state/terminated") {
            self.state = CState::Exited(term_of(t));
        } else if let Some(last) = self.last_term.clone() {
            self.state = CState::Exited(last);
        }
    }

    fn is_running(&self) -> bool {
        matches!(self.state, CState::Running { .. })
    }

    fn succeeded(&self) -> bool {
        matches!(&self.state, CState::Exited(t) if t.exit_code == 0)
    }

    fn path(&self) -> String {
        if self.init {
            format!("spec.initContainers{{{}}}", self.name)
        } else {
            format!("spec.containers{{{}}}", self.name)
        }
    }

    fn ev(&self, evs: &mut Vec<Ev>, warning: bool, reason: &'static str, message: String) {
        evs.push(Ev {
            path: Some(self.path()),
            warning,
            reason,
            message,
        });
    }

    fn start(&mut self, at: jiff::Timestamp, evs: &mut Vec<Ev>) {
        if self.created {
            self.restart_count += 1;
        }
        self.created = true;
        self.container_id = format!("containerd://{}", podutil::random_hex(64));
        self.ev(
            evs,
            false,
            "Created",
            format!("Created container: {}", self.name),
        );
        self.ev(
            evs,
            false,
            "Started",
            format!("Started container {}", self.name),
        );
        let ready_at = match self.ready_delay {
            Some(d) if !d.is_zero() => {
                self.ready = false;
                Some(after(at, d))
            }
            _ => {
                self.ready = true;
                None
            }
        };
        let exit_at = match self.behavior {
            Behavior::Exit { after: d, code } => Some((after(at, d), code)),
            Behavior::Serve => None,
        };
        self.state = CState::Running {
            started_at: at,
            ready_at,
            exit_at,
        };
    }

    /// Starts pulling the image (`reference`, with its default tag) at `now`.
    fn begin_pull(&mut self, reference: &str, now: jiff::Timestamp, evs: &mut Vec<Ev>) {
        self.ev(
            evs,
            false,
            "Pulling",
            format!("Pulling image \"{reference}\""),
        );
        self.state = CState::Pulling {
            done_at: after(now, simulation::PULL_TIME),
        };
    }

    /// Advances the container to `now`; returns when it next changes.
    fn step(
        &mut self,
        restart_policy: &str,
        images: &mut HashSet<String>,
        now: jiff::Timestamp,
        pod_ref: &str,
        evs: &mut Vec<Ev>,
    ) -> Option<jiff::Timestamp> {
        let reference = simulation::with_default_tag(&self.image);
        for _ in 0..64 {
            match self.state.clone() {
                CState::New => {
                    let qualified = simulation::qualified_image(&self.image);
                    let present = images.contains(&qualified);
                    if self.pull_policy == "Never" && !present {
                        let message = format!(
                            "Container image \"{reference}\" is not present with pull policy of Never"
                        );
                        self.ev(evs, true, "ErrImageNeverPull", message.clone());
                        self.state = CState::NeverPull { message };
                        return None;
                    }
                    if self.pull_policy != "Always" && present {
                        self.ev(
                            evs,
                            false,
                            "Pulled",
                            format!("Container image \"{reference}\" already present on machine"),
                        );
                        self.start(now, evs);
                        continue;
                    }
                    self.begin_pull(&reference, now, evs);
                }
                CState::Pulling { done_at } => {
                    if now < done_at {
                        return Some(done_at);
                    }
                    if simulation::image_missing(&self.image) {
                        let message = simulation::pull_error(&self.image);
                        self.ev(
                            evs,
                            true,
                            "Failed",
                            format!("Failed to pull image \"{reference}\": {message}"),
                        );
                        self.ev(evs, true, "Failed", "Error: ErrImagePull".into());
                        let backoff = next_backoff(self.pull_backoff, done_at);
                        self.pull_backoff = Some(backoff);
                        self.state = CState::PullFailed {
                            failed_at: done_at,
                            message,
                            backoff_shown: false,
                            retry_at: after(done_at, backoff.0),
                        };
                        continue;
                    }
                    images.insert(simulation::qualified_image(&self.image));
                    let took = go_duration(simulation::PULL_TIME);
                    self.ev(
                        evs,
                        false,
                        "Pulled",
                        format!(
                            "Successfully pulled image \"{reference}\" in {took} ({took} including waiting). Image size: {} bytes.",
                            simulation::image_size(&self.image)
                        ),
                    );
                    self.start(done_at, evs);
                }
                CState::PullFailed {
                    failed_at,
                    message,
                    backoff_shown,
                    retry_at,
                } => {
                    if now >= retry_at {
                        self.begin_pull(&reference, now, evs);
                        continue;
                    }
                    let show_at = after(failed_at, SHOW_PULL_BACKOFF);
                    if backoff_shown {
                        return Some(retry_at);
                    }
                    if now < show_at {
                        return Some(show_at.min(retry_at));
                    }
                    self.ev(
                        evs,
                        false,
                        "BackOff",
                        format!("Back-off pulling image \"{reference}\""),
                    );
                    self.ev(evs, true, "Failed", "Error: ImagePullBackOff".into());
                    self.state = CState::PullFailed {
                        failed_at,
                        message,
                        backoff_shown: true,
                        retry_at,
                    };
                    return Some(retry_at);
                }
                CState::NeverPull { .. } => return None,
                CState::Running {
                    started_at,
                    ready_at,
                    exit_at,
                } => {
                    let mut ready_at = ready_at;
                    if let Some(r) = ready_at
                        && now >= r
                    {
                        self.ready = true;
                        ready_at = None;
                        self.state = CState::Running {
                            started_at,
                            ready_at,
                            exit_at,
                        };
                    }
                    if let Some((t, code)) = exit_at
                        && now >= t
                    {
                        self.ready = false;
                        self.state = CState::Exited(Term {
                            exit_code: code,
                            reason: if code == 0 { "Completed" } else { "Error" },
                            started_at,
                            finished_at: t,
                            container_id: self.container_id.clone(),
                        });
                        continue;
                    }
                    return earliest(ready_at, exit_at.map(|(t, _)| t));
                }
                CState::Exited(term) => {
                    let restart = match restart_policy {
                        "Never" => false,
                        "OnFailure" => term.exit_code != 0,
                        _ => true,
                    };
                    if !restart {
                        return None;
                    }
                    match self.crash_backoff {
                        Some((delay, last)) if !expired(last, term.finished_at) => {
                            let until = after(term.finished_at, delay);
                            if now < until {
                                self.ev(
                                    evs,
                                    true,
                                    "BackOff",
                                    format!(
                                        "Back-off restarting failed container {} in pod {pod_ref}",
                                        self.name
                                    ),
                                );
                                let message = format!(
                                    "back-off {} restarting failed container={} pod={pod_ref}",
                                    go_duration(delay),
                                    self.name
                                );
                                self.state = CState::CrashBackOff {
                                    term,
                                    until,
                                    delay,
                                    message,
                                };
                                return Some(until);
                            }
                            self.crash_backoff =
                                Some(((delay * 2).min(BACKOFF_MAX), term.finished_at));
                        }
                        _ => self.crash_backoff = Some((BACKOFF_INITIAL, term.finished_at)),
                    }
                    self.last_term = Some(term);
                    self.state = CState::New;
                }
                CState::CrashBackOff {
                    term, until, delay, ..
                } => {
                    if now < until {
                        return Some(until);
                    }
                    self.crash_backoff = Some(((delay * 2).min(BACKOFF_MAX), term.finished_at));
                    self.last_term = Some(term);
                    self.state = CState::New;
                }
            }
        }
        None
    }

    /// Stops a running container when its pod is killed.
    fn stop(&mut self, at: jiff::Timestamp) {
        match self.state.clone() {
            CState::Running { started_at, .. } => {
                let (exit_code, reason) = match self.behavior {
                    _ if self.ignores_sigterm => (137, "Error"),
                    // A server exits cleanly on SIGTERM; a batch process dies of it.
                    Behavior::Serve => (0, "Completed"),
                    Behavior::Exit { .. } => (143, "Error"),
                };
                self.state = CState::Exited(Term {
                    exit_code,
                    reason,
                    started_at,
                    finished_at: at,
                    container_id: self.container_id.clone(),
                });
            }
            CState::CrashBackOff { term, .. } => self.state = CState::Exited(term),
            _ => {}
        }
        self.ready = false;
    }

    fn term_json(t: &Term) -> Value {
        json!({"terminated": {
            "exitCode": t.exit_code,
            "reason": t.reason,
            "startedAt": rfc3339(t.started_at),
            "finishedAt": rfc3339(t.finished_at),
            "containerID": t.container_id,
        }})
    }

    /// The container's status; a container not yet started waits with
    /// `PodInitializing` in a pod with init containers, else
    /// `ContainerCreating`, as the kubelet reports it.
    fn status(&self, pod_has_init: bool) -> Value {
        let reference = simulation::with_default_tag(&self.image);
        let waiting = |reason: &str, message: Option<&str>| {
            let mut w = json!({"reason": reason});
            if let Some(m) = message {
                w["message"] = json!(m);
            }
            json!({"waiting": w})
        };
        let state = match &self.state {
            CState::New | CState::Pulling { .. } => {
                if pod_has_init {
                    waiting("PodInitializing", None)
                } else {
                    waiting("ContainerCreating", None)
                }
            }
            CState::PullFailed {
                message,
                backoff_shown,
                ..
            } => {
                if *backoff_shown {
                    waiting(
                        "ImagePullBackOff",
                        Some(&format!("Back-off pulling image \"{reference}\"")),
                    )
                } else {
                    waiting("ErrImagePull", Some(message))
                }
            }
            CState::NeverPull { message } => waiting("ErrImageNeverPull", Some(message)),
            CState::Running { started_at, .. } => {
                json!({"running": {"startedAt": rfc3339(*started_at)}})
            }
            CState::Exited(t) => Self::term_json(t),
            CState::CrashBackOff { message, .. } => waiting("CrashLoopBackOff", Some(message)),
        };
        let last = match &self.state {
            CState::CrashBackOff { term, .. } => Some(Self::term_json(term)),
            _ => self.last_term.as_ref().map(Self::term_json),
        };
        let mut s = json!({
            "name": self.name,
            "state": state,
            "lastState": last.unwrap_or_else(|| json!({})),
            "ready": self.ready && (!self.init || self.sidecar) && self.is_running(),
            "restartCount": self.restart_count,
            "image": if self.created { simulation::qualified_image(&self.image) } else { self.image.clone() },
            "imageID": if self.created { simulation::image_id(&self.image) } else { String::new() },
            "started": self.is_running(),
        });
        if self.created {
            s["containerID"] = json!(self.container_id);
        }
        s
    }
}

/// The simulated kubelet's view of one pod.
struct PodRt {
    uid: String,
    node: String,
    ip: Option<String>,
    host_network: bool,
    start_time: Option<jiff::Timestamp>,
    sandbox: bool,
    init: Vec<Ctr>,
    main: Vec<Ctr>,
    killing: Option<jiff::Timestamp>,
    terminal: bool,
    conditions: HashMap<&'static str, (bool, jiff::Timestamp)>,
    last_written: Option<Value>,
}

impl PodRt {
    fn new(pod: &Value) -> PodRt {
        let list = |k: &str, init: bool| -> Vec<Ctr> {
            pod.pointer(&format!("/spec/{k}"))
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|c| Ctr::from_spec(pod, c, init)).collect())
                .unwrap_or_default()
        };
        let mut rt = PodRt {
            uid: object::uid(pod).to_string(),
            node: podutil::str_at(pod, "/spec/nodeName").to_string(),
            ip: None,
            host_network: pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true),
            start_time: None,
            sandbox: false,
            init: list("initContainers", true),
            main: list("containers", false),
            killing: None,
            terminal: false,
            conditions: HashMap::new(),
            last_written: None,
        };
        rt.adopt(pod);
        rt
    }

    /// Takes over a status written earlier (by a previous server run).
    fn adopt(&mut self, pod: &Value) {
        let Some(status) = pod.get("status") else {
            return;
        };
        if let Some(ip) = status.get("podIP").and_then(Value::as_str) {
            self.ip = Some(ip.to_string());
            self.sandbox = true;
        }
        self.start_time = status
            .get("startTime")
            .and_then(Value::as_str)
            .and_then(podutil::parse_time);
        for (key, ctrs) in [
            ("initContainerStatuses", &mut self.init),
            ("containerStatuses", &mut self.main),
        ] {
            for cs in status
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = cs.get("name").and_then(Value::as_str).unwrap_or("");
                if let Some(c) = ctrs.iter_mut().find(|c| c.name == name) {
                    c.adopt(cs);
                }
            }
        }
        if podutil::is_terminal(pod) {
            self.terminal = true;
        }
    }

    fn all(&mut self) -> impl Iterator<Item = &mut Ctr> {
        self.init.iter_mut().chain(self.main.iter_mut())
    }

    fn init_done(&self) -> bool {
        self.init.iter().all(|c| {
            if c.sidecar {
                c.is_running() || c.created
            } else {
                c.succeeded()
            }
        })
    }

    fn phase(&self, restart_policy: &str) -> &'static str {
        for c in &self.init {
            if c.sidecar {
                if !c.created {
                    return "Pending";
                }
                continue;
            }
            match &c.state {
                CState::Exited(t) if t.exit_code == 0 => {}
                CState::Exited(_) if restart_policy == "Never" => return "Failed",
                _ => return "Pending",
            }
        }
        let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
        for c in &self.main {
            match &c.state {
                CState::Running { .. } => running += 1,
                CState::Exited(t) => {
                    stopped += 1;
                    if t.exit_code == 0 {
                        succeeded += 1;
                    }
                }
                CState::CrashBackOff { .. } => stopped += 1,
                _ if c.last_term.is_some() => stopped += 1,
                _ => waiting += 1,
            }
        }
        if self.killing.is_some() && self.terminal {
            return if stopped == self.main.len() && succeeded == stopped {
                "Succeeded"
            } else {
                "Failed"
            };
        }
        if waiting > 0 {
            return "Pending";
        }
        if running > 0 {
            return "Running";
        }
        if stopped > 0 {
            return match restart_policy {
                "Never" if stopped == succeeded => "Succeeded",
                "Never" => "Failed",
                "OnFailure" if stopped == succeeded => "Succeeded",
                _ => "Running",
            };
        }
        "Pending"
    }

    /// Advances the pod to `now`; returns when it next changes.
    fn advance(
        &mut self,
        pod: &Value,
        node: &mut NodeRt,
        now: jiff::Timestamp,
        evs: &mut Vec<Ev>,
    ) -> Option<jiff::Timestamp> {
        if self.terminal {
            return None;
        }
        let restart_policy = match podutil::str_at(pod, "/spec/restartPolicy") {
            "" => "Always",
            p => p,
        }
        .to_string();
        if object::is_deleting(pod) {
            return self.kill(pod, node, now, evs);
        }
        if !self.sandbox {
            self.sandbox = true;
            if self.ip.is_none() {
                self.ip = if self.host_network {
                    Some(node.host_ip.clone())
                } else {
                    node.allocate()
                };
            }
        }
        self.start_time.get_or_insert(now);
        let pod_ref = format!(
            "{}_{}({})",
            object::name(pod),
            object::namespace(pod),
            self.uid
        );
        let mut wake = None;
        let mut init_done = true;
        for c in &mut self.init {
            // Init containers are restarted only when they fail.
            let policy = if c.sidecar {
                "Always"
            } else if restart_policy == "Never" {
                "Never"
            } else {
                "OnFailure"
            };
            wake = earliest(wake, c.step(policy, &mut node.images, now, &pod_ref, evs));
            let ok = if c.sidecar {
                c.is_running()
            } else {
                c.succeeded()
            };
            if !ok {
                init_done = false;
                break;
            }
        }
        if init_done {
            for c in &mut self.main {
                wake = earliest(
                    wake,
                    c.step(&restart_policy, &mut node.images, now, &pod_ref, evs),
                );
            }
        }
        if matches!(self.phase(&restart_policy), "Succeeded" | "Failed") {
            for c in self.init.iter_mut().filter(|c| c.sidecar) {
                c.stop(now);
            }
            self.terminal = true;
            node.release(self.ip.as_deref(), self.host_network);
            return None;
        }
        wake
    }

    fn kill(
        &mut self,
        pod: &Value,
        node: &mut NodeRt,
        now: jiff::Timestamp,
        evs: &mut Vec<Ev>,
    ) -> Option<jiff::Timestamp> {
        let stop_at = match self.killing {
            Some(t) => t,
            None => {
                let grace = object::meta(pod)
                    .and_then(|m| m.get("deletionGracePeriodSeconds"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    .max(0) as u64;
                let mut stop_at = now;
                for c in self.all() {
                    if c.is_running() {
                        c.ev(
                            evs,
                            false,
                            "Killing",
                            format!("Stopping container {}", c.name),
                        );
                        if c.ignores_sigterm {
                            stop_at = stop_at.max(after(now, Duration::from_secs(grace)));
                        }
                    }
                }
                self.killing = Some(stop_at);
                stop_at
            }
        };
        if now < stop_at {
            return Some(stop_at);
        }
        for c in self.all() {
            c.stop(stop_at);
        }
        self.terminal = true;
        node.release(self.ip.as_deref(), self.host_network);
        None
    }

    fn condition(
        &mut self,
        ty: &'static str,
        ok: bool,
        now: jiff::Timestamp,
        reason: Option<&str>,
        message: Option<String>,
    ) -> Value {
        let since = match self.conditions.get(ty) {
            Some((was, since)) if *was == ok => *since,
            _ => {
                self.conditions.insert(ty, (ok, now));
                now
            }
        };
        let mut c = json!({
            "type": ty,
            "status": if ok { "True" } else { "False" },
            "lastProbeTime": null,
            "lastTransitionTime": rfc3339(since),
        });
        if let Some(r) = reason {
            c["reason"] = json!(r);
        }
        if let Some(m) = message {
            c["message"] = json!(m);
        }
        c
    }

    /// Seeds the condition transition times from a status written before.
    fn seed_conditions(&mut self, pod: &Value) {
        for c in podutil::conditions_of(pod) {
            let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
            let Some(k) = KUBELET_CONDITIONS.iter().find(|k| **k == ty) else {
                continue;
            };
            let ok = c.get("status").and_then(Value::as_str) == Some("True");
            let since = c
                .get("lastTransitionTime")
                .and_then(Value::as_str)
                .and_then(podutil::parse_time)
                .unwrap_or_else(podutil::now);
            self.conditions.insert(k, (ok, since));
        }
    }

    /// The status fields the kubelet owns.
    fn status(&mut self, pod: &Value, host_ip: &str, now: jiff::Timestamp) -> Value {
        let restart_policy = match podutil::str_at(pod, "/spec/restartPolicy") {
            "" => "Always".to_string(),
            p => p.to_string(),
        };
        let phase = self.phase(&restart_policy);
        let init_done = self.init_done();
        let mut conds = Vec::new();
        let sandbox_ready = self.sandbox && !self.terminal;
        conds.push(self.condition("PodReadyToStartContainers", sandbox_ready, now, None, None));
        if init_done {
            conds.push(self.condition("Initialized", true, now, None, None));
        } else {
            let pending: Vec<String> = self
                .init
                .iter()
                .filter(|c| !(c.succeeded() || (c.sidecar && c.is_running())))
                .map(|c| c.name.clone())
                .collect();
            conds.push(self.condition(
                "Initialized",
                false,
                now,
                Some("ContainersNotInitialized"),
                Some(format!(
                    "containers with incomplete status: [{}]",
                    pending.join(" ")
                )),
            ));
        }
        let mut unready: Vec<String> = self
            .main
            .iter()
            .filter(|c| !(c.ready && c.is_running()))
            .map(|c| c.name.clone())
            .collect();
        unready.sort();
        let all_ready = unready.is_empty() && !self.terminal;
        let (reason, message) = if all_ready {
            (None, None)
        } else if phase == "Succeeded" {
            (Some("PodCompleted"), None)
        } else {
            (
                Some("ContainersNotReady"),
                Some(format!(
                    "containers with unready status: [{}]",
                    unready.join(" ")
                )),
            )
        };
        conds.push(self.condition("Ready", all_ready, now, reason, message.clone()));
        conds.push(self.condition("ContainersReady", all_ready, now, reason, message));
        let has_init = !self.init.is_empty();
        let mut main: Vec<Value> = self.main.iter().map(|c| c.status(has_init)).collect();
        main.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        let init: Vec<Value> = self.init.iter().map(|c| c.status(has_init)).collect();
        let mut s = json!({
            "phase": phase,
            "conditions": conds,
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "containerStatuses": main,
        });
        if !init.is_empty() {
            s["initContainerStatuses"] = json!(init);
        }
        if let Some(ip) = &self.ip {
            s["podIP"] = json!(ip);
            s["podIPs"] = json!([{"ip": ip}]);
        }
        if let Some(t) = self.start_time {
            s["startTime"] = json!(rfc3339(t));
        }
        s
    }
}

/// The simulated runtime's view of one node: its images and pod IPs.
struct NodeRt {
    images: HashSet<String>,
    host_ip: String,
    base: Option<[u8; 3]>,
    used: HashSet<u8>,
    next: u8,
}

impl NodeRt {
    fn new(node: &Value, pods: &[Arc<Value>]) -> NodeRt {
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

    fn host_of(&self, ip: &str) -> Option<u8> {
        let base = self.base?;
        let addr: std::net::Ipv4Addr = ip.parse().ok()?;
        let o = addr.octets();
        (o[..3] == base).then_some(o[3])
    }

    fn reserve(&mut self, ip: &str) {
        if let Some(h) = self.host_of(ip) {
            self.used.insert(h);
        }
    }

    fn allocate(&mut self) -> Option<String> {
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

    fn release(&mut self, ip: Option<&str>, host_network: bool) {
        if host_network {
            return;
        }
        if let Some(h) = ip.and_then(|ip| self.host_of(ip)) {
            self.used.remove(&h);
        }
    }
}

#[derive(Default)]
struct State {
    pods: HashMap<String, PodRt>,
    nodes: HashMap<String, NodeRt>,
}

/// The simulated kubelet of all simulated nodes.
pub struct Kubelet {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    state: Mutex<State>,
}

/// What one sync decided, computed under the lock.
struct Plan {
    events: Vec<Ev>,
    wake: Option<jiff::Timestamp>,
    status: Option<Value>,
    delete: bool,
    uid: String,
    node: String,
}

impl Kubelet {
    /// A kubelet working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Kubelet> {
        Arc::new(Kubelet {
            api,
            informer,
            recorder,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Whether a pod is bound to a node this kubelet runs.
    pub fn runs(&self, pod: &Value) -> bool {
        let node = podutil::str_at(pod, "/spec/nodeName");
        !node.is_empty()
            && self
                .informer
                .get(Kind::Node, "", node)
                .is_some_and(|n| nodes::is_simulated(&n))
    }

    fn forget(&self, key: &str) {
        let mut st = self.lock();
        let State { pods, nodes } = &mut *st;
        if let Some(rt) = pods.remove(key)
            && let Some(n) = nodes.get_mut(&rt.node)
            && !rt.terminal
        {
            n.release(rt.ip.as_deref(), rt.host_network);
        }
    }

    fn plan(&self, key: &str, pod: &Value, node: &Value) -> Plan {
        let node_name = object::name(node).to_string();
        let host_ip = nodes::internal_ip(node).unwrap_or("").to_string();
        let uid = object::uid(pod).to_string();
        let now = podutil::now();
        let mut st = self.lock();
        let State {
            pods,
            nodes: node_rts,
        } = &mut *st;
        if !node_rts.contains_key(&node_name) {
            let all = self.informer.list(Kind::Pod, None);
            node_rts.insert(node_name.clone(), NodeRt::new(node, &all));
        }
        let stale = pods.get(key).is_some_and(|rt| rt.uid != uid);
        if stale
            && let Some(old) = pods.remove(key)
            && let Some(n) = node_rts.get_mut(&old.node)
            && !old.terminal
        {
            n.release(old.ip.as_deref(), old.host_network);
        }
        let Some(nrt) = node_rts.get_mut(&node_name) else {
            return Plan {
                events: Vec::new(),
                wake: None,
                status: None,
                delete: false,
                uid,
                node: node_name,
            };
        };
        let rt = pods.entry(key.to_string()).or_insert_with(|| {
            let mut rt = PodRt::new(pod);
            rt.seed_conditions(pod);
            if let Some(ip) = &rt.ip {
                nrt.reserve(ip);
            }
            rt
        });
        let mut events = Vec::new();
        let wake = rt.advance(pod, nrt, now, &mut events);
        let fields = rt.status(pod, &host_ip, now);
        let status = if rt.last_written.as_ref() == Some(&fields) {
            None
        } else {
            let merged = merge_status(pod.get("status"), &fields);
            let current = pod.get("status").cloned().unwrap_or(Value::Null);
            let same = podutil::normalized::<k8s_openapi::api::core::v1::PodStatus>(&merged)
                == podutil::normalized::<k8s_openapi::api::core::v1::PodStatus>(&current);
            if same {
                rt.last_written = Some(fields);
                None
            } else {
                Some(fields)
            }
        };
        let delete = rt.terminal && object::is_deleting(pod);
        Plan {
            events,
            wake,
            status,
            delete,
            uid,
            node: node_name,
        }
    }

    /// Brings one pod's simulated state and its status up to date.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(pod) = self.informer.get_key(&key) else {
            self.forget(&key);
            return Ok(None);
        };
        let node_name = podutil::str_at(&pod, "/spec/nodeName");
        let Some(node) = self
            .informer
            .get(Kind::Node, "", node_name)
            .filter(|n| nodes::is_simulated(n))
        else {
            return Ok(None);
        };
        let plan = self.plan(&key, &pod, &node);
        let source = Source {
            component: "kubelet",
            host: Some(plan.node.clone()),
        };
        for e in plan.events {
            self.recorder
                .event(&pod, e.path, e.warning, e.reason, e.message, &source);
        }
        let Some(target) = writes::target_of(&self.api, Kind::Pod, &pod) else {
            return Ok(None);
        };
        if let Some(fields) = plan.status {
            let written = writes::update_same_uid(
                &self.api,
                &target,
                Part::Status,
                "kubelet",
                &plan.uid,
                |cur| {
                    let mut p = cur.clone();
                    p["status"] = merge_status(cur.get("status"), &fields);
                    Ok(p)
                },
            )
            .await;
            match written {
                Ok(_) => {
                    let mut st = self.lock();
                    if let Some(rt) = st.pods.get_mut(&key).filter(|rt| rt.uid == plan.uid) {
                        rt.last_written = Some(fields);
                    }
                }
                Err(e) if e.code == 404 => {
                    self.forget(&key);
                    return Ok(None);
                }
                Err(e) if e.code == 409 => return Ok(Some(Duration::from_millis(50))),
                Err(e) => return Err(e),
            }
        }
        if plan.delete {
            writes::delete_same_uid(&self.api, &target, &plan.uid, Some(0)).await?;
        }
        Ok(plan
            .wake
            .map(|t| podutil::until(t, podutil::now()) + Duration::from_millis(2)))
    }
}

/// The pod status with the kubelet's fields replaced and the conditions of
/// others (the scheduler's `PodScheduled`, …) kept.
fn merge_status(current: Option<&Value>, fields: &Value) -> Value {
    let mut out: Map<String, Value> = current
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut conds: Vec<Value> = fields
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in current
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
        if !KUBELET_CONDITIONS.contains(&ty) {
            conds.push(c.clone());
        }
    }
    if let Some(f) = fields.as_object() {
        for (k, v) in f {
            out.insert(k.clone(), v.clone());
        }
    }
    out.insert("conditions".into(), Value::Array(conds));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctr(image: &str, restart_policy: &str) -> Ctr {
        let pod = json!({"spec": {"restartPolicy": restart_policy}});
        let spec = json!({"name": "c", "image": image, "imagePullPolicy": "IfNotPresent"});
        Ctr::from_spec(&pod, &spec, false)
    }

    fn secs(t: jiff::Timestamp, s: u64) -> jiff::Timestamp {
        after(t, Duration::from_secs(s))
    }

    fn waiting(c: &Ctr) -> (String, String) {
        let s = c.status(false);
        let w = &s["state"]["waiting"];
        (
            w["reason"].as_str().unwrap_or("").to_string(),
            w["message"].as_str().unwrap_or("").to_string(),
        )
    }

    #[test]
    fn crash_loops_restart_at_once_then_back_off_10s_then_20s() {
        let mut c = ctr("busybox:crash", "Always");
        let mut images = HashSet::from([simulation::qualified_image("busybox:crash")]);
        let mut evs = Vec::new();
        let t0 = podutil::parse_time("2025-01-01T00:00:00Z").unwrap_or_else(podutil::now);
        let pod = "p_default(u1)";
        assert_eq!(
            c.step("Always", &mut images, t0, pod, &mut evs),
            Some(secs(t0, 1))
        );
        // The first exit restarts at once.
        c.step("Always", &mut images, secs(t0, 1), pod, &mut evs);
        assert!(c.is_running());
        assert_eq!(c.restart_count, 1);
        // The second waits 10 s.
        assert_eq!(
            c.step("Always", &mut images, secs(t0, 2), pod, &mut evs),
            Some(secs(t0, 12))
        );
        assert_eq!(
            waiting(&c),
            (
                "CrashLoopBackOff".to_string(),
                "back-off 10s restarting failed container=c pod=p_default(u1)".to_string()
            )
        );
        assert_eq!(c.status(false)["lastState"]["terminated"]["exitCode"], 1);
        c.step("Always", &mut images, secs(t0, 12), pod, &mut evs);
        assert_eq!(c.restart_count, 2);
        // The third waits 20 s.
        c.step("Always", &mut images, secs(t0, 13), pod, &mut evs);
        assert_eq!(
            waiting(&c).1,
            "back-off 20s restarting failed container=c pod=p_default(u1)"
        );
        let reasons: Vec<&str> = evs.iter().map(|e| e.reason).collect();
        assert_eq!(reasons.iter().filter(|r| **r == "BackOff").count(), 2);
        assert_eq!(reasons.iter().filter(|r| **r == "Started").count(), 3);
    }

    #[test]
    fn missing_images_back_off_between_pulls() {
        let mut c = ctr("nginx:missing", "Always");
        let mut images = HashSet::new();
        let mut evs = Vec::new();
        let t0 = podutil::parse_time("2025-01-01T00:00:00Z").unwrap_or_else(podutil::now);
        let pulled = after(t0, simulation::PULL_TIME);
        assert_eq!(
            c.step("Always", &mut images, t0, "p", &mut evs),
            Some(pulled)
        );
        assert_eq!(waiting(&c).0, "ContainerCreating");
        c.step("Always", &mut images, pulled, "p", &mut evs);
        assert_eq!(waiting(&c).0, "ErrImagePull");
        c.step(
            "Always",
            &mut images,
            after(pulled, SHOW_PULL_BACKOFF),
            "p",
            &mut evs,
        );
        assert_eq!(
            waiting(&c),
            (
                "ImagePullBackOff".to_string(),
                "Back-off pulling image \"nginx:missing\"".to_string()
            )
        );
        // Retried after 10 s, then after 20 s.
        let retry = secs(pulled, 10);
        c.step("Always", &mut images, retry, "p", &mut evs);
        let failed_again = after(retry, simulation::PULL_TIME);
        let next = c.step("Always", &mut images, failed_again, "p", &mut evs);
        assert_eq!(next, Some(after(failed_again, SHOW_PULL_BACKOFF)));
        assert!(
            matches!(&c.state, CState::PullFailed { retry_at, .. } if *retry_at == secs(failed_again, 20))
        );
        let pulls = evs.iter().filter(|e| e.reason == "Pulling").count();
        assert_eq!(pulls, 2);
    }

    #[test]
    fn pod_ips_come_from_the_node_cidr() {
        let node = json!({"metadata": {"name": "n"}, "spec": {"podCIDR": "10.244.3.0/24"}});
        let mut rt = NodeRt::new(&node, &[]);
        let a = rt.allocate();
        let b = rt.allocate();
        assert_eq!(a.as_deref(), Some("10.244.3.2"));
        assert_eq!(b.as_deref(), Some("10.244.3.3"));
        rt.release(a.as_deref(), false);
        assert_eq!(rt.allocate().as_deref(), Some("10.244.3.4"));
    }
}
