//! A DaemonSet's pods node by node (`manage`, `podsShouldBeOnNode`,
//! `syncNodes`): which nodes need a pod, which pods must go (on nodes that
//! should not run one, finished, surplus, or waiting for a node that no
//! longer exists), and the creates (in slow-start batches) and deletes.
//! Failed pods are deleted with a per-node back-off (1 s doubling to 15
//! min), as kube's `failedPodsBackoff`.

use std::collections::HashSet;

use tokio::time::Instant;

#[allow(unused_imports)]
use super::*;

/// Most pods created or deleted in one sync (`BurstReplicas`).
const BURST: usize = 250;
/// First delay before deleting a failed pod on the same node again.
const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// Longest such delay.
const BACKOFF_MAX: Duration = Duration::from_secs(15 * 60);

/// One node's failed-pod back-off (`flowcontrol.Backoff` entry).
pub(super) struct Backoff {
    delay: Duration,
    last: Instant,
}

/// What one node needs.
#[derive(Default)]
pub(super) struct NodePlan {
    /// Create a pod on the node.
    pub(super) create: bool,
    /// Pods to delete.
    pub(super) delete: Vec<Arc<Value>>,
    /// Look again after this long (failed pods in back-off).
    pub(super) again: Option<Duration>,
}

impl DaemonSetController {
    /// Drops back-off entries unused for twice the longest delay (the
    /// back-off's `GC`).
    pub(super) fn gc_backoff(&self) {
        if let Ok(mut map) = self.failed_backoff.lock() {
            let now = Instant::now();
            map.retain(|_, b| now.duration_since(b.last) < BACKOFF_MAX * 2);
        }
    }

    /// Whether the node's failed pod may be deleted now; records the
    /// deletion (`IsInBackOffSinceUpdate` / `Next`). Otherwise how long to
    /// wait.
    fn failed_pod_delay(&self, ds: &Value, node: &str) -> Option<Duration> {
        let key = format!("{}/{node}", object::uid(ds));
        let now = Instant::now();
        let Ok(mut map) = self.failed_backoff.lock() else {
            return None;
        };
        if let Some(b) = map.get(&key)
            && now.duration_since(b.last) < b.delay
        {
            return Some(b.delay - now.duration_since(b.last));
        }
        let delay = match map.get(&key) {
            Some(b) if now.duration_since(b.last) <= BACKOFF_MAX * 2 => {
                (b.delay * 2).min(BACKOFF_MAX)
            }
            _ => BACKOFF_INITIAL,
        };
        map.insert(key, Backoff { delay, last: now });
        None
    }

