//! Rollouts and scaling: rolling update and recreate, old ReplicaSets scaled
//! down within `maxUnavailable`, proportional scaling of a resized Deployment.

#[allow(unused_imports)]
use super::*;

impl DeploymentController {
    pub(super) async fn rollout_rolling(
        &self,
        d: &mut Dep,
        rs_list: Vec<Arc<Value>>,
    ) -> Result<Option<Duration>, ApiError> {
        let (new, mut old) = self.all_replica_sets(d, rs_list, true).await?;
        let Some(mut new_rs) = new else {
            return Ok(None);
        };
        let mut all: Vec<Arc<Value>> = old.clone();
        all.push(new_rs.clone());
        // Scale up, if we can.
        let scaled_up = if replicas(&new_rs) == d.replicas {
            false
        } else {
            let to = if replicas(&new_rs) > d.replicas {
                d.replicas
            } else {
                self.new_rs_new_replicas(d, &all, &new_rs)
            };
            let (scaled, updated) = self.scale(d, &new_rs, to).await?;
            new_rs = updated;
            Self::replace(&mut all, &new_rs);
            scaled
        };
        if scaled_up {
            return self.sync_rollout_status(d, &all, Some(&new_rs)).await;
        }
        // Scale down, if we can.
        let scaled_down = self.reconcile_old(d, &mut all, &mut old, &new_rs).await?;
        if scaled_down {
            return self.sync_rollout_status(d, &all, Some(&new_rs)).await;
        }
        if self.deployment_complete(d, &d.status) {
            self.cleanup(d, &old).await?;
        }
        self.sync_rollout_status(d, &all, Some(&new_rs)).await
    }

