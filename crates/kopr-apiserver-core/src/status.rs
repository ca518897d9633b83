//! `metav1.Status` errors: every failure the API server answers with is an
//! [`ApiError`], rendered as the Status body kube-apiserver would send.

use serde_json::{Value, json};

/// One cause inside `details.causes` of a Status.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusCause {
    /// Machine-readable cause type, e.g. `FieldValueInvalid`.
    pub reason: String,
    /// Human-readable description.
    pub message: String,
    /// The field path the cause refers to.
    pub field: String,
}

/// An error answered to a client as a `metav1.Status`. Boxed, so results
/// carrying it stay small; its fields are reached through `Deref`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{} {}: {}", .0.code, .0.reason, .0.message)]
pub struct ApiError(Box<StatusFields>);

impl std::ops::Deref for ApiError {
    type Target = StatusFields;
    fn deref(&self) -> &StatusFields {
        &self.0
    }
}

impl std::ops::DerefMut for ApiError {
    fn deref_mut(&mut self) -> &mut StatusFields {
        &mut self.0
    }
}

/// The contents of a failure Status.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusFields {
    /// HTTP status code.
    pub code: u16,
    /// `reason`, e.g. `NotFound` (any text, when relayed from a webhook).
    pub reason: std::borrow::Cow<'static, str>,
    /// `message`.
    pub message: String,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind` (the resource plural for most registry errors).
    pub kind: Option<String>,
    /// `details.uid`.
    pub uid: Option<String>,
    /// `details.causes`.
    pub causes: Vec<StatusCause>,
    /// `details.retryAfterSeconds`.
    pub retry_after_seconds: Option<u64>,
    /// Warnings recorded before the failure, sent as `Warning` headers.
    pub warnings: Vec<String>,
    /// Whether `details` is sent even when empty (`"details":{}`), as kube
    /// does for errors built with a resource, even an empty one.
    pub details_always: bool,
    /// `metadata.continue`: where a list can go on (an expired continue token's
    /// answer carries a new one, at the latest revision).
    pub continue_token: Option<String>,
}

/// Identifies a resource for error messages: `group` and plural `resource`.
#[derive(Debug, Clone, Copy)]
pub struct ResourceRef<'a> {
    /// API group, empty for core.
    pub group: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
}

impl ResourceRef<'_> {
    /// `resource.group`, or just `resource` for the core group.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

impl ApiError {
    /// A bare error with code, reason and message.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError(Box::new(StatusFields {
            code,
            reason: reason.into(),
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            uid: None,
            causes: Vec::new(),
            retry_after_seconds: None,
            warnings: Vec::new(),
            details_always: false,
            continue_token: None,
        }))
    }

    /// Names the resource and object in the Status details.
    pub fn with_resource(mut self, r: ResourceRef<'_>, name: &str) -> Self {
        self.name = Some(name.to_string());
        if !r.group.is_empty() {
            self.group = Some(r.group.to_string());
        }
        self.kind = Some(r.resource.to_string());
        self
    }

    /// 404 `<resource> "<name>" not found`.
    pub fn not_found(r: ResourceRef<'_>, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", r.qualified()),
        )
        .with_resource(r, name)
    }

    /// 409 `<resource> "<name>" already exists`.
    pub fn already_exists(r: ResourceRef<'_>, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", r.qualified()),
        )
        .with_resource(r, name)
    }

    /// 409 Conflict: `Operation cannot be fulfilled on <resource> "<name>": <why>`.
    pub fn conflict(r: ResourceRef<'_>, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                r.qualified()
            ),
        )
        .with_resource(r, name)
    }

    /// The optimistic-concurrency conflict message.
    pub fn stale_resource_version(r: ResourceRef<'_>, name: &str) -> Self {
        Self::conflict(
            r,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid with causes; `kind` is the object's Kind, `group` its API group.
    pub fn invalid(
        group: &str,
        kind: &str,
        name: &str,
        message: String,
        causes: Vec<StatusCause>,
    ) -> Self {
        let mut e = Self::new(422, "Invalid", message);
        e.name = Some(name.to_string());
        if !group.is_empty() {
            e.group = Some(group.to_string());
        }
        e.kind = Some(kind.to_string());
        e.causes = causes;
        e
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 403 Forbidden for a resource: `<resource> "<name>" is forbidden: <why>`.
    pub fn forbidden(r: ResourceRef<'_>, name: &str, why: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("{} \"{name}\" is forbidden: {why}", r.qualified()),
        )
        .with_resource(r, name)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 404 for a path no API serves.
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// The 404 of a path under a served group version that names no route (an unknown
    /// resource or subresource): kube's go-restful answer, whose Status carries an empty
    /// `details` object (`"details":{}`), unlike the 404 of a path outside every group.
    pub fn route_not_found() -> Self {
        let mut e = Self::path_not_found();
        e.details_always = true;
        e
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {content_type}"
            ),
        )
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 410 Expired (Gone), e.g. a compacted resourceVersion.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 406 NotAcceptable: the representation asked for does not fit the answer.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit_bytes: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit_bytes}"),
        )
    }

    /// 413 `Request entity too large: <why>` (kube's
    /// NewRequestEntityTooLargeError).
    pub fn entity_too_large(why: impl std::fmt::Display) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {why}"),
        )
    }

    /// 500 InternalError.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        let mut e = Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        );
        e.causes.push(StatusCause {
            reason: String::new(),
            message: message.to_string(),
            field: String::new(),
        });
        e
    }

    /// The error with `warnings` for the client, unless it carries its own.
    pub fn or_warnings(mut self, warnings: &[String]) -> Self {
        if self.warnings.is_empty() {
            self.warnings = warnings.to_vec();
        }
        self
    }

    /// Rebuilds an error from a `metav1.Status` body produced elsewhere.
    pub fn from_status(status: &Value) -> Self {
        let code = status.get("code").and_then(Value::as_u64).unwrap_or(500) as u16;
        let reason = status
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut e = Self::new(
            code,
            "",
            status.get("message").and_then(Value::as_str).unwrap_or(""),
        );
        e.reason = reason.into();
        let details = status.get("details");
        let text = |k: &str| {
            details
                .and_then(|d| d.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        e.name = text("name");
        e.group = text("group");
        e.kind = text("kind");
        if let Some(causes) = details
            .and_then(|d| d.get("causes"))
            .and_then(Value::as_array)
        {
            e.causes = causes
                .iter()
                .map(|c| StatusCause {
                    reason: c
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    message: c
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    field: c
                        .get("field")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                })
                .collect();
        }
        e
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        // Every field of kube's StatusDetails is omitted when empty.
        let fields = [
            ("name", &self.name),
            ("group", &self.group),
            ("kind", &self.kind),
            ("uid", &self.uid),
        ];
        for (key, value) in fields {
            if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
                details.insert(key.into(), json!(v));
            }
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    let mut m = serde_json::Map::new();
                    if !c.reason.is_empty() {
                        m.insert("reason".into(), json!(c.reason));
                    }
                    if !c.message.is_empty() {
                        m.insert("message".into(), json!(c.message));
                    }
                    if !c.field.is_empty() {
                        m.insert("field".into(), json!(c.field));
                    }
                    Value::Object(m)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(s) = self.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), json!(s));
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        });
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if !details.is_empty() || self.details_always {
            status["details"] = Value::Object(details);
        }
        if let Some(token) = &self.continue_token {
            status["metadata"] = json!({"continue": token});
        }
        status
    }
}

/// Result alias for request handling.
pub type ApiResult<T> = Result<T, ApiError>;