    /// `podsShouldBeOnNode`.
    fn plan_node(
        &self,
        ds: &Value,
        node: &Value,
        pods: Option<&Vec<Arc<Value>>>,
        hash: &str,
    ) -> NodePlan {
        let fit = placement::node_fit(ds, node);
        let name = object::name(node);
        let mut plan = NodePlan::default();
        let Some(pods) = pods.filter(|p| !p.is_empty()) else {
            plan.create = fit.should_run;
            return plan;
        };
        if !fit.should_continue_running {
            plan.delete = pods
                .iter()
                .filter(|p| !object::is_deleting(p))
                .cloned()
                .collect();
            return plan;
        }
        let mut running: Vec<Arc<Value>> = Vec::new();
        for pod in pods.iter().filter(|p| !object::is_deleting(p)) {
            match podutil::phase(pod) {
                "Failed" => {
                    if let Some(wait) = self.failed_pod_delay(ds, name) {
                        plan.again = podutil::sooner(plan.again, wait);
                        continue;
                    }
                    self.recorder.warning(
                        ds,
                        "FailedDaemonPod",
                        format!(
                            "Found failed daemon pod {}/{} on node {name}, will try to kill it",
                            object::namespace(pod),
                            object::name(pod)
                        ),
                        &self.source,
                    );
                    plan.delete.push(pod.clone());
                }
                "Succeeded" => {
                    self.recorder.normal(
                        ds,
                        "SucceededDaemonPod",
                        format!(
                            "Found succeeded daemon pod {}/{} on node {name}, will try to delete it",
                            object::namespace(pod),
                            object::name(pod)
                        ),
                        &self.source,
                    );
                    plan.delete.push(pod.clone());
                }
                _ => running.push(pod.clone()),
            }
        }
        oldest_first(&mut running);
        if !rolling::allows_surge(ds) {
            plan.delete.extend(running.into_iter().skip(1));
            return plan;
        }
        if running.len() <= 1 {
            plan.create = running.is_empty() && fit.should_run;
            return plan;
        }
        // Surging: keep the oldest new pod, and the oldest old pod only while
        // it is ready and the new one is not yet available.
        let mut oldest_new: Option<Arc<Value>> = None;
        let mut oldest_old: Option<Arc<Value>> = None;
        for pod in running {
            let slot = if history::hash_label(&pod) == hash {
                &mut oldest_new
            } else {
                &mut oldest_old
            };
            if slot.is_none() {
                *slot = Some(pod);
            } else {
                plan.delete.push(pod);
            }
        }
        if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
            let min_ready = int_at(ds, "/spec/minReadySeconds").unwrap_or(0);
            if !podutil::is_ready(&old) || podutil::availability(&new, min_ready, podutil::now()).0
            {
                plan.delete.push(old);
            }
        }
        plan
    }

    /// `manage`: creates and deletes pods so each node runs what it should.
    pub(super) async fn manage(
        &self,
        ds: &Value,
        nodes: &[Arc<Value>],
        hash: &str,
    ) -> Result<Option<Duration>, ApiError> {
        let node_pods = self.node_pods(ds, false);
        let mut create: Vec<String> = Vec::new();
        let mut delete: Vec<Arc<Value>> = Vec::new();
        let mut again = None;
        for node in nodes {
            let plan = self.plan_node(ds, node, node_pods.get(object::name(node)), hash);
            if plan.create {
                create.push(object::name(node).to_string());
            }
            delete.extend(plan.delete);
            if let Some(d) = plan.again {
                again = podutil::sooner(again, d);
            }
        }
        // Unbound pods waiting for nodes that are gone.
        let existing: HashSet<&str> = nodes.iter().map(|n| object::name(n)).collect();
        for (node, pods) in &node_pods {
            if existing.contains(node.as_str()) {
                continue;
            }
            delete.extend(
                pods.iter()
                    .filter(|p| podutil::str_at(p, "/spec/nodeName").is_empty())
                    .cloned(),
            );
        }
        self.sync_nodes(ds, &delete, &create, hash).await?;
        Ok(again)
    }

    /// `syncNodes`: deletes `delete` and creates a pod on each of `create`.
    pub(super) async fn sync_nodes(
        &self,
        ds: &Value,
        delete: &[Arc<Value>],
        create: &[String],
        hash: &str,
    ) -> Result<(), ApiError> {
        let mut first_err: Option<ApiError> = None;
        let create = &create[..create.len().min(BURST)];
        let template = placement::pod_template(ds, hash);
        let mut pos = 0;
        let mut batch = 1;
        while pos < create.len() {
            let n = batch.min(create.len() - pos);
            let results = futures::future::join_all(
                create[pos..pos + n]
                    .iter()
                    .map(|node| self.create_pod(ds, &template, node)),
            )
            .await;
            let failed = results.into_iter().filter_map(Result::err).next();
            pos += n;
            batch *= 2;
            if let Some(e) = failed {
                first_err.get_or_insert(e);
                break;
            }
        }
        let delete = &delete[..delete.len().min(BURST)];
        let results =
            futures::future::join_all(delete.iter().map(|pod| self.delete_pod(ds, pod))).await;
        if let Some(e) = results.into_iter().filter_map(Result::err).next() {
            first_err.get_or_insert(e);
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    async fn create_pod(&self, ds: &Value, template: &Value, node: &str) -> Result<(), ApiError> {
        let Some(rt) = self.api.catalog.get("", "v1", "pods") else {
            return Ok(());
        };
        let ns = object::namespace(ds);
        let mut pod = podutil::pod_from_template(template, ns, Self::owner_ref(ds));
        pod["metadata"]["generateName"] = json!(format!("{}-", object::name(ds)));
        placement::pin_to_node(&mut pod["spec"], node);
        let opts = podutil::writer(podutil::CONTROLLER_MANAGER);
        match self.api.create(&rt, Some(ns), pod, &opts).await {
            Ok(w) => {
                self.recorder.normal(
                    ds,
                    "SuccessfulCreate",
                    format!("Created pod: {}", object::name(&w.object)),
                    &self.source,
                );
                Ok(())
            }
            Err(e) if e.causes.iter().any(|c| c.reason == "NamespaceTerminating") => Ok(()),
            Err(e) => {
                self.recorder.warning(
                    ds,
                    "FailedCreate",
                    format!("Error creating: {}", e.message),
                    &self.source,
                );
                Err(e)
            }
        }
    }

    async fn delete_pod(&self, ds: &Value, pod: &Value) -> Result<(), ApiError> {
        let Some(t) = writes::target_of(&self.api, Kind::Pod, pod) else {
            return Ok(());
        };
        match writes::delete_same_uid(&self.api, &t, object::uid(pod), None).await {
            Ok(true) => {
                self.recorder.normal(
                    ds,
                    "SuccessfulDelete",
                    format!("Deleted pod: {}", object::name(pod)),
                    &self.source,
                );
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => {
                self.recorder.warning(
                    ds,
                    "FailedDelete",
                    format!("Error deleting: {}", e.message),
                    &self.source,
                );
                Err(e)
            }
        }
    }
}
