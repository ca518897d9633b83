//! delete and deletecollection: finalizers, graceful deletion, propagation
//! policies and the protected namespaces.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Api, ListOptions, Target};
use crate::object;
use crate::status::ApiError;
use crate::storage::WriteOutcome;

/// `propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete dependents in the background (the default).
    Background,
    /// Delete dependents first, then the owner.
    Foreground,
    /// Leave dependents, removing their owner references.
    Orphan,
}

/// DeleteOptions, from the body or the query.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Propagation policy, if given.
    pub propagation: Option<Propagation>,
    /// Grace period, if given.
    pub grace_period_seconds: Option<i64>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_rv: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The deprecated `orphanDependents`.
    pub orphan_dependents: Option<bool>,
    /// The user deleting, for admission (`None`: the server itself).
    pub user: Option<Arc<crate::identity::UserInfo>>,
}

fn invalid_delete_options(field: &str, reason: &str, detail: String) -> ApiError {
    ApiError::invalid(
        "meta.k8s.io",
        "DeleteOptions",
        "",
        format!("DeleteOptions.meta.k8s.io \"\" is invalid: {field}: {detail}"),
        vec![crate::status::StatusCause {
            reason: reason.into(),
            message: detail,
            field: field.into(),
        }],
    )
}

impl DeleteOptions {
    /// Parses a propagation policy value.
    pub fn parse_propagation(v: &str) -> Result<Propagation, ApiError> {
        match v {
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            "Orphan" => Ok(Propagation::Orphan),
            other => Err(invalid_delete_options(
                "propagationPolicy",
                "FieldValueNotSupported",
                format!(
                    "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            )),
        }
    }

    /// Reads a DeleteOptions body (JSON), on top of query-derived options.
    pub fn merge_body(mut self, body: &Value) -> Result<DeleteOptions, ApiError> {
        if let Some(p) = body.get("propagationPolicy").and_then(Value::as_str) {
            self.propagation = Some(Self::parse_propagation(p)?);
        }
        if let Some(g) = body.get("gracePeriodSeconds").and_then(Value::as_i64) {
            self.grace_period_seconds = Some(g);
        }
        if let Some(o) = body.get("orphanDependents").and_then(Value::as_bool) {
            self.orphan_dependents = Some(o);
        }
        if let Some(p) = body.get("preconditions") {
            self.precondition_uid = p.get("uid").and_then(Value::as_str).map(str::to_string);
            self.precondition_rv = p
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if let Some(d) = body.get("dryRun").and_then(Value::as_array) {
            for v in d {
                match v.as_str() {
                    Some("All") => self.dry_run = true,
                    other => {
                        return Err(invalid_delete_options(
                            "dryRun",
                            "FieldValueNotSupported",
                            format!(
                                "Unsupported value: []string{{{:?}}}: supported values: \"All\"",
                                other.unwrap_or("")
                            ),
                        ));
                    }
                }
            }
        }
        self.check()
    }

    /// Checks option combinations.
    pub fn check(self) -> Result<DeleteOptions, ApiError> {
        if let (Some(_), Some(p)) = (self.orphan_dependents, self.propagation) {
            let name = match p {
                Propagation::Background => "Background",
                Propagation::Foreground => "Foreground",
                Propagation::Orphan => "Orphan",
            };
            return Err(invalid_delete_options(
                "propagationPolicy",
                "FieldValueInvalid",
                format!(
                    "Invalid value: \"{name}\": orphanDependents and deletionPropagation cannot be both set"
                ),
            ));
        }
        Ok(self)
    }

    fn effective_propagation(
        &self,
        rt: &crate::resources::ResourceType,
        existing: &[String],
    ) -> Option<Propagation> {
        if let Some(p) = self.propagation {
            return Some(p);
        }
        match self.orphan_dependents {
            Some(true) => return Some(Propagation::Orphan),
            Some(false) => return Some(Propagation::Background),
            None => {}
        }
        if existing.iter().any(|f| f == FOREGROUND) {
            return Some(Propagation::Foreground);
        }
        if existing.iter().any(|f| f == ORPHAN) {
            return Some(Propagation::Orphan);
        }
        // batch/v1 Jobs orphan their pods by default, for backwards compatibility.
        if rt.strategy.orphans_dependents_by_default() {
            return Some(Propagation::Orphan);
        }
        None
    }
}

/// Finalizer of foreground deletion.
pub const FOREGROUND: &str = "foregroundDeletion";
/// Finalizer of orphaning deletion.
pub const ORPHAN: &str = "orphan";

/// What a delete did.
#[derive(Debug)]
pub enum DeleteOutcome {
    /// The object is gone; its last state.
    Deleted(Arc<Value>),
    /// The object remains, marked for deletion (finalizers or grace period).
    Pending(Arc<Value>),
}

impl DeleteOutcome {
    /// The HTTP answer: the object, or a Success Status for kinds that
    /// don't return deleted objects.
    pub fn response(&self, rt: &crate::resources::ResourceType) -> Value {
        match self {
            DeleteOutcome::Pending(o) => (**o).clone(),
            DeleteOutcome::Deleted(o) if rt.strategy.returns_deleted_object() => (**o).clone(),
            DeleteOutcome::Deleted(o) => {
                let mut details =
                    json!({"name": object::name(o), "kind": rt.plural, "uid": object::uid(o)});
                if !rt.group.is_empty() {
                    details["group"] = json!(rt.group);
                }
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
            }
        }
    }
}

impl Api {
    /// Deletes one object.
    pub async fn delete(
        &self,
        t: &Target,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let rt = &t.rt;
        let key = t.key()?;
        if rt.strategy.undeletable(t.name()) {
            return Err(ApiError::forbidden(
                rt.reference(),
                t.name(),
                "this namespace may not be deleted",
            ));
        }
        loop {
            let Some(current) = self.store.get(&key).await? else {
                return Err(ApiError::not_found(rt.reference(), t.name()));
            };
            let view = self.view(rt, &current.object).await?;
            self.check_delete_preconditions(t, &view, opts)?;
            if !object::is_deleting(&view) {
                self.admit_delete(rt, &view, opts).await?;
            }
            let mut finalizers = object::finalizers(&view);
            let deleting = object::is_deleting(&view);
            if !deleting {
                match opts.effective_propagation(rt, &finalizers) {
                    Some(Propagation::Foreground) => {
                        finalizers.retain(|f| f != ORPHAN);
                        if !finalizers.iter().any(|f| f == FOREGROUND) {
                            finalizers.push(FOREGROUND.into());
                        }
                    }
                    Some(Propagation::Orphan) => {
                        finalizers.retain(|f| f != FOREGROUND);
                        if !finalizers.iter().any(|f| f == ORPHAN) {
                            finalizers.push(ORPHAN.into());
                        }
                    }
                    Some(Propagation::Background) => {
                        finalizers.retain(|f| f != ORPHAN && f != FOREGROUND)
                    }
                    None => {}
                }
            }
            // E.g. a CRD waits for its custom resources to be removed.
            if !deleting
                && let Some(f) = rt.strategy.deletion_finalizer()
                && !finalizers.iter().any(|x| x == f)
            {
                finalizers.push(f.to_string());
            }
            let ns_finalizers = rt.strategy.has_spec_finalizers()
                && view
                    .pointer("/spec/finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty());
            let grace = self.grace_period(rt, &view, opts);
            if finalizers.is_empty() && !ns_finalizers && grace == 0 {
                if opts.dry_run {
                    return Ok(DeleteOutcome::Deleted(view));
                }
                match self
                    .store
                    .delete(&key, current.object.clone(), current.revision)
                    .await?
                {
                    WriteOutcome::Committed(s) => {
                        return Ok(DeleteOutcome::Deleted(self.view(rt, &s.object).await?));
                    }
                    WriteOutcome::NotFound => {
                        return Err(ApiError::not_found(rt.reference(), t.name()));
                    }
                    _ => continue,
                }
            }
            if deleting && finalizers == object::finalizers(&view) {
                return Ok(DeleteOutcome::Pending(view));
            }
            let mut marked = (*view).clone();
            object::set_finalizers(&mut marked, &finalizers);
            if !deleting {
                let at = if grace > 0 {
                    let when = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(grace);
                    when.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
                } else {
                    object::now_rfc3339()
                };
                if let Some(m) = object::meta_mut(&mut marked) {
                    m.insert("deletionTimestamp".into(), json!(at));
                    m.insert("deletionGracePeriodSeconds".into(), json!(grace));
                    if let Some(g) = m
                        .get("generation")
                        .and_then(Value::as_i64)
                        .filter(|g| *g > 0)
                    {
                        m.insert("generation".into(), json!(g + 1));
                    }
                }
                rt.strategy.mark_deleting(&mut marked);
            }
            if opts.dry_run {
                return Ok(DeleteOutcome::Pending(Arc::new(marked)));
            }
            let stored = self.storage_form(rt, marked).await?;
            match self
                .store
                .update(&key, stored, current.revision, current.object.clone())
                .await?
            {
                WriteOutcome::Committed(s) => {
                    return Ok(DeleteOutcome::Pending(self.view(rt, &s.object).await?));
                }
                WriteOutcome::NotFound => {
                    return Err(ApiError::not_found(rt.reference(), t.name()));
                }
                _ => continue,
            }
        }
    }

    /// Hands a deletion to the admission stage (once, when it starts: a
    /// deletion that only waits for finalizers is not admitted again).
    async fn admit_delete(
        &self,
        rt: &crate::resources::ResourceType,
        old: &Value,
        opts: &DeleteOptions,
    ) -> Result<Vec<String>, ApiError> {
        let namespace = super::write::admission_namespace(rt, old);
        let request = super::AdmissionRequest {
            rt,
            operation: super::Operation::Delete,
            subresource: None,
            old: Some(old),
            field_validation: super::FieldValidation::Ignore,
            dry_run: opts.dry_run,
            user: opts.user.as_deref(),
            name: object::name(old),
            namespace: &namespace,
            before_validation: None,
        };
        self.admission.admit_delete(&request).await
    }

    fn grace_period(
        &self,
        rt: &crate::resources::ResourceType,
        obj: &Value,
        opts: &DeleteOptions,
    ) -> i64 {
        if !rt.strategy.graceful_deletion() {
            return 0;
        }
        let unscheduled = obj
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty();
        let finished = matches!(
            obj.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        );
        if unscheduled || finished {
            return 0;
        }
        let default = obj
            .pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(30);
        match opts.grace_period_seconds.unwrap_or(default) {
            g if g < 0 => 1,
            g => g,
        }
    }

    fn check_delete_preconditions(
        &self,
        t: &Target,
        obj: &Value,
        opts: &DeleteOptions,
    ) -> Result<(), ApiError> {
        let kind_ref = crate::status::ResourceRef {
            group: &t.rt.group,
            resource: &t.rt.kind,
        };
        if let Some(uid) = &opts.precondition_uid
            && uid != object::uid(obj)
        {
            return Err(ApiError::conflict(
                kind_ref,
                t.name(),
                &format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                    object::uid(obj)
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv {
            let current = object::meta_str(obj, "resourceVersion").unwrap_or("");
            if rv != current {
                return Err(ApiError::conflict(
                    kind_ref,
                    t.name(),
                    &format!(
                        "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({current}). The object might have been modified"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Deletes every object a list selects; answers the list as it was.
    pub async fn delete_collection(
        &self,
        rt: &Arc<crate::resources::ResourceType>,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<super::ListResult, ApiError> {
        let page = self.list(rt, namespace, list).await?;
        for item in &page.items {
            let t = Target {
                rt: rt.clone(),
                namespace: Some(object::namespace(item).to_string()).filter(|s| !s.is_empty()),
                name: Some(object::name(item).to_string()),
            };
            match self.delete(&t, opts).await {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(page)
    }
}
