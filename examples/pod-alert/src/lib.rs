//! The pod alert operator of the Kopf walkthrough, in kopr.
//!
//! An `Orchestr` (`orchestrs.kopf.dev/v1`) asks for alerts about pods with
//! `spec.alerts.checkRunningPods: true`. When one is created, the operator lists the pods (of
//! every namespace, or of `--pod-namespace`), picks the problematic ones (see [`pods`]: not
//! running, or running with a container waiting, failed or not ready) and writes them into the
//! Orchestr's `status.alerts`: name, namespace, phase, what is wrong with each container, and
//! the last lines of its log. Each newly problematic pod gets a Warning Event on the Orchestr.
//! A timer repeats the check every `--check-interval` seconds, and with `--webhook-url` every
//! change in the set of problematic pods is posted there as JSON (see [`webhook`]).
//!
//! An Orchestr without the setting fails its create handler for good with "alert must be set"
//! (a Warning Event and `status.message`); `checkRunningPods: false` switches the check off.

#![warn(missing_docs)]

pub mod pods;
pub mod webhook;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kopr::manifests::{Manifests, ResourceKind};
use kopr::{Context, Handler, HandlerError, HandlerResult, Operator, Resource, Timer};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::pods::{PodAlert, Scan};
use crate::webhook::Webhook;

/// What an Orchestr asks for. Fields beyond `alerts` are kept as written.
// clippy takes the repeated `type_ = ...` of the printcolumn(...) arguments for duplicated
// attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "kopf.dev",
    version = "v1",
    kind = "Orchestr",
    namespaced,
    doc = "An alert object: reports the pods of the cluster that have problems in its status",
    status = "OrchestrStatus",
    printcolumn(
        name = "Check",
        type_ = "boolean",
        json_path = ".spec.alerts.checkRunningPods"
    ),
    printcolumn(name = "Problems", type_ = "integer", json_path = ".status.problems"),
    printcolumn(name = "Message", type_ = "string", json_path = ".status.message"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct OrchestrSpec {
    /// What to alert about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alerts: Option<AlertSettings>,
}

/// The alert settings of an Orchestr.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct AlertSettings {
    /// Whether to report pods that are not running (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_running_pods: Option<bool>,
}

/// What the operator reports on an Orchestr. kopr keeps its own bookkeeping beside these
/// fields, so the schema keeps unknown fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct OrchestrStatus {
    /// The problematic pods found by the last check (the first 50).
    #[serde(default)]
    pub alerts: Vec<PodAlert>,
    /// How many pods had problems at the last check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problems: Option<i64>,
    /// When the pods were last checked (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    /// The outcome of the last check, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The pods (`namespace/name`) the webhook was last told about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified: Option<Vec<String>>,
    /// The outcome of the last webhook post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
}

/// The message of an Orchestr without `spec.alerts.checkRunningPods`.
pub const MISSING_SETTING: &str = "alert must be set";

/// The message of an Orchestr with the check switched off.
pub const CHECK_OFF: &str = "the pod check is off";

/// The reason of the Warning Event posted for each newly problematic pod.
pub const POD_ALERT_REASON: &str = "PodAlert";

/// The reason of the Warning Event posted when the webhook cannot be told.
pub const WEBHOOK_FAILED_REASON: &str = "WebhookFailed";

/// The id of the create handler.
pub const CREATE_HANDLER: &str = "check-pods";

/// The id of the timer.
pub const TIMER: &str = "recheck-pods";

/// How long to wait before listing pods again after the API refused or failed.
pub const RETRY_DELAY: Duration = Duration::from_secs(15);

