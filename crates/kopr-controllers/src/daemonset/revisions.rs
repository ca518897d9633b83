//! A DaemonSet's ControllerRevisions, as kube's DaemonSet controller keeps
//! them: the revision holding the current template (created as
//! `<ds>-<hash>` when missing, renumbered past the others when an old
//! template comes back, duplicates merged into the newest), a hash name
//! collision counted in `status.collisionCount`, and old revisions beyond
//! `revisionHistoryLimit` deleted unless a pod still uses them.

use std::collections::HashSet;

#[allow(unused_imports)]
use super::*;
use crate::templates;
use crate::writes::Part;

impl DaemonSetController {
    /// `constructHistory`: the current revision and the old ones.
    pub(super) async fn construct_history(
        &self,
        ds: &Arc<Value>,
        selector: &LabelSelector,
    ) -> Result<(Arc<Value>, Vec<Arc<Value>>), ApiError> {
        let owner = Self::owner_ref(ds);
        let all = history::claim(&self.api, &self.informer, ds, selector, &owner).await?;
        let patch = templates::replace_patch(ds);
        let mut current = Vec::new();
        let mut old = Vec::new();
        for cr in all {
            // Revisions from before the hash label get their name as hash.
            let cr = if history::hash_label(&cr).is_empty() {
                let name = object::name(&cr).to_string();
                history::set_hash_label(&self.api, &cr, &name).await?
            } else {
                cr
            };
            if history::data(&cr) == &patch {
                current.push(cr);
            } else {
                old.push(cr);
            }
        }
        let next = history::max_number(&old) + 1;
        let cur = if current.is_empty() {
            self.snapshot(ds, next, patch).await?
        } else {
            let cur = self.dedup(ds, current).await?;
            if history::number(&cur) < next {
                history::renumber(&self.api, &cur, next).await?
            } else {
                cur
            }
        };
        Ok((cur, old))
    }

    /// `snapshot`: records the current template as a new revision.
    async fn snapshot(
        &self,
        ds: &Arc<Value>,
        revision: i64,
        patch: Value,
    ) -> Result<Arc<Value>, ApiError> {
        let collision = int_at(ds, "/status/collisionCount");
        let hash = templates::hash(templates::of(ds), collision);
        let name = format!("{}-{hash}", object::name(ds));
        let body = history::new_revision(
            ds,
            Self::owner_ref(ds),
            &name,
            &hash,
            patch.clone(),
            revision,
        );
        let err = match history::create(&self.api, body).await {
            Ok(cr) => return Ok(cr),
            Err(e) if e.reason == "AlreadyExists" => e,
            Err(e) => return Err(e),
        };
        let ns = object::namespace(ds);
        if let Some(existing) = history::get(&self.api, ns, &name).await?
            && history::data(&existing) == &patch
        {
            return Ok(existing);
        }
        // A different template under the same name: count the collision so
        // the next hash differs (unless our count was stale).
        let Some(t) = writes::target_of(&self.api, Kind::DaemonSet, ds) else {
            return Err(err);
        };
        writes::update_same_uid(
            &self.api,
            &t,
            Part::Status,
            podutil::CONTROLLER_MANAGER,
            object::uid(ds),
            |cur| {
                let stored = int_at(cur, "/status/collisionCount");
                if stored != collision {
                    return Err(writes::conflict(
                        &t,
                        cur,
                        "found a stale collision count; will retry",
                    ));
                }
                let mut new = cur.clone();
                if !new.get("status").is_some_and(Value::is_object) {
                    new["status"] = json!({});
                }
                new["status"]["collisionCount"] = json!(stored.unwrap_or(0) + 1);
                Ok(new)
            },
        )
        .await?;
        Err(err)
    }

    /// `dedupCurHistories`: keeps the newest of several revisions of the
    /// current template, moves the pods of the others to it and deletes
    /// them.
    async fn dedup(
        &self,
        ds: &Value,
        mut current: Vec<Arc<Value>>,
    ) -> Result<Arc<Value>, ApiError> {
        current.sort_by(history::by_number);
        let Some(keep) = current.pop() else {
            return Err(ApiError::internal("no current revision"));
        };
        if current.is_empty() {
            return Ok(keep);
        }
        let keep_hash = history::hash_label(&keep).to_string();
        let dropped: HashSet<String> = current
            .iter()
            .map(|c| history::hash_label(c).to_string())
            .collect();
        for pod in self.informer.controlled_by(Kind::Pod, object::uid(ds)) {
            if !dropped.contains(history::hash_label(&pod)) {
                continue;
            }
            let Some(t) = writes::target_of(&self.api, Kind::Pod, &pod) else {
                continue;
            };
            let relabel = writes::update_same_uid(
                &self.api,
                &t,
                Part::Object,
                podutil::CONTROLLER_MANAGER,
                object::uid(&pod),
                |cur| {
                    let mut new = cur.clone();
                    if let Some(m) = object::meta_mut(&mut new) {
                        let labels = m.entry("labels").or_insert_with(|| json!({}));
                        labels[history::REVISION_HASH] = json!(keep_hash);
                    }
                    Ok(new)
                },
            )
            .await;
            writes::unless_gone(relabel)?;
        }
        for cr in &current {
            history::delete(&self.api, cr).await?;
        }
        Ok(keep)
    }

    /// `cleanupHistory`: deletes the oldest unused revisions beyond
    /// `revisionHistoryLimit`.
    pub(super) async fn cleanup_history(
        &self,
        ds: &Value,
        old: &[Arc<Value>],
    ) -> Result<(), ApiError> {
        let limit = int_at(ds, "/spec/revisionHistoryLimit").unwrap_or(10);
        let mut to_kill = old.len() as i64 - limit;
        if to_kill <= 0 {
            return Ok(());
        }
        let live: HashSet<String> = self
            .node_pods(ds, true)
            .values()
            .flatten()
            .map(|p| history::hash_label(p).to_string())
            .filter(|h| !h.is_empty())
            .collect();
        let mut old = old.to_vec();
        old.sort_by(history::by_number);
        for cr in old {
            if to_kill <= 0 {
                break;
            }
            if live.contains(history::hash_label(&cr)) {
                continue;
            }
            history::delete(&self.api, &cr).await?;
            to_kill -= 1;
        }
        Ok(())
    }
}