    /// `reconcileOldReplicaSets`.
    pub(super) async fn reconcile_old(
        &self,
        d: &Dep,
        all: &mut [Arc<Value>],
        old: &mut [Arc<Value>],
        new_rs: &Arc<Value>,
    ) -> Result<bool, ApiError> {
        let old_count = sum(&active(old), replicas);
        if old_count == 0 {
            return Ok(false);
        }
        let all_count = sum(all, replicas);
        let min_available = d.replicas - d.max_unavailable();
        let new_unavailable = replicas(new_rs) - status_int(new_rs, "availableReplicas");
        let max_scaled_down = all_count - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        // Clean up unhealthy replicas first.
        let mut targets = active(old);
        targets.sort_by_key(|r| podutil::creation_key(r));
        let mut cleaned = 0;
        for rs in targets.iter_mut() {
            if cleaned >= max_scaled_down {
                break;
            }
            let r = replicas(rs);
            let available = status_int(rs, "availableReplicas");
            if r == 0 || r == available {
                continue;
            }
            let n = (max_scaled_down - cleaned).min(r - available);
            let (_, updated) = self.scale(d, rs, r - n).await?;
            *rs = updated.clone();
            Self::replace(all, &updated);
            Self::replace(old, &updated);
            cleaned += n;
        }
        // Then scale down within maxUnavailable.
        let available = sum(all, |r| status_int(r, "availableReplicas"));
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for rs in targets.iter_mut() {
                if scaled >= total {
                    break;
                }
                let r = replicas(rs);
                if r == 0 {
                    continue;
                }
                let n = r.min(total - scaled);
                let (_, updated) = self.scale(d, rs, r - n).await?;
                Self::replace(all, &updated);
                Self::replace(old, &updated);
                scaled += n;
            }
        }
        Ok(cleaned + scaled > 0)
    }

    pub(super) async fn rollout_recreate(
        &self,
        d: &mut Dep,
        rs_list: Vec<Arc<Value>>,
    ) -> Result<Option<Duration>, ApiError> {
        let (mut new, mut old) = self.all_replica_sets(d, rs_list.clone(), false).await?;
        let mut all: Vec<Arc<Value>> = old.iter().cloned().chain(new.clone()).collect();
        // Scale down old replica sets.
        let mut scaled_down = false;
        for rs in active(&old) {
            let (scaled, updated) = self.scale(d, &rs, 0).await?;
            scaled_down |= scaled;
            Self::replace(&mut all, &updated);
            Self::replace(&mut old, &updated);
        }
        if scaled_down {
            return self.sync_rollout_status(d, &all, new.as_ref()).await;
        }
        // Wait for the old pods to be gone.
        let old_running = old.iter().any(|rs| {
            status_int(rs, "replicas") > 0
                || self
                    .informer
                    .controlled_by(Kind::Pod, object::uid(rs))
                    .iter()
                    .any(|p| !podutil::is_terminal(p))
        });
        if old_running {
            return self.sync_rollout_status(d, &all, new.as_ref()).await;
        }
        if new.is_none() {
            let (n, o) = self.all_replica_sets(d, rs_list, true).await?;
            new = n;
            old = o;
            all = old.iter().cloned().chain(new.clone()).collect();
        }
        if let Some(rs) = new.clone() {
            let (_, updated) = self.scale(d, &rs, d.replicas).await?;
            Self::replace(&mut all, &updated);
            new = Some(updated);
        }
        if self.deployment_complete(d, &d.status) {
            self.cleanup(d, &old).await?;
        }
        self.sync_rollout_status(d, &all, new.as_ref()).await
    }

    /// `sync`: scaling without a rollout (paused, or a scaling event).
    pub(super) async fn sync_scale(
        &self,
        d: &mut Dep,
        rs_list: Vec<Arc<Value>>,
    ) -> Result<Option<Duration>, ApiError> {
        let (new, old) = self.all_replica_sets(d, rs_list, false).await?;
        let mut all: Vec<Arc<Value>> = old.iter().cloned().chain(new.clone()).collect();
        self.proportional_scale(d, &mut all, new.as_ref()).await?;
        let new = new.and_then(|n| {
            all.iter()
                .find(|r| object::uid(r) == object::uid(&n))
                .cloned()
        });
        if d.paused {
            let old: Vec<Arc<Value>> = all
                .iter()
                .filter(|r| {
                    new.as_ref()
                        .is_none_or(|n| object::uid(n) != object::uid(r))
                })
                .cloned()
                .collect();
            self.cleanup(d, &old).await?;
        }
        self.sync_status(d, &all, new.as_ref()).await?;
        Ok(None)
    }

    /// `scale`: scales the active ReplicaSets to the Deployment's size,
    /// proportionally while several are active.
    pub(super) async fn proportional_scale(
        &self,
        d: &Dep,
        all: &mut [Arc<Value>],
        new: Option<&Arc<Value>>,
    ) -> Result<(), ApiError> {
        let mut actives = active(all);
        let single = match actives.len() {
            0 => new.cloned().or_else(|| {
                let mut sorted = all.to_vec();
                sorted.sort_by_key(|r| podutil::creation_key(r));
                sorted.last().cloned()
            }),
            1 => actives.first().cloned(),
            _ => None,
        };
        if let Some(rs) = single {
            if replicas(&rs) != d.replicas {
                let (_, updated) = self.scale(d, &rs, d.replicas).await?;
                Self::replace(all, &updated);
            }
            return Ok(());
        }
        // The new ReplicaSet is saturated: scale the old ones down.
        if let Some(n) = new
            && replicas(n) == d.replicas
            && annotation(n, DESIRED_REPLICAS) == Some(d.replicas.to_string().as_str())
            && status_int(n, "availableReplicas") == d.replicas
        {
            for rs in actives.iter().filter(|r| object::uid(r) != object::uid(n)) {
                let (_, updated) = self.scale(d, rs, 0).await?;
                Self::replace(all, &updated);
            }
            return Ok(());
        }
        if d.recreate {
            return Ok(());
        }
        let allowed = if d.replicas > 0 {
            d.replicas + d.max_surge()
        } else {
            0
        };
        let to_add = allowed - sum(&actives, replicas);
        if to_add > 0 {
            // Larger first, then newer first.
            actives.sort_by(|a, b| {
                replicas(b)
                    .cmp(&replicas(a))
                    .then_with(|| podutil::creation_key(b).cmp(&podutil::creation_key(a)))
            });
        } else {
            // Larger first, then older first.
            actives.sort_by(|a, b| {
                replicas(b)
                    .cmp(&replicas(a))
                    .then_with(|| podutil::creation_key(a).cmp(&podutil::creation_key(b)))
            });
        }
        let mut added = 0;
        let mut sizes: Vec<i64> = Vec::with_capacity(actives.len());
        for rs in &actives {
            if to_add == 0 {
                sizes.push(replicas(rs));
                continue;
            }
            let proportion = self.proportion(d, rs, to_add, added);
            sizes.push(replicas(rs) + proportion);
            added += proportion;
        }
        let leftover = to_add - added;
        if leftover != 0
            && let Some(first) = sizes.first_mut()
        {
            *first = (*first + leftover).max(0);
        }
        for (rs, size) in actives.iter().zip(sizes) {
            let (_, updated) = self.scale(d, rs, size).await?;
            Self::replace(all, &updated);
        }
        Ok(())
    }

    /// `GetProportion`.
    pub(super) fn proportion(&self, d: &Dep, rs: &Value, to_add: i64, added: i64) -> i64 {
        if replicas(rs) == 0 || to_add == 0 || to_add == added {
            return 0;
        }
        let fraction = if d.replicas == 0 {
            -replicas(rs)
        } else {
            let deployment_replicas = d.replicas + d.max_surge();
            let annotated = annotation(rs, MAX_REPLICAS)
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or_else(|| d.status_int("replicas"));
            if annotated == 0 {
                0
            } else {
                let size = (replicas(rs) * deployment_replicas) as f64 / annotated as f64;
                size.round() as i64 - replicas(rs)
            }
        };
        let allowed = to_add - added;
        if to_add > 0 {
            fraction.min(allowed)
        } else {
            fraction.max(allowed)
        }
    }

    pub(super) async fn is_scaling_event(
        &self,
        d: &mut Dep,
        rs_list: Vec<Arc<Value>>,
    ) -> Result<bool, ApiError> {
        let (new, old) = self.all_replica_sets(d, rs_list, false).await?;
        let all: Vec<Arc<Value>> = old.into_iter().chain(new).collect();
        Ok(active(&all).iter().any(|rs| {
            annotation(rs, DESIRED_REPLICAS)
                .and_then(|s| s.parse::<i64>().ok())
                .is_some_and(|desired| desired != d.replicas)
        }))
    }
}
