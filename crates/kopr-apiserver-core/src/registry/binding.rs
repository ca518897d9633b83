//! Assigning a pod to a node (kube's `BindingREST`): the pod's
//! `spec.nodeName`, the Binding's annotations and a `PodScheduled`
//! condition, written straight to storage as kube's binding does (a
//! pod update may not change `spec.nodeName`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::Api;
use crate::object;
use crate::resources::kind::Known;
use crate::status::{ApiError, ResourceRef};
use crate::storage::WriteOutcome;

const BINDING: ResourceRef<'static> = ResourceRef {
    group: "",
    resource: "pods/binding",
};

/// One pod assignment.
#[derive(Debug, Clone, Copy)]
pub struct Bind<'a> {
    /// The pod's namespace.
    pub namespace: &'a str,
    /// The pod's name.
    pub name: &'a str,
    /// The uid the pod must have (a precondition), if any.
    pub uid: Option<&'a str>,
    /// The node the pod goes to.
    pub node: &'a str,
    /// Annotations the Binding adds to the pod.
    pub annotations: &'a Map<String, Value>,
}

impl Api {
    /// Assigns a pod to a node, retried on write conflicts.
    ///
    /// # Errors
    /// 404 when the pod is missing; 409 when it is being deleted, already
    /// has a node, or was replaced (another uid).
    pub async fn bind_pod(&self, b: Bind<'_>) -> Result<Arc<Value>, ApiError> {
        let Some(pods) = self.catalog.known(Known::Pods) else {
            return Err(ApiError::not_found(BINDING, b.name));
        };
        let key = pods.key(Some(b.namespace), b.name);
        let not_found = || ApiError::not_found(pods.reference(), b.name);
        loop {
            let Some(cur) = self.store.get(&key).await? else {
                return Err(not_found());
            };
            let name = b.name;
            if b.uid.is_some_and(|uid| object::uid(&cur.object) != uid) {
                return Err(ApiError::conflict(BINDING, name, "the pod was replaced"));
            }
            if object::is_deleting(&cur.object) {
                return Err(ApiError::conflict(
                    BINDING,
                    name,
                    &format!("pod {name} is being deleted, cannot be assigned to a host"),
                ));
            }
            if let Some(assigned) = cur
                .object
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            {
                return Err(ApiError::conflict(
                    BINDING,
                    name,
                    &format!("pod {name} is already assigned to node \"{assigned}\""),
                ));
            }
            let mut new = (*cur.object).clone();
            assign(&mut new, b.node, b.annotations);
            crate::storage::set_resource_version(&mut new, cur.revision);
            match self
                .store
                .update(&key, new, cur.revision, cur.object.clone())
                .await?
            {
                WriteOutcome::Committed(s) => return Ok(s.object),
                WriteOutcome::NotFound => return Err(not_found()),
                WriteOutcome::Conflict | WriteOutcome::AlreadyExists => continue,
            }
        }
    }
}

/// Sets the node, adds the annotations and makes `PodScheduled` true.
fn assign(pod: &mut Value, node: &str, annotations: &Map<String, Value>) {
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    pod["spec"]["nodeName"] = json!(node);
    if !annotations.is_empty() {
        let meta = &mut pod["metadata"];
        if !meta["annotations"].is_object() {
            meta["annotations"] = json!({});
        }
        for (k, v) in annotations {
            meta["annotations"][k] = v.clone();
        }
    }
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    if !pod["status"]["conditions"].is_array() {
        pod["status"]["conditions"] = json!([]);
    }
    let scheduled = json!({
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": object::now_rfc3339(),
    });
    if let Some(conditions) = pod["status"]["conditions"].as_array_mut() {
        match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
            Some(c) if c["status"] == "True" => {}
            Some(c) => *c = scheduled,
            None => conditions.push(scheduled),
        }
    }
}
