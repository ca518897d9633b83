//! create, update (PUT) and patch, with kube-apiserver's metadata rules,
//! optimistic concurrency, finalizer rules, dry runs and field managers.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Api, Target, convert, strategy};
use crate::object;
use crate::patch::PatchDocument;
use crate::resources::ResourceType;
use crate::status::{ApiError, StatusCause};
use crate::storage::WriteOutcome;

/// `fieldValidation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields with a warning (the default).
    #[default]
    Warn,
    /// Reject unknown fields.
    Strict,
}

/// Options shared by create, update and patch.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `fieldManager`, or the User-Agent prefix.
    pub field_manager: String,
    /// `force` (apply only).
    pub force: bool,
    /// The user writing, for admission (`None`: the server itself).
    pub user: Option<std::sync::Arc<crate::identity::UserInfo>>,
}

impl From<&WriteOptions> for super::patching::PatchOptions {
    fn from(opts: &WriteOptions) -> Self {
        super::patching::PatchOptions {
            field_manager: opts.field_manager.clone(),
            force: opts.force,
        }
    }
}

impl WriteOptions {
    /// The default field manager for a User-Agent: its part before `/`.
    pub fn manager_from_user_agent(user_agent: &str) -> String {
        let prefix = user_agent.split('/').next().unwrap_or("");
        prefix
            .chars()
            .filter(|c| !c.is_control())
            .take(128)
            .collect()
    }
}

/// The result of a write: the object, whether it was created, and warnings
/// for the `Warning` header.
#[derive(Debug)]
pub struct Written {
    /// The object as stored (or as it would be, for a dry run).
    pub object: Arc<Value>,
    /// Whether the write created the object.
    pub created: bool,
    /// Warnings for the client.
    pub warnings: Vec<String>,
    /// The change the write published. When `object` is that change's own object (served
    /// as stored, not converted), its watch line holds the object's encoding, which the
    /// response can share with the watchers; the response checks that before it does.
    pub change: Option<Arc<crate::storage::WatchEvent>>,
}

impl Written {
    /// A committed write's answer: `object` is `stored`'s as the client sees it.
    fn committed(
        object: Arc<Value>,
        stored: crate::storage::Stored,
        created: bool,
        warnings: Vec<String>,
    ) -> Written {
        Written {
            object,
            created,
            warnings,
            change: stored.change,
        }
    }
}

/// How a read-modify-write treats its input.
#[derive(Debug, Clone, Copy)]
pub(super) struct UpdateHow<'a> {
    /// The subresource written, if any.
    subresource: Option<&'a str>,
    /// The client's resourceVersion precondition (a mismatch is a 409).
    precondition: Option<&'a str>,
    /// A PUT (the body's resourceVersion was taken as `precondition`)
    /// rather than a patch (whose result may carry one).
    is_put: bool,
    /// A server-side apply, which records its own managedFields.
    is_apply: bool,
}

/// Alphabet of generated name suffixes.
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Attempts to find a free generated name.
const GENERATE_NAME_ATTEMPTS: usize = 8;

fn generate_name(base: &str) -> String {
    let base: String = base.chars().take(58).collect();
    let suffix: String = (0..5)
        .map(|_| NAME_ALPHABET[rand::random_range(0..NAME_ALPHABET.len())] as char)
        .collect();
    format!("{base}{suffix}")
}

/// Makes the body's namespace agree with the request's, as kube-apiserver does.
fn reconcile_namespace(
    rt: &ResourceType,
    obj: &mut Value,
    namespace: Option<&str>,
) -> Result<(), ApiError> {
    let Some(meta) = object::meta_mut(obj) else {
        return Err(ApiError::bad_request("the object provided is unrecognized"));
    };
    match (rt.namespaced, namespace) {
        (true, Some(ns)) => match meta.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                meta.insert("namespace".into(), json!(ns));
            }
            Some(body_ns) if body_ns == ns => {}
            Some(_) => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        },
        _ => {
            meta.remove("namespace");
        }
    }
    Ok(())
}

/// Checks the body's apiVersion and kind against the endpoint, filling them in when absent.
fn reconcile_type(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    let api_version = rt.api_version();
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request("the object provided is unrecognized"));
    };
    let body_kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let body_version = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !body_kind.is_empty() && body_kind != rt.kind {
        let v = body_version.rsplit('/').next().unwrap_or("");
        return Err(ApiError::bad_request(format!(
            "{body_kind} in version \"{v}\" cannot be handled as a {}: no kind \"{body_kind}\" is registered for version \"{body_version}\"",
            rt.kind
        )));
    }
    if !body_version.is_empty() && body_version != api_version {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({body_version}) does not match the expected API version ({api_version})"
        )));
    }
    map.insert("apiVersion".into(), json!(api_version));
    map.insert("kind".into(), json!(rt.kind));
    Ok(())
}

