//! Finding pods with problems and describing them: which pods count as problematic, what is
//! wrong with their containers, and the last lines of the failing containers' logs.
//!
//! A pod is problematic when
//!
//! - its phase is anything but `Running` or `Succeeded` (`Pending`, `Failed`, `Unknown`): it
//!   is not running, as the walkthrough checks; a pod that finished its work is not a problem;
//! - or it is `Running` but one of its containers is waiting with a reason (a crash loop keeps
//!   the pod `Running` while its container waits in `CrashLoopBackOff`), has exited with a
//!   non-zero code, or runs without being ready.
//!
//! Pods being deleted are going away on purpose and are left out, and so are pods that are
//! just starting: `Pending` for less than [`STARTUP_GRACE`] since their creation with nothing
//! worse to say than that their containers are being created.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ListParams, LogParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most pods one Orchestr reports (the rest are only counted), so that its status stays
/// well below the API server's object size limit.
pub const MAX_ALERTS: usize = 50;

/// How long a new pod may be `Pending` while its containers are being created before it
/// counts as a problem.
pub const STARTUP_GRACE: SignedDuration = SignedDuration::from_secs(60);

/// The waiting reasons of containers that are merely starting.
const STARTING: [&str; 2] = ["ContainerCreating", "PodInitializing"];

/// The longest log line kept, in bytes.
const MAX_LOG_LINE: usize = 500;

/// What is wrong with one container of a problematic pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerIssue {
    /// The container's name.
    pub container: String,
    /// Whether it is an init container.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub init: bool,
    /// The container's state: `waiting`, `terminated`, or `running` (but not ready).
    pub state: String,
    /// Why, as the kubelet says it (`ImagePullBackOff`, `CrashLoopBackOff`, `Error`...), or
    /// `NotReady` for a running container that is not ready.
    pub reason: String,
    /// The kubelet's message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The exit code of the container's last run, if it has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How often the container was restarted.
    #[serde(default)]
    pub restart_count: i32,
    /// The last lines of the container's log (of its last run for a container waiting to
    /// restart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// Why the log could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_error: Option<String>,
    /// Whether the container has ever run, so that it has a log to read.
    #[serde(skip)]
    pub has_run: bool,
}

/// One problematic pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodAlert {
    /// The pod's name.
    pub name: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's phase (`Pending`, `Running`, `Failed`, `Unknown`).
    pub phase: String,
    /// Why the pod itself is unwell: its status reason (`Evicted`...), or the reason it is not
    /// scheduled (`Unschedulable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The message going with `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The containers with problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<ContainerIssue>,
}

impl PodAlert {
    /// `namespace/name`: the pod this alert is about.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// One line saying what is wrong, e.g. `pod default/web is Pending: container web is
    /// waiting: ImagePullBackOff (Back-off pulling image "nginx:missing")`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(reason) = &self.reason {
            parts.push(with_message(reason.clone(), self.message.as_deref()));
        }
        for issue in &self.issues {
            let kind = if issue.init {
                "init container"
            } else {
                "container"
            };
            let mut text = format!(
                "{kind} {} is {}: {}",
                issue.container, issue.state, issue.reason
            );
            if let Some(code) = issue.exit_code {
                text.push_str(&format!(", exit code {code}"));
            }
            if let Ok(restarts @ 1..) = usize::try_from(issue.restart_count) {
                text.push_str(&format!(", {}", crate::count(restarts, "restart")));
            }
            parts.push(with_message(text, issue.message.as_deref()));
        }
        let mut summary = format!("pod {} is {}", self.key(), self.phase);
        if !parts.is_empty() {
            summary.push_str(": ");
            summary.push_str(&parts.join("; "));
        }
        summary
    }
}

fn with_message(text: String, message: Option<&str>) -> String {
    match message.map(str::trim).filter(|m| !m.is_empty()) {
        Some(message) => format!("{text} ({message})"),
        None => text,
    }
}

/// What a scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// The problematic pods, by namespace and name, at most [`MAX_ALERTS`].
    pub alerts: Vec<PodAlert>,
    /// How many pods are problematic in all.
    pub problems: usize,
    /// How many pods were looked at.
    pub pods: usize,
}

