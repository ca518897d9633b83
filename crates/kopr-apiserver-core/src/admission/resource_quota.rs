//! The ResourceQuota admission plugin, kube-apiserver's last validating
//! plugin: a create (or an update of a service or claim) must fit every
//! quota of its namespace that applies to it, and its usage is added to
//! those quotas' `status.used` before the object is stored, so two writes
//! cannot both take the last unit. Writes in one namespace are checked one
//! at a time; a quota changed meanwhile is read again (as kube retries on
//! conflict). Refusals are kube's 403s (`exceeded quota: ...`,
//! `failed quota: ...`, `status unknown for quota: ...`).

use std::sync::Arc;

use serde_json::Value;

use crate::quota::{self, ResourceList};
use crate::registry::{AdmissionRequest, Operation};
use crate::status::{ApiError, ResourceRef};
use crate::storage::{Store, WriteOutcome};

/// How many times a quota update that lost a race is retried.
const RETRIES: usize = 3;
/// Namespace locks (striped by a hash of the namespace).
const STRIPES: usize = 64;

/// The plugin, reading and updating quotas in the store.
pub struct ResourceQuotaAdmission {
    store: Store,
    locks: Vec<tokio::sync::Mutex<()>>,
}

impl ResourceQuotaAdmission {
    /// The plugin over `store`.
    pub fn new(store: Store) -> ResourceQuotaAdmission {
        ResourceQuotaAdmission {
            store,
            locks: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
        }
    }

    fn lock_of(&self, namespace: &str) -> &tokio::sync::Mutex<()> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        namespace.hash(&mut h);
        &self.locks[h.finish() as usize % STRIPES]
    }

    /// Checks the write `obj` against the namespace's quotas and charges
    /// them (not on a dry run).
    ///
    /// # Errors
    /// kube's 403 when the write does not fit, 409 when the quotas kept
    /// changing, 500 when storage fails.
    pub async fn admit(&self, request: &AdmissionRequest<'_>, obj: &Value) -> Result<(), ApiError> {
        let rt = request.rt;
        let create = match request.operation {
            Operation::Create => true,
            Operation::Update => false,
            Operation::Delete => return Ok(()),
        };
        if !rt.namespaced || request.subresource.is_some() || request.namespace.is_empty() {
            return Ok(());
        }
        let evaluator = rt.evaluator();
        if !evaluator.handles(create) {
            return Ok(());
        }
        let prefix = format!("/core/resourcequotas/{}/", request.namespace);
        let mut quotas: Vec<Arc<Value>> = self.store.current_objects(&prefix);
        if quotas.is_empty() {
            return Ok(());
        }
        let _held = self.lock_of(request.namespace).lock().await;
        let refused = |why: String| {
            let name = match request.name {
                "" => obj["metadata"]["generateName"]
                    .as_str()
                    .unwrap_or("Unknown"),
                n => n,
            };
            ApiError::forbidden(
                ResourceRef {
                    group: &rt.group,
                    resource: &rt.plural,
                },
                name,
                &why,
            )
        };
        let mut last_conflict = None;
        for _ in 0..=RETRIES {
            let write = quota::Write {
                evaluator: &evaluator,
                obj,
                old: request.old,
                now: jiff::Timestamp::now(),
            };
            let charges = quota::check(&quotas, write).map_err(refused)?;
            if request.dry_run {
                return Ok(());
            }
            last_conflict = None;
            for (q, used) in quotas.iter().zip(charges) {
                let Some(used) = used else { continue };
                if let Some(name) = self.charge(q, &used).await? {
                    last_conflict = Some(name);
                    break;
                }
            }
            if last_conflict.is_none() {
                return Ok(());
            }
            quotas = self.store.current_objects(&prefix);
        }
        let name = last_conflict.unwrap_or_default();
        Err(ApiError::conflict(
            ResourceRef {
                group: "",
                resource: "resourcequotas",
            },
            &name,
            "the object has been modified; please apply your changes to the latest version and try again",
        ))
    }

    /// Writes `used` into the quota `q`'s status; the quota's name when it
    /// changed since it was read.
    async fn charge(
        &self,
        q: &Arc<Value>,
        used: &ResourceList,
    ) -> Result<Option<String>, ApiError> {
        let name = q["metadata"]["name"].as_str().unwrap_or("").to_string();
        let namespace = q["metadata"]["namespace"].as_str().unwrap_or("");
        let key = format!("/core/resourcequotas/{namespace}/{name}");
        let Some(cur) = self.store.current(&key) else {
            return Ok(Some(name));
        };
        if cur.object["metadata"]["resourceVersion"] != q["metadata"]["resourceVersion"] {
            return Ok(Some(name));
        }
        let mut next = (*cur.object).clone();
        if let Some(status) = next.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("used".into(), quota::list::to_json(used));
        }
        match self
            .store
            .update(&key, next, cur.revision, cur.object.clone())
            .await
        {
            Ok(WriteOutcome::Committed(_)) => Ok(None),
            Ok(_) => Ok(Some(name)),
            Err(e) => Err(ApiError::internal(e)),
        }
    }
}