/// The namespace admission sees for `obj`: its own, or for a Namespace its
/// name (as kube's handlers set it).
pub(super) fn admission_namespace(rt: &ResourceType, obj: &Value) -> String {
    if rt.namespaced {
        object::namespace(obj).to_string()
    } else if rt.strategy.is_namespace() {
        object::name(obj).to_string()
    } else {
        String::new()
    }
}

impl Api {
    /// Hands a new object state to the admission stage.
    async fn admit(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        old: Option<&Value>,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Vec<String>, ApiError> {
        self.admit_with(rt, obj, old, subresource, opts, None).await
    }

    async fn admit_with(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        old: Option<&Value>,
        subresource: Option<&str>,
        opts: &WriteOptions,
        before_validation: Option<super::admit::BeforeValidation<'_>>,
    ) -> Result<Vec<String>, ApiError> {
        let name = object::name(obj).to_string();
        let namespace = admission_namespace(rt, obj);
        let request = super::AdmissionRequest {
            name: &name,
            namespace: &namespace,
            rt,
            operation: if old.is_some() {
                super::Operation::Update
            } else {
                super::Operation::Create
            },
            subresource,
            old,
            field_validation: opts.field_validation,
            dry_run: opts.dry_run,
            user: opts.user.as_deref(),
            before_validation,
        };
        self.admission.admit(&request, obj).await
    }

    async fn check_namespace_for_create(
        &self,
        rt: &ResourceType,
        obj: &Value,
    ) -> Result<(), ApiError> {
        if !rt.namespaced {
            return Ok(());
        }
        let ns = object::namespace(obj);
        let ns_key = format!("/core/namespaces/{ns}");
        let Some(entry) = self.store.entry(&ns_key) else {
            return Err(ApiError::not_found(
                crate::status::ResourceRef {
                    group: "",
                    resource: "namespaces",
                },
                ns,
            ));
        };
        // Two fields of the namespace, read without decoding all of it (on every create).
        let terminating = match entry.view::<NamespaceState>() {
            Ok(state) => {
                state.status.phase.as_deref() == Some("Terminating")
                    || state.metadata.deletion_timestamp.is_some()
            }
            Err(_) => entry.object().is_some_and(|ns| {
                ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
                    || object::is_deleting(&ns)
            }),
        };
        if terminating {
            let name = match object::name(obj) {
                "" => object::meta_str(obj, "generateName").unwrap_or("Unknown"),
                n => n,
            };
            let mut e = ApiError::forbidden(
                rt.reference(),
                name,
                &format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            );
            e.causes.push(StatusCause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {ns} is being terminated"),
                field: "metadata.namespace".into(),
            });
            return Err(e);
        }
        Ok(())
    }

    /// Creates an object (POST to a collection).
    pub async fn create(
        &self,
        rt: &Arc<ResourceType>,
        namespace: Option<&str>,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        self.create_recorded(rt, namespace, obj, opts, false).await
    }

    /// Creates an object; `applied` when server-side apply already recorded
    /// its managedFields entry.
    async fn create_recorded(
        &self,
        rt: &Arc<ResourceType>,
        namespace: Option<&str>,
        mut obj: Value,
        opts: &WriteOptions,
        applied: bool,
    ) -> Result<Written, ApiError> {
        reconcile_type(rt, &mut obj)?;
        reconcile_namespace(rt, &mut obj, namespace)?;
        let (mut warnings, generate) = self.admit_for_create(rt, &mut obj, opts, applied).await?;
        let base = object::meta_str(&obj, "generateName")
            .unwrap_or("")
            .to_string();
        self.check_namespace_for_create(rt, &obj).await?;
        if rt.strategy.allocates_service_addresses() {
            self.allocate_service_addresses(&mut obj).await?;
        }
        let attempts = if generate { GENERATE_NAME_ATTEMPTS } else { 1 };
        let mut last_name = String::new();
        for attempt in 0..attempts {
            // Each attempt at a generated name starts from the object; a single attempt
            // takes it.
            let mut candidate = if generate {
                obj.clone()
            } else {
                std::mem::take(&mut obj)
            };
            if generate
                && attempt > 0
                && let Some(m) = object::meta_mut(&mut candidate)
            {
                m.insert("name".into(), json!(generate_name(&base)));
            }
            last_name = object::name(&candidate).to_string();
            let name = object::name(&candidate).to_string();
            let key = rt.key(namespace, &name);
            if opts.dry_run {
                if self.store.get(&key).await?.is_some() {
                    if generate {
                        continue;
                    }
                    return Err(ApiError::already_exists(rt.reference(), &name));
                }
                return Ok(Written {
                    object: convert::to_view(rt, &Arc::new(candidate)),
                    created: true,
                    warnings,
                    change: None,
                });
            }
            let stored = self.storage_form(rt, candidate).await?;
            match self.store.create(&key, stored).await? {
                WriteOutcome::Committed(s) => {
                    let object = self.view(rt, &s.object).await?;
                    return Ok(Written::committed(
                        object,
                        s,
                        true,
                        std::mem::take(&mut warnings),
                    ));
                }
                WriteOutcome::AlreadyExists if generate => continue,
                _ => {
                    let mut e = ApiError::already_exists(rt.reference(), &name);
                    if let Some(existing) = self.store.get(&key).await?
                        && object::is_deleting(&existing.object)
                    {
                        e.message = format!("object is being deleted: {}", e.message);
                    }
                    return Err(e);
                }
            }
        }
        let mut e = ApiError::already_exists(rt.reference(), &last_name);
        e.message = format!(
            "{}, the server was not able to generate a unique name for the object",
            e.message
        );
        e.retry_after_seconds = Some(1);
        Err(e)
    }

