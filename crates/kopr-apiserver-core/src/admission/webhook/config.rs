//! The admission webhooks the server calls, compiled from the stored
//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations and
//! rebuilt whenever one of them changes. Mutating webhooks are ordered as
//! kube orders them: by configuration name, then as declared.

use std::time::Duration;

use serde_json::Value;

use crate::admission::expressions::Condition;
use crate::admission::matching::{Rule, selector};
use crate::callout::ClientConfig;
use crate::selectors::{LabelSelector, SelectorError};
use crate::storage::Store;

pub(super) const MUTATING: &str = "/admissionregistration.k8s.io/mutatingwebhookconfigurations/";
pub(super) const VALIDATING: &str =
    "/admissionregistration.k8s.io/validatingwebhookconfigurations/";

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
    /// `admissionReviewVersions`.
    pub review_versions: Vec<String>,
    /// `clientConfig` and `timeoutSeconds`.
    pub client: ClientConfig,
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
        review_versions: strings(&webhook["admissionReviewVersions"]),
        client: ClientConfig::parse(
            &webhook["clientConfig"],
            Duration::from_secs(
                webhook["timeoutSeconds"]
                    .as_u64()
                    .unwrap_or(10)
                    .clamp(1, 30),
            ),
        )?,
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
