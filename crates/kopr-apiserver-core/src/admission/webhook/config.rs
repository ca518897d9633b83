//! The admission webhooks the server calls, compiled from the stored
//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations and
//! rebuilt whenever one of them changes. Mutating webhooks are ordered as
//! kube orders them: by configuration name, then as declared.

use std::time::Duration;

use serde_json::Value;

use crate::admission::expressions::Condition;
use crate::admission::matching::{Rule, selector};
use crate::selectors::{LabelSelector, SelectorError};
use crate::storage::Store;

pub(super) const MUTATING: &str = "/admissionregistration.k8s.io/mutatingwebhookconfigurations/";
pub(super) const VALIDATING: &str =
    "/admissionregistration.k8s.io/validatingwebhookconfigurations/";

/// Where a webhook is reached.
#[derive(Debug, Clone)]
pub(super) enum Target {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

/// One webhook, ready to match and call.
#[derive(Debug)]
pub(super) struct Hook {
    pub name: String,
    pub configuration: String,
    pub rules: Vec<Rule>,
    /// `failurePolicy: Fail` (the default) rather than `Ignore`.
    pub fail_closed: bool,
    /// `namespaceSelector` (`Err`: a selector that does not parse).
    pub namespace_selector: Result<LabelSelector, SelectorError>,
    /// `objectSelector`.
    pub object_selector: Result<LabelSelector, SelectorError>,
    /// `sideEffects` is `None` or `NoneOnDryRun`: safe to call on a dry run.
    pub dry_run_safe: bool,
    pub timeout: Duration,
    /// `admissionReviewVersions`.
    pub review_versions: Vec<String>,
    pub target: Target,
    /// `clientConfig.caBundle`, PEM.
    pub ca_bundle: Option<Vec<u8>>,
    /// `reinvocationPolicy: IfNeeded` (mutating only).
    pub reinvoke: bool,
    /// `matchPolicy: Equivalent` (the default) rather than `Exact`.
    pub equivalent: bool,
    pub conditions: Vec<Condition>,
}

/// Every webhook.
#[derive(Debug, Default)]
pub(super) struct Index {
    pub mutating: Vec<Hook>,
    pub validating: Vec<Hook>,
}

fn strings(v: &Value) -> Vec<String> {
    crate::object::string_list(v)
}

fn target(config: &Value) -> Option<Target> {
    if let Some(url) = config["url"].as_str() {
        return Some(Target::Url(url.to_string()));
    }
    let service = config.get("service")?;
    Some(Target::Service {
        namespace: service["namespace"].as_str()?.to_string(),
        name: service["name"].as_str()?.to_string(),
        path: service["path"].as_str().unwrap_or("").to_string(),
        port: service["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(443),
    })
}

fn ca_bundle(config: &Value) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let text = config["caBundle"].as_str().filter(|s| !s.is_empty())?;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

fn hook(configuration: &str, webhook: &Value, mutating: bool) -> Option<Hook> {
    Some(Hook {
        name: webhook["name"].as_str()?.to_string(),
        configuration: configuration.to_string(),
        rules: Rule::list(&webhook["rules"]),
        fail_closed: webhook["failurePolicy"].as_str() != Some("Ignore"),
        namespace_selector: selector(&webhook["namespaceSelector"]),
        object_selector: selector(&webhook["objectSelector"]),
        dry_run_safe: matches!(
            webhook["sideEffects"].as_str(),
            Some("None" | "NoneOnDryRun")
        ),
        timeout: Duration::from_secs(
            webhook["timeoutSeconds"]
                .as_u64()
                .unwrap_or(10)
                .clamp(1, 30),
        ),
        review_versions: strings(&webhook["admissionReviewVersions"]),
        target: target(&webhook["clientConfig"])?,
        ca_bundle: ca_bundle(&webhook["clientConfig"]),
        reinvoke: mutating && webhook["reinvocationPolicy"].as_str() == Some("IfNeeded"),
        equivalent: webhook["matchPolicy"].as_str() != Some("Exact"),
        conditions: Condition::list(&webhook["matchConditions"]),
    })
}

fn hooks(store: &Store, prefix: &str, mutating: bool) -> Vec<Hook> {
    let mut configurations = store.current_objects(prefix);
    configurations.sort_by(|a, b| crate::object::name(a).cmp(crate::object::name(b)));
    configurations
        .iter()
        .flat_map(|c| {
            let name = crate::object::name(c).to_string();
            c["webhooks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(move |w| hook(&name, w, mutating))
                .collect::<Vec<_>>()
        })
        .collect()
}

impl Index {
    /// Compiles every stored configuration.
    pub fn build(store: &Store) -> Index {
        Index {
            mutating: hooks(store, MUTATING, true),
            validating: hooks(store, VALIDATING, false),
        }
    }
}
