//! Shared fixtures: a test custom resource, its CRD, and helpers around a `TestCluster`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopr::kube::{self, CustomResource, CustomResourceExt};
use kopr::testing::TestCluster;
use kube::api::{Api, ListParams, PostParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The test resource: a namespaced `Widget` with a free-form status.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "kopr.test",
    version = "v1",
    kind = "Widget",
    namespaced,
    shortname = "wd",
    status = "serde_json::Value"
)]
pub struct WidgetSpec {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<BTreeMap<String, String>>,
}

/// The Widget CRD with a status subresource whose status keeps unknown fields (where handler
/// results go) and a spec that takes any `size` (so broken objects can be made).
pub fn widget_crd() -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(Widget::crd()).expect("crd serializes");
    let version = &mut crd["spec"]["versions"][0];
    version["subresources"] = json!({"status": {}});
    let props = &mut version["schema"]["openAPIV3Schema"]["properties"];
    props["status"] = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    props["spec"]["properties"]["size"] = json!({"x-kubernetes-int-or-string": true});
    serde_json::from_value(crd).expect("crd deserializes")
}

pub const WAIT: Duration = Duration::from_secs(20);

pub async fn cluster() -> TestCluster {
    kopr::testing::capture_logs();
    let cluster = TestCluster::start().await.expect("cluster starts");
    cluster
        .install_crd(&widget_crd())
        .await
        .expect("crd installs");
    cluster
}

pub async fn namespace(cluster: &TestCluster, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cluster.client());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
}

pub fn widgets(cluster: &TestCluster, namespace: &str) -> Api<Widget> {
    Api::namespaced(cluster.client(), namespace)
}

pub async fn create_widget(api: &Api<Widget>, name: &str, message: &str) -> Widget {
    let widget: Widget = serde_json::from_value(json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"message": message}
    }))
    .expect("widget");
    api.create(&PostParams::default(), &widget)
        .await
        .expect("widget created")
}

/// Waits until the widget satisfies `check` on its JSON form; returns that JSON.
pub async fn wait_widget(
    api: &Api<Widget>,
    name: &str,
    check: impl Fn(&Value) -> bool + Send,
) -> Value {
    let found = kopr::testing::wait_for(api, name, WAIT, move |w: Option<&Widget>| {
        w.map(|w| serde_json::to_value(w).expect("json"))
            .is_some_and(|v| check(&v))
    })
    .await;
    match found {
        Ok(Some(widget)) => serde_json::to_value(widget).expect("json"),
        other => {
            let current = api.get_opt(name).await.ok().flatten();
            panic!(
                "{name}: condition not met ({:?}); object now: {}",
                other.err(),
                serde_json::to_string_pretty(&current).unwrap_or_default()
            )
        }
    }
}

pub async fn wait_gone(api: &Api<Widget>, name: &str) {
    kopr::testing::wait_for(api, name, WAIT, |w: Option<&Widget>| w.is_none())
        .await
        .expect("object deleted");
}

/// Events about the named object, as (type, reason, message).
pub async fn events_about(
    cluster: &TestCluster,
    namespace: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    let api: Api<Event> = Api::namespaced(cluster.client(), namespace);
    let list = api.list(&ListParams::default()).await.expect("events list");
    list.items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

/// Counts calls by key, shared between handlers (on the operator's thread) and the test.
#[derive(Clone, Default)]
pub struct Calls(Arc<Mutex<Vec<String>>>);

impl Calls {
    pub fn record(&self, entry: impl Into<String>) {
        self.0.lock().expect("calls").push(entry.into());
    }
    pub fn all(&self) -> Vec<String> {
        self.0.lock().expect("calls").clone()
    }
    pub fn count(&self, entry: &str) -> usize {
        self.all().iter().filter(|e| *e == entry).count()
    }
}

/// A handler with id `id` that records the name of each object it handles.
pub fn recording(calls: &Calls, id: &'static str) -> kopr::Handler<Widget> {
    let calls = calls.clone();
    kopr::Handler::new(move |ctx: kopr::Context<Widget>| {
        let calls = calls.clone();
        async move {
            calls.record(ctx.name().to_owned());
            kopr::HandlerResult::Ok(())
        }
    })
    .id(id)
}

pub fn annotations(body: &Value) -> serde_json::Map<String, Value> {
    body.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

pub fn finalizers(body: &Value) -> Vec<String> {
    body.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A proxy that, once enabled, answers every Lease request with a 5xx (off at first): a
/// replica behind it cannot renew its Lease.
pub async fn lease_outage(cluster: &TestCluster) -> kopr::testing::FaultProxy {
    let proxy = kopr::testing::FaultProxy::start(
        cluster,
        kopr::testing::Faults::rate(1.0)
            .only(false, true, false, false)
            .watch_cuts(0.0)
            .only_for(|parts| parts.uri.path().contains("/leases")),
    )
    .await
    .expect("proxy starts");
    proxy.set_enabled(false);
    proxy
}