/// The operator's options (flags of `run` and `dev`).
#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    /// Seconds between two checks of the pods.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub check_interval: u64,
    /// Post the alerts as JSON to this URL whenever the set of problematic pods changes (a
    /// Slack incoming webhook shows the `text` field).
    #[arg(long, value_name = "URL", value_parser = webhook::parse_url)]
    pub webhook_url: Option<String>,
    /// Check only the pods of this namespace (default: all namespaces). The operator's own
    /// `--namespace` chooses the Orchestrs it serves.
    #[arg(long, value_name = "NAMESPACE")]
    pub pod_namespace: Option<String>,
    /// How many of the last log lines of each failing container to report (0: none).
    #[arg(long, value_name = "LINES", default_value_t = 10)]
    pub log_lines: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            check_interval: 60,
            webhook_url: None,
            pod_namespace: None,
            log_lines: 10,
        }
    }
}

/// How the operator is deployed: beyond its Orchestrs and Events, it only reads pods and
/// their logs, in every namespace.
pub fn manifests() -> Manifests {
    Manifests::new("pod-alert")
        .reads::<Pod>()
        .reads_kind(ResourceKind::new("", "pods/log"))
}

/// The check's setting on `orchestr`: `None` when missing.
pub fn setting(orchestr: &Orchestr) -> Option<bool> {
    orchestr
        .spec
        .alerts
        .as_ref()
        .and_then(|a| a.check_running_pods)
}

/// What checks pods for Orchestrs: the options and the webhook client.
#[derive(Debug)]
struct Checker {
    config: Config,
    webhook: Option<Webhook>,
}

impl Checker {
    /// Lists the pods, reports the problematic ones on `ctx`'s Orchestr, posts an Event per
    /// newly problematic pod, and tells the webhook when the set changed.
    async fn check(&self, ctx: &Context<Orchestr>) -> HandlerResult {
        let namespace = self.config.pod_namespace.as_deref();
        let scan = match pods::scan(ctx.client(), namespace, self.config.log_lines).await {
            Ok(scan) => scan,
            Err(error) => {
                let message = format!("listing pods failed: {error}");
                ctx.patch().status("message", &message);
                return Err(HandlerError::temporary(message, RETRY_DELAY));
            }
        };
        let status = ctx.object.status.clone().unwrap_or_default();
        let before: BTreeSet<String> = status.alerts.iter().map(PodAlert::key).collect();
        for alert in &scan.alerts {
            if !before.contains(&alert.key()) {
                let summary = alert.summary();
                tracing::warn!("Alert: {summary}");
                ctx.warn(POD_ALERT_REASON, &summary);
            }
        }
        let message = describe(&scan, namespace);
        tracing::info!("{message}");
        ctx.patch()
            .status("alerts", &scan.alerts)
            .status("problems", scan.problems)
            .status("checkedAt", k8s_openapi::jiff::Timestamp::now().to_string())
            .status("message", &message);
        self.notify(ctx, &scan, status.notified.as_deref().unwrap_or_default())
            .await;
        Ok(())
    }

    /// Posts the alerts to the webhook when the problematic pods differ from those it was last
    /// told about. A failed post is reported (Warning Event, `status.webhook`) and retried at
    /// the next check.
    async fn notify(&self, ctx: &Context<Orchestr>, scan: &Scan, notified: &[String]) {
        let Some(webhook) = &self.webhook else {
            return;
        };
        let keys: Vec<String> = scan.alerts.iter().map(PodAlert::key).collect();
        if keys.iter().collect::<BTreeSet<_>>() == notified.iter().collect::<BTreeSet<_>>() {
            return;
        }
        let document = webhook::document(
            ctx.namespace().unwrap_or_default(),
            ctx.name(),
            &scan.alerts,
            scan.problems,
        );
        match webhook.post(&document).await {
            Ok(()) => {
                let message = format!(
                    "told {} about {}",
                    webhook.url(),
                    count(scan.problems, "problematic pod")
                );
                tracing::info!("{message}");
                ctx.patch()
                    .status("notified", &keys)
                    .status("webhook", message);
            }
            Err(error) => {
                tracing::warn!("{error}");
                ctx.warn(WEBHOOK_FAILED_REASON, &error.to_string());
                ctx.patch().status("webhook", error.to_string());
            }
        }
    }
}

