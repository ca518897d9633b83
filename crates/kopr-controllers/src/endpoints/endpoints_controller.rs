//! kube-controller-manager's endpoints controller: for every Service with
//! a selector (not ExternalName) it keeps the Endpoints object of the same
//! name listing the selected pods (ready ones under `addresses`, the others
//! under `notReadyAddresses`, unless `publishNotReadyAddresses`), with the
//! ports the Service's ports target on each pod, the Service's labels, the
//! `service.kubernetes.io/headless` label when the Service has no cluster
//! IP and the `endpoints.kubernetes.io/last-change-trigger-time`
//! annotation. Services without a selector are left alone: their Endpoints
//! are written by hand. The Endpoints of a deleted Service are deleted.
//! Events: `FailedToCreateEndpoint`, `FailedToUpdateEndpoint`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::pods::{self, HEADLESS_LABEL, TRIGGER_TIME};
use super::subsets::{self, Entry, MAX_CAPACITY};
use super::trigger::{self, TriggerTimes};
use crate::informer::{Informer, Kind};
use crate::object;
use crate::podutil::{self, CONTROLLER_MANAGER, at, str_at};
use crate::recorder::{Recorder, Source};
use crate::registry::{Api, DeleteOptions};
use crate::status::ApiError;
use crate::writes::{self, Part};

/// The annotation marking truncated Endpoints.
const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";

/// The controller.
pub struct EndpointsController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
    triggers: TriggerTimes,
}

/// The namespace and name of a Service's storage key.
pub(super) fn split_key(key: &str) -> Option<(&str, &str)> {
    key.strip_prefix(Kind::Service.prefix())?.split_once('/')
}

/// The `EndpointPort` of a Service port served on `port`.
fn endpoint_port(service_port: &Value, port: i64) -> Value {
    let mut p = Map::new();
    if let Some(name) = service_port
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        p.insert("name".into(), json!(name));
    }
    p.insert("port".into(), json!(port));
    p.insert("protocol".into(), json!(pods::port_protocol(service_port)));
    if let Some(app) = pods::app_protocol(service_port) {
        p.insert("appProtocol".into(), app.clone());
    }
    Value::Object(p)
}

/// The subsets the Service's pods make.
fn desired_subsets(svc: &Value, selected: &[Arc<Value>]) -> Vec<Value> {
    let tolerate = pods::publish_not_ready(svc);
    let ports: &[Value] = at(svc, "/spec/ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let headless = str_at(svc, "/spec/clusterIP") == "None";
    let mut entries = Vec::new();
    for pod in selected {
        if !pods::belongs(pod, tolerate) {
            continue;
        }
        let Some(ip) = pods::ip_for(svc, pod) else {
            continue;
        };
        let mut address = json!({"ip": ip, "targetRef": pods::target_ref(pod)});
        let node = str_at(pod, "/spec/nodeName");
        if !node.is_empty() {
            address["nodeName"] = json!(node);
        }
        if let Some(host) = pods::hostname(pod, svc) {
            address["hostname"] = json!(host);
        }
        let ready = tolerate || podutil::is_ready(pod);
        if ports.is_empty() {
            if headless {
                entries.push(Entry {
                    address,
                    ready,
                    port: None,
                });
            }
            continue;
        }
        for sp in ports {
            if let Some(n) = pods::find_port(pod, sp) {
                entries.push(Entry {
                    address: address.clone(),
                    ready,
                    port: Some(endpoint_port(sp, n)),
                });
            }
        }
    }
    subsets::repack(entries)
}

/// Subsets as the API stores them, without pod resource versions (which
/// do not count as a change).
fn comparable(subsets: &[Value]) -> Value {
    let mut list = subsets.to_vec();
    for subset in &mut list {
        for field in ["addresses", "notReadyAddresses"] {
            for a in subset
                .get_mut(field)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(r) = a.get_mut("targetRef").and_then(Value::as_object_mut) {
                    r.remove("resourceVersion");
                }
            }
        }
    }
    type Subsets = Vec<k8s_openapi::api::core::v1::EndpointSubset>;
    podutil::normalized::<Subsets>(&Value::Array(list))
}