fn issue_of(status: &ContainerStatus, init: bool) -> Option<ContainerIssue> {
    let state = status.state.as_ref();
    let last_exit = status
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .map(|t| t.exit_code);
    let has_run = status.restart_count > 0
        || last_exit.is_some()
        || state.is_some_and(|s| s.running.is_some() || s.terminated.is_some());
    let issue = |state: &str, reason: &str, message: Option<&String>, exit_code: Option<i32>| {
        ContainerIssue {
            container: status.name.clone(),
            init,
            state: state.to_owned(),
            reason: reason.to_owned(),
            message: message.cloned(),
            exit_code,
            restart_count: status.restart_count,
            logs: Vec::new(),
            log_error: None,
            has_run,
        }
    };
    if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
        let reason = waiting.reason.as_deref().unwrap_or("Waiting");
        return Some(issue(
            "waiting",
            reason,
            waiting.message.as_ref(),
            last_exit,
        ));
    }
    if let Some(terminated) = state.and_then(|s| s.terminated.as_ref()) {
        if terminated.exit_code == 0 {
            return None;
        }
        let reason = terminated.reason.as_deref().unwrap_or("Error");
        return Some(issue(
            "terminated",
            reason,
            terminated.message.as_ref(),
            Some(terminated.exit_code),
        ));
    }
    // Running init containers are sidecars (or still initializing, with the pod Pending).
    if !init && !status.ready {
        let message = "running but not ready".to_owned();
        return Some(issue("running", "NotReady", Some(&message), last_exit));
    }
    None
}

/// Whether `pod` has a problem at `now`, and which (see the module documentation); `None` for
/// a healthy, finished, terminating or starting pod.
pub fn inspect(pod: &Pod, now: Timestamp) -> Option<PodAlert> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.clone().unwrap_or_else(|| "Pending".to_owned());
    if phase == "Succeeded" {
        return None;
    }
    let mut issues: Vec<ContainerIssue> = status
        .init_container_statuses
        .iter()
        .flatten()
        .filter_map(|s| issue_of(s, true))
        .collect();
    issues.extend(
        status
            .container_statuses
            .iter()
            .flatten()
            .filter_map(|s| issue_of(s, false)),
    );
    if phase == "Running" && issues.is_empty() {
        return None;
    }
    let unscheduled = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False" && c.reason.is_some());
    let (reason, message) = match (&status.reason, unscheduled) {
        (Some(reason), _) => (Some(reason.clone()), status.message.clone()),
        (None, Some(condition)) => (condition.reason.clone(), condition.message.clone()),
        (None, None) => (None, status.message.clone()),
    };
    let young = pod
        .metadata
        .creation_timestamp
        .as_ref()
        .is_some_and(|created| now.duration_since(created.0) < STARTUP_GRACE);
    let starting = phase == "Pending"
        && reason.is_none()
        && issues.iter().all(|i| STARTING.contains(&i.reason.as_str()));
    if young && starting {
        return None;
    }
    Some(PodAlert {
        name: pod.metadata.name.clone().unwrap_or_default(),
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        phase,
        reason,
        message,
        issues,
    })
}

/// Picks the problematic pods out of `pods` at `now`, sorted by namespace and name, keeping at
/// most [`MAX_ALERTS`].
pub fn problems(pods: &[Pod], now: Timestamp) -> Scan {
    let found: BTreeMap<(String, String), PodAlert> = pods
        .iter()
        .filter_map(|pod| inspect(pod, now))
        .map(|alert| ((alert.namespace.clone(), alert.name.clone()), alert))
        .collect();
    Scan {
        problems: found.len(),
        pods: pods.len(),
        alerts: found.into_values().take(MAX_ALERTS).collect(),
    }
}

/// Cuts a log line to [`MAX_LOG_LINE`] bytes on a character boundary.
fn shorten(line: &str) -> String {
    if line.len() <= MAX_LOG_LINE {
        return line.to_owned();
    }
    let mut end = MAX_LOG_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &line[..end])
}

/// What the API server said, without kube-rs's wrapping.
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// Reads the last `lines` log lines of every issue's container that has run.
async fn read_logs(client: &kube::Client, alert: &mut PodAlert, lines: u32) {
    let api: Api<Pod> = Api::namespaced(client.clone(), &alert.namespace);
    for issue in alert.issues.iter_mut().filter(|i| i.has_run) {
        let params = LogParams {
            container: Some(issue.container.clone()),
            tail_lines: Some(i64::from(lines)),
            ..LogParams::default()
        };
        match api.logs(&alert.name, &params).await {
            Ok(text) => issue.logs = text.lines().map(shorten).collect(),
            Err(error) => issue.log_error = Some(api_message(&error)),
        }
    }
}

