//! Apply errors: conflicts with other managers and their Status, objects the
//! merge rules cannot walk and managed fields that do not decode, in
//! kube-apiserver's (structured-merge-diff's) words.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// An object or configuration the walk along the merge rules cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    /// A set (`listType=set`) holds a list or a map.
    #[error("{path}: element {index}: expected a scalar set element")]
    NotScalar {
        /// Where the list is (`.spec.finalizers`).
        path: String,
        /// The element's index.
        index: usize,
    },
    /// An associative list holds something else than a map.
    #[error("{path}: element {index}: associative list with keys has an element that is not a map")]
    NotMap {
        /// Where the list is.
        path: String,
        /// The element's index.
        index: usize,
    },
    /// An associative list's element lacks a key without default.
    #[error(
        "{path}: element {index}: associative list with keys has an element that omits key field {key} (and doesn't have default value)"
    )]
    MissingKey {
        /// Where the list is.
        path: String,
        /// The element's index.
        index: usize,
        /// The key, Go-quoted.
        key: String,
    },
    /// Two elements of an applied list have the same key.
    #[error("{path}: duplicate entries for key {key}")]
    Duplicate {
        /// Where the list is.
        path: String,
        /// The key both have.
        key: String,
    },
}

/// A `fieldsV1` set that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldsError {
    /// A key without a known `f:`/`k:`/`v:`/`i:` prefix.
    #[error("unknown path element type in {0:?}")]
    UnknownElement(String),
    /// A `k:` key that is not a JSON object.
    #[error("invalid key in {0:?}")]
    Key(String),
    /// A `v:` key that is not JSON.
    #[error("invalid value in {0:?}: {1}")]
    Value(String, String),
    /// An `i:` key that is not an index.
    #[error("invalid index in {0:?}: {1}")]
    Index(String, String),
    /// The set is not an object.
    #[error("fieldsV1 must be an object")]
    NotObject,
    /// A member is not an object.
    #[error("expected an object for {0:?}")]
    MemberNotObject(String),
}

/// `metadata.managedFields` that do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagedFieldsError {
    /// Not a list.
    #[error("managedFields must be a list")]
    NotList,
    /// An entry is not an object.
    #[error("managed fields entry {0} is not an object")]
    NotObject(usize),
    /// An entry's operation is neither `Apply` nor `Update`.
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    /// An entry has no apiVersion.
    #[error("apiVersion must not be empty")]
    NoApiVersion,
    /// An entry has no fieldsType.
    #[error("missing fieldsType in managed fields entry {0}")]
    NoFieldsType(usize),
    /// An entry's fieldsType is not `FieldsV1`.
    #[error("invalid fieldsType {0:?} in managed fields entry {1}")]
    FieldsType(String, usize),
    /// An entry's set does not decode.
    #[error("error decoding set: {0}")]
    Set(#[from] FieldsError),
}

/// One field a different manager owns with a different value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The manager owning the field.
    pub manager: ManagerInfo,
    /// The field path, e.g. `.data.key` or `.spec.containers[name="c"].image`.
    pub field: String,
}

/// All conflicts of an apply request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// kube-apiserver's message: `Apply failed with 1 conflict: conflict with
    /// "mgr" using v1: .data.key`, or for several conflicts one
    /// `conflicts with "mgr":` block per manager (sorted) with `- path` lines.
    pub fn message(&self) -> String {
        if let [only] = self.0.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                only.manager.display(),
                only.field
            );
        }
        let mut groups: BTreeMap<String, (&ManagerInfo, Vec<&str>)> = BTreeMap::new();
        for c in &self.0 {
            groups
                .entry(c.manager.identifier())
                .or_insert_with(|| (&c.manager, Vec::new()))
                .1
                .push(&c.field);
        }
        let mut lines = Vec::new();
        for (info, paths) in groups.values() {
            lines.push(format!("conflicts with {}:", info.display()));
            for p in paths {
                lines.push(format!("- {p}"));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            lines.join("\n")
        )
    }

    /// `details.causes` entries: `{"reason":"FieldManagerConflict",
    /// "message":"conflict with \"mgr\" using v1","field":".data.key"}`.
    pub fn causes(&self) -> Vec<Value> {
        self.0
            .iter()
            .map(|c| {
                json!({
                    "reason": "FieldManagerConflict",
                    "message": format!("conflict with {}", c.manager.display()),
                    "field": c.field,
                })
            })
            .collect()
    }

    /// The full `Status` object kube returns (HTTP 409, reason Conflict).
    pub fn to_status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message(),
            "reason": "Conflict",
            "details": {"causes": self.causes()},
            "code": 409,
        })
    }
}

/// Errors of server-side apply and managed-fields bookkeeping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (HTTP 409).
    #[error("{}", .0.message())]
    Conflict(Conflicts),
    /// The request is malformed (HTTP 400, reason BadRequest).
    #[error("{0}")]
    BadRequest(String),
    /// kube answers these with HTTP 500 and an empty reason.
    #[error("{0}")]
    Internal(String),
}

impl ApplyError {
    /// The conflicts, when this is a conflict error.
    pub fn conflicts(&self) -> Option<&[Conflict]> {
        match self {
            ApplyError::Conflict(c) => Some(&c.0),
            _ => None,
        }
    }

    /// HTTP status code.
    pub fn status_code(&self) -> u16 {
        match self {
            ApplyError::Conflict(_) => 409,
            ApplyError::BadRequest(_) => 400,
            ApplyError::Internal(_) => 500,
        }
    }

    /// The `Status` object kube returns.
    pub fn to_status(&self) -> Value {
        match self {
            ApplyError::Conflict(c) => c.to_status(),
            ApplyError::BadRequest(m) => json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": m, "reason": "BadRequest", "code": 400,
            }),
            ApplyError::Internal(m) => json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": m, "code": 500,
            }),
        }
    }
}

/// The 422 `Status` kube-apiserver returns for an apply patch without
/// `fieldManager`.
pub fn field_manager_required_status() -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        "reason": "Invalid",
        "details": {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{
            "reason": "FieldValueRequired",
            "message": "Required value: is required for apply patch",
            "field": "fieldManager"}]},
        "code": 422,
    })
}

/// The manager name kube derives when a non-apply request has no
/// `fieldManager`: the user agent up to the first `/`, printable characters
/// only, at most 128 bytes.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let head = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in head.chars() {
        if c.is_control() {
            continue;
        }
        if out.len() >= 128 {
            break;
        }
        out.push(c);
    }
    out
}