/// `1 pod`, `2 pods`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The outcome of a check, in words: `4 pods checked in all namespaces, 3 with problems`.
fn describe(scan: &Scan, namespace: Option<&str>) -> String {
    let place = match namespace {
        Some(namespace) => format!("in namespace {namespace}"),
        None => "in all namespaces".to_owned(),
    };
    let checked = count(scan.pods, "pod");
    match scan.problems {
        0 => format!("{checked} checked {place}, none with problems"),
        n if n > scan.alerts.len() => format!(
            "{checked} checked {place}, {n} with problems (the first {} listed)",
            scan.alerts.len()
        ),
        n => format!("{checked} checked {place}, {n} with problems"),
    }
}

/// Clears the alerts of an Orchestr that checks nothing, saying why.
fn report_idle(ctx: &Context<Orchestr>, message: &str) {
    let status = ctx.object.status.clone().unwrap_or_default();
    if status.message.as_deref() == Some(message) && status.alerts.is_empty() {
        return;
    }
    ctx.patch()
        .status("alerts", Vec::<PodAlert>::new())
        .status("problems", 0)
        .status("message", message);
}

async fn created(checker: Arc<Checker>, ctx: Context<Orchestr>) -> HandlerResult {
    match setting(&ctx.object) {
        None => {
            ctx.patch().status("message", MISSING_SETTING);
            Err(HandlerError::permanent(MISSING_SETTING))
        }
        Some(false) => {
            tracing::info!("{CHECK_OFF}");
            report_idle(&ctx, CHECK_OFF);
            Ok(())
        }
        Some(true) => checker.check(&ctx).await,
    }
}

async fn recheck(checker: Arc<Checker>, ctx: Context<Orchestr>) -> HandlerResult {
    match setting(&ctx.object) {
        // The create handler reported it; a later edit may still add the setting.
        None => {
            report_idle(&ctx, MISSING_SETTING);
            Ok(())
        }
        Some(false) => {
            report_idle(&ctx, CHECK_OFF);
            Ok(())
        }
        Some(true) => checker.check(&ctx).await,
    }
}

/// The pod alert operator.
pub fn operator(config: &Config) -> Operator {
    let interval = Duration::from_secs(config.check_interval.max(1));
    let checker = Arc::new(Checker {
        webhook: config.webhook_url.as_deref().map(Webhook::new),
        config: config.clone(),
    });
    let on_timer = checker.clone();
    Operator::new().resource(
        Resource::<Orchestr>::custom()
            .on_create(Handler::new(move |ctx| created(checker.clone(), ctx)).id(CREATE_HANDLER))
            .timer(
                // The create handler makes the first check.
                Timer::every(interval, move |ctx| recheck(on_timer.clone(), ctx))
                    .id(TIMER)
                    .initial_delay(interval)
                    .backoff(RETRY_DELAY.min(interval)),
            ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_described_in_words() {
        let mut scan = Scan {
            alerts: Vec::new(),
            problems: 0,
            pods: 1,
        };
        assert_eq!(
            describe(&scan, None),
            "1 pod checked in all namespaces, none with problems"
        );
        scan.pods = 80;
        scan.problems = 60;
        assert_eq!(
            describe(&scan, Some("shop")),
            "80 pods checked in namespace shop, 60 with problems (the first 0 listed)"
        );
    }

    #[test]
    fn the_setting_is_read_from_the_spec() {
        let orchestr = |spec: serde_json::Value| -> Orchestr {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "kopf.dev/v1", "kind": "Orchestr",
                "metadata": {"name": "o"}, "spec": spec,
            }))
            .expect("an Orchestr")
        };
        assert_eq!(setting(&orchestr(serde_json::json!({}))), None);
        assert_eq!(setting(&orchestr(serde_json::json!({"alerts": {}}))), None);
        let on = orchestr(serde_json::json!({"alerts": {"checkRunningPods": true}, "x": 1}));
        assert_eq!(setting(&on), Some(true));
    }
}