/// Lists the pods of `namespace` (all namespaces when `None`) and describes the problematic
/// ones, with the last `log_lines` lines of their failing containers' logs (none when 0).
pub async fn scan(
    client: &kube::Client,
    namespace: Option<&str>,
    log_lines: u32,
) -> Result<Scan, kube::Error> {
    let api: Api<Pod> = match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    let pods = api.list(&ListParams::default()).await?;
    let mut scan = problems(&pods.items, Timestamp::now());
    if log_lines > 0 {
        for alert in &mut scan.alerts {
            read_logs(client, alert, log_lines).await;
        }
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            "status": status,
        }))
        .expect("a pod")
    }

    #[test]
    fn healthy_and_finished_pods_are_no_problem() {
        let running = pod(json!({"phase": "Running", "containerStatuses": [
            {"name": "app", "image": "nginx", "imageID": "", "ready": true, "restartCount": 0,
             "state": {"running": {}}}]}));
        assert_eq!(inspect(&running, Timestamp::now()), None);
        let done = pod(json!({"phase": "Succeeded", "containerStatuses": [
            {"name": "app", "image": "nginx", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}));
        assert_eq!(inspect(&done, Timestamp::now()), None);
    }

    #[test]
    fn a_crash_loop_is_a_problem_although_the_pod_runs() {
        let crashing = pod(json!({"phase": "Running", "containerStatuses": [
            {"name": "app", "image": "nginx:crash", "imageID": "", "ready": false, "restartCount": 2,
             "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s"}},
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}));
        let alert = inspect(&crashing, Timestamp::now()).expect("a problem");
        assert_eq!(alert.phase, "Running");
        let issue = &alert.issues[0];
        assert_eq!(
            (issue.state.as_str(), issue.reason.as_str()),
            ("waiting", "CrashLoopBackOff")
        );
        assert_eq!(issue.exit_code, Some(1));
        assert!(issue.has_run);
        assert_eq!(
            alert.summary(),
            "pod shop/web is Running: container app is waiting: CrashLoopBackOff, exit code 1, \
             2 restarts (back-off 20s)"
        );
    }

    #[test]
    fn unschedulable_and_failed_pods_say_why() {
        let pending = pod(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 Insufficient cpu."}]}));
        let alert = inspect(&pending, Timestamp::now()).expect("a problem");
        assert_eq!(alert.reason.as_deref(), Some("Unschedulable"));
        assert!(alert.issues.is_empty());
        assert_eq!(
            alert.summary(),
            "pod shop/web is Pending: Unschedulable (0/3 nodes are available: 3 Insufficient cpu.)"
        );
        let pulling = pod(json!({"phase": "Pending", "containerStatuses": [
            {"name": "app", "image": "nginx:missing", "imageID": "", "ready": false,
             "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}));
        let issue = inspect(&pulling, Timestamp::now())
            .expect("a problem")
            .issues[0]
            .clone();
        assert_eq!(issue.reason, "ImagePullBackOff");
        assert!(!issue.has_run, "no log to read");
        let failed = pod(json!({"phase": "Failed", "reason": "Evicted",
                                "message": "The node was low on memory."}));
        let alert = inspect(&failed, Timestamp::now()).expect("a problem");
        assert_eq!(alert.reason.as_deref(), Some("Evicted"));
    }

    #[test]
    fn terminating_pods_are_left_out_and_alerts_are_sorted() {
        let mut going = pod(json!({"phase": "Pending"}));
        going.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        assert_eq!(inspect(&going, Timestamp::now()), None);
        let mut b = pod(json!({"phase": "Pending"}));
        b.metadata.name = Some("b".into());
        let mut a = pod(json!({"phase": "Unknown"}));
        a.metadata.name = Some("a".into());
        let scan = problems(&[b, a, going], Timestamp::now());
        let keys: Vec<String> = scan.alerts.iter().map(PodAlert::key).collect();
        assert_eq!(keys, ["shop/a", "shop/b"]);
        assert_eq!((scan.problems, scan.pods), (2, 3));
    }

    #[test]
    fn starting_pods_get_a_grace_period() {
        let mut starting = pod(json!({"phase": "Pending", "containerStatuses": [
            {"name": "app", "image": "nginx", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"waiting": {"reason": "ContainerCreating"}}}]}));
        let created = Timestamp::UNIX_EPOCH;
        starting.metadata.creation_timestamp = Some(Time(created));
        let soon = created + SignedDuration::from_secs(10);
        assert_eq!(inspect(&starting, soon), None);
        let later = created + STARTUP_GRACE;
        let alert = inspect(&starting, later).expect("stuck starting");
        assert_eq!(alert.issues[0].reason, "ContainerCreating");

        let mut unschedulable = pod(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}));
        unschedulable.metadata.creation_timestamp = Some(Time(created));
        assert!(
            inspect(&unschedulable, soon).is_some(),
            "no grace for a pod that cannot start"
        );
    }

    #[test]
    fn long_log_lines_are_cut() {
        let line = "é".repeat(400);
        let cut = shorten(&line);
        assert!(cut.len() <= MAX_LOG_LINE + 3 && cut.ends_with("..."));
        assert_eq!(shorten("short"), "short");
    }
}
