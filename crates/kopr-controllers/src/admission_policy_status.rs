//! The ValidatingAdmissionPolicy status controller of
//! kube-controller-manager: once a policy's generation is ahead of
//! `status.observedGeneration`, its expressions are type-checked and the
//! status records the generation and the warnings.

use serde_json::{Value, json};

use crate::registry::{Api, ListOptions, Target, WriteOptions};
use crate::storage::{EventType, WatchEvent};

const KEY_PREFIX: &str = "/admissionregistration.k8s.io/validatingadmissionpolicies/";

fn target(api: &Api, name: &str) -> Option<Target> {
    Some(Target {
        rt: api.catalog.get(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
        )?,
        namespace: None,
        name: Some(name.to_string()),
    })
}

fn stale(policy: &Value) -> bool {
    let generation = policy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let observed = policy
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    generation > observed
}

/// Type-checks every policy whose status is behind (at start-up).
pub async fn resync(api: &Api) {
    let Some(t) = target(api, "") else {
        return;
    };
    if let Ok(list) = api.list(&t.rt, None, &ListOptions::default()).await {
        for policy in list.items.iter().filter(|p| stale(p)) {
            spawn_update(api, policy);
        }
    }
}

/// Reacts to a change of a policy.
pub fn observe(api: &Api, ev: &WatchEvent) {
    if ev.key.starts_with(KEY_PREFIX) && ev.event_type != EventType::Deleted && stale(&ev.object) {
        spawn_update(api, &ev.object);
    }
}

fn spawn_update(api: &Api, policy: &Value) {
    let api = api.clone();
    let policy = policy.clone();
    tokio::spawn(async move { update(&api, &policy).await });
}

async fn update(api: &Api, policy: &Value) {
    let name = crate::object::name(policy);
    let Some(t) = target(api, name) else {
        return;
    };
    let generation = policy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let warnings = crate::admission::policy::typecheck::expression_warnings(policy, &api.catalog);
    let opts = WriteOptions {
        field_manager: "validatingadmissionpolicy-status-controller".into(),
        ..WriteOptions::default()
    };
    let result = api
        .mutate_status(&t, &opts, |current| {
            let mut new = current.clone();
            let checked = match warnings.is_empty() {
                true => json!({}),
                false => json!({"expressionWarnings": warnings}),
            };
            if let Some(m) = new.as_object_mut() {
                let status = m.entry("status").or_insert_with(|| json!({}));
                if let Some(s) = status.as_object_mut() {
                    s.insert("observedGeneration".into(), json!(generation));
                    s.insert("typeChecking".into(), checked);
                }
            }
            Ok(new)
        })
        .await;
    if let Err(e) = result
        && e.code != 404
        && e.code != 409
    {
        tracing::warn!(policy = name, error = %e, "could not update the policy's status");
    }
}