    async fn admit_for_create(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        opts: &WriteOptions,
        applied: bool,
    ) -> Result<(Vec<String>, bool), ApiError> {
        if let Some(meta) = object::meta_mut(obj) {
            if meta
                .get("resourceVersion")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
            {
                return Err(ApiError::internal(
                    "resourceVersion should not be set on objects to be created",
                ));
            }
            meta.remove("resourceVersion");
            for k in [
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "selfLink",
            ] {
                meta.remove(k);
            }
        }
        // kube's BeforeCreate, between mutating and validating admission: a generated name
        // (when mutation left none), the system fields, the kind's preparation.
        let generated = std::sync::atomic::AtomicBool::new(false);
        let prepare = |obj: &mut Value| {
            let base = object::meta_str(obj, "generateName")
                .unwrap_or("")
                .to_string();
            let unnamed = object::name(obj).is_empty();
            if let Some(meta) = object::meta_mut(obj) {
                if unnamed && !base.is_empty() {
                    meta.insert("name".into(), json!(generate_name(&base)));
                    generated.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                meta.insert("uid".into(), json!(object::new_uid()));
                meta.insert("creationTimestamp".into(), json!(object::now_rfc3339()));
            }
            // What the kind derives from its name and uid (a Job's selector).
            rt.strategy.default(rt, obj);
            strategy::prepare_for_create(rt, obj);
            if let (Some(user), Some(map)) = (opts.user.as_deref(), obj.as_object_mut()) {
                rt.strategy.record_requester(map, user);
            }
        };
        let warnings = self
            .admit_with(
                rt,
                obj,
                None,
                None,
                opts,
                Some(super::admit::BeforeValidation(&prepare)),
            )
            .await?;
        if !applied {
            super::patching::record_update(rt, None, obj, &opts.field_manager, None);
        }
        Ok((
            warnings,
            generated.load(std::sync::atomic::Ordering::Relaxed),
        ))
    }

    /// Replaces an object (PUT), on the main resource or a subresource.
    pub async fn update(
        &self,
        t: &Target,
        subresource: Option<&str>,
        mut body: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let rt = &t.rt;
        reconcile_type(rt, &mut body)?;
        reconcile_namespace(rt, &mut body, t.namespace.as_deref())?;
        match object::name(&body) {
            "" => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({} based on URL) was undeterminable: name must be provided",
                    t.name()
                )));
            }
            n if n != t.name() => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({})",
                    t.name()
                )));
            }
            _ => {}
        }
        let precondition = object::meta_str(&body, "resourceVersion")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let body = Arc::new(body);
        self.guaranteed_update(
            t,
            UpdateHow {
                subresource,
                precondition: precondition.as_deref(),
                is_put: true,
                is_apply: false,
            },
            opts,
            move |_current| Ok((*body).clone()),
        )
        .await
    }

    /// PUT: updates the object, or creates it for kinds that allow that.
    pub async fn update_or_create(
        &self,
        t: &Target,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        if subresource.is_none()
            && t.rt.strategy.allows_create_on_update()
            && self.store.get(&t.key()?).await?.is_none()
        {
            return self.create(&t.rt, t.namespace.as_deref(), body, opts).await;
        }
        self.update(t, subresource, body, opts).await
    }

    /// Read-modify-write for in-process controllers, retried on conflicts.
    pub async fn mutate(
        &self,
        t: &Target,
        opts: &WriteOptions,
        f: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<Written, ApiError> {
        self.guaranteed_update(
            t,
            UpdateHow {
                subresource: None,
                precondition: None,
                is_put: true,
                is_apply: false,
            },
            opts,
            f,
        )
        .await
    }

    /// Read-modify-write of the status subresource, for in-process controllers.
    pub async fn mutate_status(
        &self,
        t: &Target,
        opts: &WriteOptions,
        f: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<Written, ApiError> {
        let how = UpdateHow {
            subresource: Some("status"),
            precondition: None,
            is_put: true,
            is_apply: false,
        };
        self.guaranteed_update(t, how, opts, f).await
    }

    /// Sets `spec.replicas` (the scale subresource).
    pub async fn set_replicas(
        &self,
        t: &Target,
        replicas: Value,
        precondition: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let path = t.rt.scale_paths().spec_replicas;
        self.guaranteed_update(
            t,
            UpdateHow {
                subresource: None,
                precondition,
                is_put: true,
                is_apply: false,
            },
            opts,
            move |current| {
                let mut new = current.clone();
                crate::crd::set_value_at(&mut new, &path, replicas.clone());
                Ok(new)
            },
        )
        .await
    }

    /// Applies a patch to an object.
    pub async fn patch(
        &self,
        t: &Target,
        subresource: Option<&str>,
        doc: &PatchDocument,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let rt = t.rt.clone();
        let is_apply = matches!(doc, PatchDocument::Apply(_));
        if is_apply {
            let key = t.key()?;
            if self.store.get(&key).await?.is_none() {
                let applied = super::patching::apply_to(&rt, None, doc, &opts.into(), subresource)?;
                let written = self
                    .create_recorded(&rt, t.namespace.as_deref(), applied, opts, true)
                    .await;
                return match written {
                    Err(e) if e.reason == "AlreadyExists" => {
                        Box::pin(self.patch(t, subresource, doc, opts)).await
                    }
                    other => other,
                };
            }
        }
        let doc = Arc::new(doc.clone());
        let opts_for_patch: super::patching::PatchOptions = opts.into();
        let rt2 = rt.clone();
        let url_name = t.name().to_string();
        let sub = subresource.map(str::to_string);
        self.guaranteed_update(t, UpdateHow { subresource, precondition: None, is_put: false, is_apply }, opts, move |current| {
            let patched = super::patching::apply_to(&rt2, Some(current), &doc, &opts_for_patch, sub.as_deref())?;
            let n = object::name(&patched);
            if n != url_name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({url_name})"
                )));
            }
            Ok(patched)
        })
        .await
    }

    /// Read-modify-write with retries on conflict; `precondition` is the
    /// client's resourceVersion (a mismatch is a 409, not a retry).
    pub(super) async fn guaranteed_update(
        &self,
        t: &Target,
        how: UpdateHow<'_>,
        opts: &WriteOptions,
        mutate: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<Written, ApiError> {
        let UpdateHow {
            subresource,
            precondition,
            is_put,
            is_apply,
        } = how;
        let rt = &t.rt;
        let key = t.key()?;
        loop {
            let Some(current) = self.store.get(&key).await? else {
                return Err(ApiError::not_found(rt.reference(), t.name()));
            };
            let mut current_view = self.view(rt, &current.object).await?;
            // Both sides as Go sees them once decoded: `{}` for a value struct, `""` or
            // `0` are the same as absent (an object stored before may still hold them).
            if rt.custom.is_none() {
                strategy::go_zero_values(rt, Arc::make_mut(&mut current_view));
            }
            let mut new = mutate(&current_view)?;
            strategy::go_zero_values(rt, &mut new);
            // A patch is conditional only when it names a resourceVersion of its own: the
            // merged object otherwise carries the current one, and a lost race is retried.
            let patch_precondition = if is_put {
                None
            } else {
                object::meta_str(&new, "resourceVersion")
                    .filter(|s| !s.is_empty())
                    .filter(|s| Some(*s) != object::meta_str(&current_view, "resourceVersion"))
                    .map(str::to_string)
            };
            if let Some(want) = precondition.or(patch_precondition.as_deref())
                && want != current.revision.to_string()
            {
                return Err(ApiError::stale_resource_version(rt.reference(), t.name()));
            }
            if let Some(uid) = object::meta_str(&new, "uid").filter(|u| !u.is_empty())
                && uid != object::uid(&current_view)
            {
                return Err(ApiError::conflict(
                    rt.reference(),
                    t.name(),
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        object::uid(&current_view)
                    ),
                ));
            }
            carry_system_metadata(&mut new, &current_view);
            // An update without a resourceVersion is unconditional.
            if let Some(m) = object::meta_mut(&mut new) {
                m.insert(
                    "resourceVersion".into(),
                    json!(current.revision.to_string()),
                );
            }
            no_finalizers_added_while_deleting(rt, t.name(), &new, &current_view)?;
            strategy::prepare_for_update(rt, &mut new, &current_view, subresource);
            let warnings = self
                .admit(rt, &mut new, Some(&current_view), subresource, opts)
                .await?;
            if !is_apply {
                super::patching::record_update(
                    rt,
                    Some(&current_view),
                    &mut new,
                    &opts.field_manager,
                    subresource,
                );
            }
            if opts.dry_run {
                return Ok(Written {
                    object: Arc::new(new),
                    created: false,
                    warnings,
                    change: None,
                });
            }
            let finished = if rt.strategy.has_spec_finalizers() {
                namespace_finished(&new)
            } else {
                object::is_deleting(&new)
                    && object::finalizers(&new).is_empty()
                    && deletion_grace_elapsed(&new)
            };
            // A write that changes nothing is not stored: no new resourceVersion, no watch
            // event (kube-apiserver skips it the same way; kubectl prints "(no change)").
            if !finished && new == *current_view {
                return Ok(Written {
                    object: current_view,
                    created: false,
                    warnings,
                    change: None,
                });
            }
            let stored = self.storage_form(rt, new).await?;
            let outcome = if finished {
                let mut last = stored;
                crate::storage::set_resource_version(&mut last, current.revision);
                self.store
                    .delete(&key, Arc::new(last), current.revision)
                    .await?
            } else {
                self.store
                    .update(&key, stored, current.revision, current.object.clone())
                    .await?
            };
            match outcome {
                WriteOutcome::Committed(s) => {
                    let object = self.view(rt, &s.object).await?;
                    return Ok(Written::committed(object, s, false, warnings));
                }
                WriteOutcome::NotFound => {
                    return Err(ApiError::not_found(rt.reference(), t.name()));
                }
                WriteOutcome::Conflict | WriteOutcome::AlreadyExists => {
                    if precondition.is_some() || patch_precondition.is_some() {
                        return Err(ApiError::stale_resource_version(rt.reference(), t.name()));
                    }
                }
            }
        }
    }
}