fn subsets_of(endpoints: &Value) -> &[Value] {
    endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn string_map(obj: &Value, field: &str) -> Map<String, Value> {
    object::meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Sets a metadata map, dropping it when empty (as the API encodes it).
fn set_map(obj: &mut Value, field: &str, map: Map<String, Value>) {
    if let Some(meta) = object::meta_mut(obj) {
        if map.is_empty() {
            meta.remove(field);
        } else {
            meta.insert(field.into(), Value::Object(map));
        }
    }
}

/// Whether the stored Endpoints already say what the controller would write.
fn up_to_date(current: &Value, desired: &[Value], svc_labels: &Map<String, Value>) -> bool {
    let mut labels = string_map(current, "labels");
    labels.remove(HEADLESS_LABEL);
    let stored = subsets_of(current);
    let capacity_ok = subsets::address_count(stored) <= MAX_CAPACITY
        && !string_map(current, "annotations").contains_key(OVER_CAPACITY);
    comparable(stored) == comparable(desired) && labels == *svc_labels && capacity_ok
}

impl EndpointsController {
    /// A controller working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Self> {
        Arc::new(EndpointsController {
            api,
            informer,
            recorder,
            source: Source::component("endpoint-controller"),
            triggers: TriggerTimes::default(),
        })
    }

    /// Reconciles the Endpoints of one Service (keyed by its storage key).
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some((ns, name)) = split_key(&key) else {
            return Ok(None);
        };
        let Some(svc) = self.informer.get_key(&key) else {
            self.triggers.forget(ns, name);
            self.delete(ns, name).await?;
            return Ok(None);
        };
        if !pods::managed(&svc) {
            return Ok(None);
        }
        let selected = pods::selected_pods(&self.informer, &svc).unwrap_or_default();
        // Computed on every sync, so the tracker stays current even when
        // nothing is written.
        let triggered = self.triggers.compute(&svc, &selected);
        let mut subsets = desired_subsets(&svc, &selected);
        let svc_labels = string_map(&svc, "labels");
        let current = self.informer.get(Kind::Endpoints, ns, name);
        if let Some(cur) = &current
            && up_to_date(cur, &subsets, &svc_labels)
        {
            return Ok(None);
        }
        let truncated = subsets::truncate(&mut subsets);
        let mut labels = svc_labels;
        if pods::has_cluster_ip(&svc) {
            labels.remove(HEADLESS_LABEL);
        } else {
            labels.insert(HEADLESS_LABEL.into(), json!(""));
        }
        let fill = |base: &Value| {
            let mut new = base.clone();
            match new.as_object_mut() {
                // Go leaves empty subsets out.
                Some(map) if subsets.is_empty() => {
                    map.remove("subsets");
                }
                _ => new["subsets"] = json!(subsets),
            }
            set_map(&mut new, "labels", labels.clone());
            let mut annotations = string_map(base, "annotations");
            match triggered {
                Some(t) => annotations.insert(TRIGGER_TIME.into(), json!(trigger::format(t))),
                None => annotations.remove(TRIGGER_TIME),
            };
            if truncated {
                annotations.insert(OVER_CAPACITY.into(), json!("truncated"));
            } else {
                annotations.remove(OVER_CAPACITY);
            }
            set_map(&mut new, "annotations", annotations);
            new
        };
        match current {
            None => {
                self.create(
                    &svc,
                    fill(&json!({
                        "apiVersion": "v1",
                        "kind": "Endpoints",
                        "metadata": {"name": name, "namespace": ns},
                    })),
                )
                .await
            }
            Some(cur) => self.update(&svc, &cur, fill).await,
        }
    }

    async fn create(&self, svc: &Value, endpoints: Value) -> Result<Option<Duration>, ApiError> {
        let Some(rt) = self.api.catalog.get("", "v1", "endpoints") else {
            return Ok(None);
        };
        let ns = object::namespace(svc);
        let opts = podutil::writer(CONTROLLER_MANAGER);
        match self
            .api
            .create(&rt, Some(ns), endpoints.clone(), &opts)
            .await
        {
            Ok(_) => Ok(None),
            // The namespace is going away: creates keep failing; drop it.
            Err(e) if e.code == 403 && terminating_namespace(&e) => Ok(None),
            Err(e) => {
                self.recorder.warning(
                    &endpoints,
                    "FailedToCreateEndpoint",
                    format!(
                        "Failed to create endpoint for service {ns}/{}: {}",
                        object::name(svc),
                        e.message
                    ),
                    &self.source,
                );
                Err(e)
            }
        }
    }

    async fn update(
        &self,
        svc: &Value,
        current: &Value,
        fill: impl Fn(&Value) -> Value,
    ) -> Result<Option<Duration>, ApiError> {
        let Some(t) = writes::target_of(&self.api, Kind::Endpoints, current) else {
            return Ok(None);
        };
        let written = writes::update_same_uid(
            &self.api,
            &t,
            Part::Object,
            CONTROLLER_MANAGER,
            object::uid(current),
            |cur| Ok(fill(cur)),
        )
        .await;
        match writes::unless_gone(written) {
            Ok(_) => Ok(None),
            Err(e) => {
                if e.code != 409 {
                    let mut about = fill(current);
                    about["apiVersion"] = json!("v1");
                    about["kind"] = json!("Endpoints");
                    self.recorder.warning(
                        &about,
                        "FailedToUpdateEndpoint",
                        format!(
                            "Failed to update endpoint {}/{}: {}",
                            object::namespace(svc),
                            object::name(svc),
                            e.message
                        ),
                        &self.source,
                    );
                }
                Err(e)
            }
        }
    }

    /// Deletes the Endpoints of a Service that is gone.
    async fn delete(&self, ns: &str, name: &str) -> Result<(), ApiError> {
        if self.informer.get(Kind::Endpoints, ns, name).is_none() {
            return Ok(());
        }
        let Some(t) = writes::target(&self.api, Kind::Endpoints, ns, name) else {
            return Ok(());
        };
        match self.api.delete(&t, &DeleteOptions::default()).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Whether a 403 says the namespace is being terminated.
pub(super) fn terminating_namespace(e: &ApiError) -> bool {
    e.causes.iter().any(|c| c.reason == "NamespaceTerminating")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ip: &str, ready: bool) -> Arc<Value> {
        Arc::new(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c",
                "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
    }

    fn svc(extra: Value) -> Value {
        let mut s = json!({"metadata": {"name": "web", "namespace": "ns"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                "ports": [{"name": "web", "port": 80, "protocol": "TCP", "targetPort": "http"}]}});
        if let (Some(spec), Some(more)) = (s["spec"].as_object_mut(), extra.as_object()) {
            for (k, v) in more {
                spec.insert(k.clone(), v.clone());
            }
        }
        s
    }

    #[test]
    fn ready_and_unready_pods_land_in_their_lists_with_resolved_ports() {
        let pods = [pod("a", "10.244.0.2", true), pod("b", "10.244.1.2", false)];
        let subsets = desired_subsets(&svc(json!({})), &pods);
        assert_eq!(
            subsets,
            vec![json!({
                "addresses": [{"ip": "10.244.0.2", "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "uid-a"}}],
                "notReadyAddresses": [{"ip": "10.244.1.2", "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "b", "uid": "uid-b"}}],
                "ports": [{"name": "web", "port": 8080, "protocol": "TCP"}],
            })]
        );
        let published = desired_subsets(&svc(json!({"publishNotReadyAddresses": true})), &pods);
        assert_eq!(published[0]["addresses"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn headless_services_without_ports_list_addresses() {
        let s = svc(json!({"clusterIP": "None", "ports": []}));
        let subsets = desired_subsets(&s, &[pod("a", "10.244.0.2", true)]);
        assert_eq!(subsets.len(), 1);
        assert!(subsets[0].get("ports").is_none());
    }

    #[test]
    fn pod_resource_versions_do_not_count_as_changes() {
        let desired = desired_subsets(&svc(json!({})), &[pod("a", "10.244.0.2", true)]);
        let mut stored = desired.clone();
        stored[0]["addresses"][0]["targetRef"]["resourceVersion"] = json!("42");
        let current = json!({"metadata": {"labels": {HEADLESS_LABEL: ""}}, "subsets": stored});
        assert!(up_to_date(&current, &desired, &Map::new()));
        assert!(!up_to_date(&current, &[], &Map::new()));
    }
}
