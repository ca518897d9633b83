//! A DaemonSet's rolling update (`rollingUpdate`). Without surge, old pods
//! are deleted while fewer than `maxUnavailable` nodes lack an available
//! pod (unavailable old pods first), and the node loop puts new pods in
//! their place. With `maxSurge`, a new pod is started next to an old one on
//! up to `maxSurge` nodes at a time (at once where the old pod is not
//! available) and the old pod goes when the new one is available.

#[allow(unused_imports)]
use super::*;

fn rolling_param<'a>(ds: &'a Value, field: &str) -> Option<&'a Value> {
    podutil::at(ds, "/spec/updateStrategy/rollingUpdate")?
        .get(field)
        .filter(|v| !v.is_null())
}

/// `SurgeCount`: how many extra pods the update may run, of `nodes`.
fn surge_count(ds: &Value, nodes: i64) -> i64 {
    if !is_rolling(ds) {
        return 0;
    }
    match rolling_param(ds, "maxSurge") {
        Some(v) => podutil::int_or_percent(Some(v), nodes, true),
        None => 0,
    }
}

/// `UnavailableCount`: how many nodes may lack an available pod.
fn unavailable_count(ds: &Value, nodes: i64) -> i64 {
    if !is_rolling(ds) {
        return 0;
    }
    podutil::int_or_percent(rolling_param(ds, "maxUnavailable"), nodes, true)
}

/// `AllowsSurge`.
pub(super) fn allows_surge(ds: &Value) -> bool {
    surge_count(ds, 1) > 0
}

/// The node's undeleted new and old pod, unless it has two of either
/// (`findUpdatedPodsOnNode`).
type NewAndOld = (Option<Arc<Value>>, Option<Arc<Value>>);

fn updated_and_old(pods: &[Arc<Value>], hash: &str) -> Option<NewAndOld> {
    let (mut new, mut old) = (None, None);
    for pod in pods.iter().filter(|p| !object::is_deleting(p)) {
        let slot = if is_updated(pod, hash) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod.clone());
    }
    Some((new, old))
}

impl DaemonSetController {
    /// `rollingUpdate`.
    pub(super) async fn rolling_update(
        &self,
        ds: &Value,
        nodes: &[Arc<Value>],
        hash: &str,
    ) -> Result<(), ApiError> {
        let mut node_pods = self.node_pods(ds, false);
        // `updatedDesiredNodeCounts`.
        let mut desired = 0i64;
        let mut by_name: HashMap<&str, &Arc<Value>> = HashMap::new();
        for node in nodes {
            by_name.insert(object::name(node), node);
            if placement::node_fit(ds, node).should_run {
                desired += 1;
                node_pods.entry(object::name(node).to_string()).or_default();
            }
        }
        let mut max_unavailable = unavailable_count(ds, desired);
        let max_surge = surge_count(ds, desired);
        if desired > 0 && max_unavailable == 0 && max_surge == 0 {
            max_unavailable = 1;
        }
        let min_ready = int_at(ds, "/spec/minReadySeconds").unwrap_or(0);
        let now = podutil::now();
        let available = |p: &Value| podutil::availability(p, min_ready, now).0;
        let should_run = |node: &str| {
            by_name
                .get(node)
                .is_some_and(|n| placement::node_fit(ds, n).should_run)
        };

        if max_surge == 0 {
            let mut unavailable = 0i64;
            let mut replace: Vec<Arc<Value>> = Vec::new();
            let mut candidates: Vec<Arc<Value>> = Vec::new();
            for pods in node_pods.values() {
                let Some((new, old)) = updated_and_old(pods, hash) else {
                    unavailable += 1;
                    continue;
                };
                match (new, old) {
                    (None, None) | (Some(_), Some(_)) => unavailable += 1,
                    (Some(new), None) => {
                        if !available(&new) {
                            unavailable += 1;
                        }
                    }
                    (None, Some(old)) => {
                        if !available(&old) {
                            replace.push(old);
                            unavailable += 1;
                        } else if unavailable < max_unavailable {
                            candidates.push(old);
                        }
                    }
                }
            }
            let room = (max_unavailable - unavailable).clamp(0, candidates.len() as i64);
            replace.extend(candidates.into_iter().take(room as usize));
            return self.sync_nodes(ds, &replace, &[], hash).await;
        }

        let mut delete: Vec<Arc<Value>> = Vec::new();
        let mut leaving: Vec<Arc<Value>> = Vec::new();
        let mut candidates: Vec<String> = Vec::new();
        let mut allowed: Vec<String> = Vec::new();
        let (mut surging, mut num_available) = (0i64, 0i64);
        for (node, pods) in &node_pods {
            let Some((new, old)) = updated_and_old(pods, hash) else {
                surging += 1;
                continue;
            };
            if let Some(p) = old.as_ref().or(new.as_ref())
                && available(p)
            {
                num_available += 1;
            }
            match (new, old) {
                (_, None) => {}
                (None, Some(old)) => {
                    if !available(&old) {
                        if should_run(node) {
                            allowed.push(node.clone());
                        } else {
                            delete.push(old);
                        }
                    } else if !should_run(node) {
                        leaving.push(old);
                    } else if surging < max_surge {
                        candidates.push(node.clone());
                    }
                }
                (Some(new), Some(old)) => {
                    if available(&new) {
                        delete.push(old);
                    } else {
                        surging += 1;
                    }
                }
            }
        }
        // Pods on nodes that no longer fit go only once enough others are
        // available elsewhere.
        let deletable = (num_available - desired).clamp(0, leaving.len() as i64);
        delete.extend(leaving.into_iter().take(deletable as usize));
        let room = (max_surge - surging).clamp(0, candidates.len() as i64);
        allowed.extend(candidates.into_iter().take(room as usize));
        self.sync_nodes(ds, &delete, &allowed, hash).await
    }
}
