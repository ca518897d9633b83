//! One simulated container: its state machine (pulling, running, exited,
//! waiting with back-off), its events and its status.

#[allow(unused_imports)]
use super::*;

/// First crash-loop and image-pull back-off.
pub(super) const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
/// Longest crash-loop and image-pull back-off.
pub(super) const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// How long after a failed pull the container shows `ImagePullBackOff`
/// rather than `ErrImagePull` (the kubelet's next pod sync).
pub(super) const SHOW_PULL_BACKOFF: Duration = Duration::from_secs(2);

/// The conditions the kubelet owns.
pub(super) const KUBELET_CONDITIONS: [&str; 4] = [
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
];

#[derive(Debug, Clone)]
pub(super) struct Term {
    pub(super) exit_code: i32,
    pub(super) reason: &'static str,
    pub(super) started_at: jiff::Timestamp,
    pub(super) finished_at: jiff::Timestamp,
    pub(super) container_id: String,
}

#[derive(Debug, Clone)]
pub(super) enum CState {
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
pub(super) struct Ctr {
    pub(super) name: String,
    pub(super) image: String,
    pub(super) pull_policy: String,
    pub(super) behavior: Behavior,
    pub(super) sidecar: bool,
    pub(super) init: bool,
    pub(super) ignores_sigterm: bool,
    pub(super) ready_delay: Option<Duration>,
    pub(super) state: CState,
    pub(super) restart_count: i64,
    pub(super) last_term: Option<Term>,
    pub(super) created: bool,
    pub(super) container_id: String,
    pub(super) ready: bool,
    pub(super) crash_backoff: Option<(Duration, jiff::Timestamp)>,
    pub(super) pull_backoff: Option<(Duration, jiff::Timestamp)>,
}

pub(super) struct Ev {
    pub(super) path: Option<String>,
    pub(super) warning: bool,
    pub(super) reason: &'static str,
    pub(super) message: String,
}

pub(super) fn earliest(
    a: Option<jiff::Timestamp>,
    b: Option<jiff::Timestamp>,
) -> Option<jiff::Timestamp> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

pub(super) fn next_backoff(
    current: Option<(Duration, jiff::Timestamp)>,
    at: jiff::Timestamp,
) -> (Duration, jiff::Timestamp) {
    match current {
        Some((d, last)) if !expired(last, at) => ((d * 2).min(BACKOFF_MAX), at),
        _ => (BACKOFF_INITIAL, at),
    }
}

/// A back-off entry is forgotten after twice the maximum back-off.
pub(super) fn expired(last: jiff::Timestamp, at: jiff::Timestamp) -> bool {
    podutil::until(at, last) > BACKOFF_MAX * 2
}

/// What handling one state asks of [`Ctr::step`]'s loop.
enum Next {
    /// The state changed: handle the new one.
    Again,
    /// Nothing more to do now; the next change is due then (if ever).
    Done(Option<jiff::Timestamp>),
}

/// The fields of [`CState::PullFailed`].
struct PullFailure {
    failed_at: jiff::Timestamp,
    message: String,
    backoff_shown: bool,
    retry_at: jiff::Timestamp,
}

impl Ctr {
    pub(super) fn from_spec(pod: &Value, spec: &Value, init: bool) -> Ctr {
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
    pub(super) fn adopt(&mut self, status: &Value) {
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

    pub(super) fn is_running(&self) -> bool {
        matches!(self.state, CState::Running { .. })
    }

    pub(super) fn succeeded(&self) -> bool {
        matches!(&self.state, CState::Exited(t) if t.exit_code == 0)
    }

    pub(super) fn path(&self) -> String {
        if self.init {
            format!("spec.initContainers{{{}}}", self.name)
        } else {
            format!("spec.containers{{{}}}", self.name)
        }
    }

    pub(super) fn ev(
        &self,
        evs: &mut Vec<Ev>,
        warning: bool,
        reason: &'static str,
        message: String,
    ) {
        evs.push(Ev {
            path: Some(self.path()),
            warning,
            reason,
            message,
        });
    }

    pub(super) fn start(&mut self, at: jiff::Timestamp, evs: &mut Vec<Ev>) {
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
    pub(super) fn begin_pull(&mut self, reference: &str, now: jiff::Timestamp, evs: &mut Vec<Ev>) {
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
    pub(super) fn step(
        &mut self,
        restart_policy: &str,
        images: &mut HashSet<String>,
        now: jiff::Timestamp,
        pod_ref: &str,
        evs: &mut Vec<Ev>,
    ) -> Option<jiff::Timestamp> {
        let reference = simulation::with_default_tag(&self.image);
        for _ in 0..64 {
            let next = match self.state.clone() {
                CState::New => self.step_new(images, &reference, now, evs),
                CState::Pulling { done_at } => {
                    self.step_pulling(done_at, images, &reference, now, evs)
                }
                CState::PullFailed {
                    failed_at,
                    message,
                    backoff_shown,
                    retry_at,
                } => {
                    let failed = PullFailure {
                        failed_at,
                        message,
                        backoff_shown,
                        retry_at,
                    };
                    self.step_pull_failed(failed, &reference, now, evs)
                }
                CState::NeverPull { .. } => Next::Done(None),
                CState::Running {
                    started_at,
                    ready_at,
                    exit_at,
                } => self.step_running(started_at, ready_at, exit_at, now),
                CState::Exited(term) => self.step_exited(term, restart_policy, now, pod_ref, evs),
                CState::CrashBackOff {
                    term, until, delay, ..
                } => {
                    if now < until {
                        Next::Done(Some(until))
                    } else {
                        self.crash_backoff = Some(((delay * 2).min(BACKOFF_MAX), term.finished_at));
                        self.last_term = Some(term);
                        self.state = CState::New;
                        Next::Again
                    }
                }
            };
            if let Next::Done(at) = next {
                return at;
            }
        }
        None
    }

    /// A new container: fails without its image under pull policy Never,
    /// starts with the image present, or pulls it.
    fn step_new(
        &mut self,
        images: &HashSet<String>,
        reference: &str,
        now: jiff::Timestamp,
        evs: &mut Vec<Ev>,
    ) -> Next {
        let qualified = simulation::qualified_image(&self.image);
        let present = images.contains(&qualified);
        if self.pull_policy == "Never" && !present {
            let message =
                format!("Container image \"{reference}\" is not present with pull policy of Never");
            self.ev(evs, true, "ErrImageNeverPull", message.clone());
            self.state = CState::NeverPull { message };
            return Next::Done(None);
        }
        if self.pull_policy != "Always" && present {
            self.ev(
                evs,
                false,
                "Pulled",
                format!("Container image \"{reference}\" already present on machine"),
            );
            self.start(now, evs);
            return Next::Again;
        }
        self.begin_pull(reference, now, evs);
        Next::Again
    }

    /// A pull in progress: once done, it fails (for a missing image) or
    /// starts the container.
    fn step_pulling(
        &mut self,
        done_at: jiff::Timestamp,
        images: &mut HashSet<String>,
        reference: &str,
        now: jiff::Timestamp,
        evs: &mut Vec<Ev>,
    ) -> Next {
        if now < done_at {
            return Next::Done(Some(done_at));
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
            return Next::Again;
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
        Next::Again
    }

    /// A failed pull: retried when its back-off ends, shown as
    /// `ImagePullBackOff` a moment after the failure.
    fn step_pull_failed(
        &mut self,
        failed: PullFailure,
        reference: &str,
        now: jiff::Timestamp,
        evs: &mut Vec<Ev>,
    ) -> Next {
        let PullFailure {
            failed_at,
            message,
            backoff_shown,
            retry_at,
        } = failed;
        if now >= retry_at {
            self.begin_pull(reference, now, evs);
            return Next::Again;
        }
        let show_at = after(failed_at, SHOW_PULL_BACKOFF);
        if backoff_shown {
            return Next::Done(Some(retry_at));
        }
        if now < show_at {
            return Next::Done(Some(show_at.min(retry_at)));
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
        Next::Done(Some(retry_at))
    }

    /// A running container: becomes ready, and exits when its behaviour
    /// says so.
    fn step_running(
        &mut self,
        started_at: jiff::Timestamp,
        mut ready_at: Option<jiff::Timestamp>,
        exit_at: Option<(jiff::Timestamp, i32)>,
        now: jiff::Timestamp,
    ) -> Next {
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
            return Next::Again;
        }
        Next::Done(earliest(ready_at, exit_at.map(|(t, _)| t)))
    }

    /// An exited container: stays so unless the restart policy restarts
    /// it, after the crash-loop back-off if one is running.
    fn step_exited(
        &mut self,
        term: Term,
        restart_policy: &str,
        now: jiff::Timestamp,
        pod_ref: &str,
        evs: &mut Vec<Ev>,
    ) -> Next {
        let restart = match restart_policy {
            "Never" => false,
            "OnFailure" => term.exit_code != 0,
            _ => true,
        };
        if !restart {
            return Next::Done(None);
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
                    return Next::Done(Some(until));
                }
                self.crash_backoff = Some(((delay * 2).min(BACKOFF_MAX), term.finished_at));
            }
            _ => self.crash_backoff = Some((BACKOFF_INITIAL, term.finished_at)),
        }
        self.last_term = Some(term);
        self.state = CState::New;
        Next::Again
    }

    /// Stops a running container when its pod is killed.
    pub(super) fn stop(&mut self, at: jiff::Timestamp) {
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

    pub(super) fn term_json(t: &Term) -> Value {
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
    pub(super) fn status(&self, pod_has_init: bool) -> Value {
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
