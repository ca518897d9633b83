//! One simulated pod: its containers, init order, phase, conditions and status.

#[allow(unused_imports)]
use super::*;

/// The simulated kubelet's view of one pod.
pub(super) struct PodRt {
    pub(super) uid: String,
    pub(super) node: String,
    pub(super) ip: Option<String>,
    pub(super) host_network: bool,
    pub(super) start_time: Option<jiff::Timestamp>,
    pub(super) sandbox: bool,
    pub(super) init: Vec<Ctr>,
    pub(super) main: Vec<Ctr>,
    pub(super) killing: Option<jiff::Timestamp>,
    pub(super) terminal: bool,
    pub(super) conditions: HashMap<&'static str, (bool, jiff::Timestamp)>,
    pub(super) last_written: Option<Value>,
}

impl PodRt {
    pub(super) fn new(pod: &Value) -> PodRt {
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
    pub(super) fn adopt(&mut self, pod: &Value) {
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

    pub(super) fn all(&mut self) -> impl Iterator<Item = &mut Ctr> {
        self.init.iter_mut().chain(self.main.iter_mut())
    }

    pub(super) fn init_done(&self) -> bool {
        self.init.iter().all(|c| {
            if c.sidecar {
                c.is_running() || c.created
            } else {
                c.succeeded()
            }
        })
    }

    pub(super) fn phase(&self, restart_policy: &str) -> &'static str {
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
    pub(super) fn advance(
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

    pub(super) fn kill(
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

    pub(super) fn condition(
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
    pub(super) fn seed_conditions(&mut self, pod: &Value) {
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
    pub(super) fn status(&mut self, pod: &Value, host_ip: &str, now: jiff::Timestamp) -> Value {
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
        let ephemeral = ephemeral_statuses(pod, now);
        if !ephemeral.is_empty() {
            s["ephemeralContainerStatuses"] = json!(ephemeral);
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

/// The statuses of a pod's ephemeral containers (`kubectl debug`): each
/// runs from the moment the kubelet first sees it, never restarts and is
/// never ready; its image is taken as present.
fn ephemeral_statuses(pod: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let Some(specs) = pod
        .pointer("/spec/ephemeralContainers")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let known = pod
        .pointer("/status/ephemeralContainerStatuses")
        .and_then(Value::as_array);
    specs
        .iter()
        .filter_map(|c| {
            let name = c.get("name").and_then(Value::as_str)?;
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            let previous = known.and_then(|k| k.iter().find(|s| s["name"] == name));
            if let Some(p) = previous {
                return Some(p.clone());
            }
            Some(json!({
                "name": name,
                "state": {"running": {"startedAt": rfc3339(now)}},
                "lastState": {},
                "ready": false,
                "restartCount": 0,
                "image": simulation::qualified_image(image),
                "imageID": simulation::image_id(image),
                "containerID": format!("containerd://{}", podutil::random_hex(64)),
            }))
        })
        .collect()
}