/// Refuses finalizers added to an object that is being deleted, as
/// kube-apiserver's metadata validation does.
fn no_finalizers_added_while_deleting(
    rt: &ResourceType,
    name: &str,
    new: &Value,
    current: &Value,
) -> Result<(), ApiError> {
    if !object::is_deleting(current) {
        return Ok(());
    }
    let old_f = object::finalizers(current);
    let mut added: Vec<String> = object::finalizers(new)
        .into_iter()
        .filter(|f| !old_f.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    added.sort();
    let list = added
        .iter()
        .map(|f| format!("{f:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let detail = format!(
        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
    );
    let err = crate::validation::FieldError {
        kind: crate::validation::FieldErrorKind::Forbidden,
        field: "metadata.finalizers".into(),
        bad_value: None,
        detail,
    };
    Err(super::invalid_object(rt, name, &[err]))
}

/// Whether a terminating namespace has no finalizers of either kind left.
fn namespace_finished(ns: &Value) -> bool {
    object::is_deleting(ns)
        && object::finalizers(ns).is_empty()
        && ns
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|a| a.is_empty())
}

/// Whether a deleting object's grace period is over (finalizer-only deletions
/// have a grace period of zero).
fn deletion_grace_elapsed(obj: &Value) -> bool {
    object::meta(obj)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
        == 0
}

/// Copies what clients cannot change on update from the current object.
fn carry_system_metadata(new: &mut Value, current: &Value) {
    let Some(cur) = object::meta(current) else {
        return;
    };
    let Some(meta) = object::meta_mut(new) else {
        return;
    };
    for k in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "name",
        "namespace",
    ] {
        match cur.get(k) {
            Some(v) => {
                meta.insert(k.into(), v.clone());
            }
            None => {
                meta.remove(k);
            }
        }
    }
    meta.remove("selfLink");
}
/// What `check_namespace_for_create` reads of a namespace.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct NamespaceState {
    metadata: NamespaceMeta,
    status: NamespacePhase,
}

#[derive(serde::Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct NamespaceMeta {
    /// Present (not null) once the namespace is being deleted.
    deletion_timestamp: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct NamespacePhase {
    phase: Option<String>,
}
