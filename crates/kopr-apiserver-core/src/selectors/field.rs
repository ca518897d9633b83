//! Field selectors: `fields.ParseSelector`, matching, and the per-kind field
//! labels kube-apiserver supports.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------

/// One `field=value` / `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FieldTerm {
    pub(super) field: String,
    pub(super) value: String,
    pub(super) negate: bool,
}

/// A parsed field selector (`fields.Selector`): an AND of terms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    pub(super) terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses a `fieldSelector` query value exactly like `fields.ParseSelector`
    /// (comma-separated `=`, `==`, `!=` terms; `\`, `,` and `=` escaped with `\`
    /// in values).
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parts = split_terms(s);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(SelectorError::Field(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let value = unescape_value(rhs)?;
            // An empty field with an empty value selects everything.
            if lhs.is_empty() && value.is_empty() {
                continue;
            }
            terms.push(FieldTerm {
                field: lhs.to_string(),
                value,
                negate: op == "!=",
            });
        }
        Ok(FieldSelector { terms })
    }

    /// The field labels used, in term order (duplicates possible).
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// True if every term holds; `get` returns a field's value (`None` counts
    /// as the empty string, as a missing key in kube's `fields.Set`).
    pub fn matches(&self, get: &dyn Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|t| {
            let v = get(&t.field).unwrap_or_default();
            (v == t.value) != t.negate
        })
    }

    /// True if the selector has no terms.
    pub fn is_everything(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value this selector requires `field` to equal, if any
    /// (`RequiresExactMatch`), e.g. `metadata.name` for a watch on one object.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| !t.negate && t.field == field)
            .map(|t| t.value.as_str())
    }

    /// Rewrites field labels to the ones used when matching (the field label
    /// conversion of the kind): `spec.host` → `spec.nodeName` for pods. Returns
    /// the kube error for the first unsupported label.
    pub fn convert_for(&self, labels: &FieldLabels) -> Result<Self, SelectorError> {
        let mut terms = Vec::with_capacity(self.terms.len());
        for t in &self.terms {
            let field = convert_field_label(labels, &t.field)?;
            terms.push(FieldTerm {
                field,
                value: t.value.clone(),
                negate: t.negate,
            });
        }
        Ok(FieldSelector { terms })
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical form (`a=b,c!=d`, values re-escaped).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let escaped = t
                .value
                .replace('\\', "\\\\")
                .replace(',', "\\,")
                .replace('=', "\\=");
            let op = if t.negate { "!=" } else { "=" };
            write!(f, "{}{op}{escaped}", t.field)?;
        }
        Ok(())
    }
}

/// Splits on commas not preceded by a backslash escape (escapes kept).
pub(super) fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            out.push(&s[start..i]);
            start = i + 1;
        }
    }
    out.push(&s[start..]);
    out
}

/// Splits at the first operator (`!=`, `==`, `=`, tried in that order at each
/// position).
pub(super) fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

pub(super) fn unescape_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(SelectorError::Field(format!(
                        "invalid field selector: invalid escape sequence: \\{c}"
                    )));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                // kube prints the rune as its code point number.
                return Err(SelectorError::Field(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )));
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::Field(
            "invalid field selector: invalid escape sequence: \\".to_string(),
        ));
    }
    Ok(out)
}

// --- per-kind field labels ---------------------------------------------------

/// How a kind's field label conversion rejects an unknown label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// `field label not supported: X` (core kinds, events.k8s.io, certificates).
    NotSupported,
    /// `field label "X" not supported for batchv1.Job`.
    Job,
    /// No conversion registered: only metadata.name / metadata.namespace.
    Default,
}

/// A kind's field selectors: the labels kube's field label conversion
/// accepts (as clients send them), how it refuses others, the labels it
/// renames for matching, and the values of its selectable fields.
#[derive(Debug)]
pub struct FieldLabels {
    /// The labels accepted.
    pub accepted: &'static [&'static str],
    /// How an unknown label is refused.
    pub reject: Reject,
    /// Labels matched under another name (`spec.host` as `spec.nodeName`).
    pub renames: &'static [(&'static str, &'static str)],
    /// The value of an accepted (renamed) label other than `metadata.name`
    /// and `metadata.namespace`; `None` when kube's field set lacks it (it
    /// matches as "").
    pub value: fn(&Value, &str) -> Option<String>,
}

/// The field selectors of a kind without a conversion of its own.
pub static DEFAULT_FIELDS: FieldLabels = FieldLabels {
    accepted: &["metadata.name", "metadata.namespace"],
    reject: Reject::Default,
    renames: &[],
    value: |_, _| None,
};

/// Pods.
pub static POD_FIELDS: FieldLabels = FieldLabels {
    accepted: &[
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
        "spec.host",
    ],
    reject: Reject::NotSupported,
    renames: &[("spec.host", "spec.nodeName")],
    value: |obj, field| {
        Some(match field {
            "spec.nodeName" => str_at(obj, &["spec", "nodeName"]),
            "spec.restartPolicy" => str_at(obj, &["spec", "restartPolicy"]),
            "spec.schedulerName" => str_at(obj, &["spec", "schedulerName"]),
            "spec.serviceAccountName" => str_at(obj, &["spec", "serviceAccountName"]),
            "spec.hostNetwork" => {
                let b = path(obj, &["spec", "hostNetwork"]).and_then(Value::as_bool);
                b.unwrap_or(false).to_string()
            }
            "status.phase" => str_at(obj, &["status", "phase"]),
            "status.podIP" => pod_ip(obj),
            "status.nominatedNodeName" => str_at(obj, &["status", "nominatedNodeName"]),
            _ => return None,
        })
    },
};

/// Nodes.
pub static NODE_FIELDS: FieldLabels = FieldLabels {
    accepted: &["metadata.name", "spec.unschedulable"],
    reject: Reject::NotSupported,
    renames: &[],
    value: |obj, _| {
        let b = path(obj, &["spec", "unschedulable"]).and_then(Value::as_bool);
        Some(b.unwrap_or(false).to_string())
    },
};

/// ReplicationControllers.
pub static REPLICATION_CONTROLLER_FIELDS: FieldLabels = FieldLabels {
    accepted: &["metadata.name", "metadata.namespace", "status.replicas"],
    reject: Reject::NotSupported,
    renames: &[],
    value: |obj, _| Some(int_at(obj, &["status", "replicas"]).to_string()),
};

/// Core Events.
pub static EVENT_FIELDS: FieldLabels = FieldLabels {
    accepted: &[
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
        "metadata.namespace",
        "metadata.name",
    ],
    reject: Reject::NotSupported,
    renames: &[],
    value: |obj, field| Some(event_field(obj, field)),
};

/// events.k8s.io Events.
pub static EVENTS_V1_FIELDS: FieldLabels = FieldLabels {
    accepted: &[
        "reason",
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "regarding.apiVersion",
        "regarding.resourceVersion",
        "regarding.fieldPath",
        "reportingController",
        "type",
        "metadata.namespace",
        "metadata.name",
    ],
    reject: Reject::NotSupported,
    renames: &[],
    value: |obj, field| Some(event_field(obj, field)),
};

/// Namespaces.
pub static NAMESPACE_FIELDS: FieldLabels = FieldLabels {
    accepted: &["status.phase", "metadata.name"],
    reject: Reject::NotSupported,
    renames: &[],
    value: |obj, _| Some(str_at(obj, &["status", "phase"])),
};

/// Secrets.
pub static SECRET_FIELDS: FieldLabels = FieldLabels {
    accepted: &["type", "metadata.namespace", "metadata.name"],
    reject: Reject::NotSupported,
    renames: &[],
    value: |obj, _| Some(str_at(obj, &["type"])),
};

/// Services.
pub static SERVICE_FIELDS: FieldLabels = FieldLabels {
    accepted: &[
        "metadata.namespace",
        "metadata.name",
        "spec.clusterIP",
        "spec.type",
    ],
    reject: Reject::NotSupported,
    renames: &[],
    value: |obj, field| {
        Some(match field {
            "spec.clusterIP" => str_at(obj, &["spec", "clusterIP"]),
            _ => str_at(obj, &["spec", "type"]),
        })
    },
};

/// Jobs.
pub static JOB_FIELDS: FieldLabels = FieldLabels {
    accepted: &["metadata.name", "metadata.namespace", "status.successful"],
    reject: Reject::Job,
    renames: &[],
    value: |obj, _| Some(int_at(obj, &["status", "succeeded"]).to_string()),
};

/// CertificateSigningRequests.
pub static CERTIFICATE_SIGNING_REQUEST_FIELDS: FieldLabels = FieldLabels {
    accepted: &["metadata.name", "spec.signerName"],
    reject: Reject::NotSupported,
    renames: &[],
    value: |obj, _| Some(str_at(obj, &["spec", "signerName"])),
};

/// The field label conversion of a kind: the label used for matching, or the
/// exact kube error (a 400 BadRequest) for an unsupported label.
pub fn convert_field_label(labels: &FieldLabels, label: &str) -> Result<String, SelectorError> {
    if labels.accepted.contains(&label) {
        let renamed = labels.renames.iter().find(|(from, _)| *from == label);
        return Ok(renamed.map_or(label, |(_, to)| to).to_string());
    }
    Err(SelectorError::UnsupportedField(match labels.reject {
        Reject::NotSupported => format!("field label not supported: {label}"),
        Reject::Job => format!(
            "field label {} not supported for batchv1.Job",
            go_quote(label)
        ),
        Reject::Default => format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            go_quote(label)
        ),
    }))
}

pub(super) fn path<'a>(obj: &'a Value, p: &[&str]) -> Option<&'a Value> {
    p.iter().try_fold(obj, |v, k| v.get(k))
}

/// A string at a JSON path ("" when missing or not a string).
pub(super) fn str_at(obj: &Value, p: &[&str]) -> String {
    path(obj, p)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// First non-empty string among several JSON paths (used where core and
/// events.k8s.io spell the same field differently).
pub(super) fn first_str(obj: &Value, paths: &[&[&str]]) -> String {
    paths
        .iter()
        .map(|p| str_at(obj, p))
        .find(|s| !s.is_empty())
        .unwrap_or_default()
}

pub(super) fn int_at(obj: &Value, p: &[&str]) -> i64 {
    path(obj, p).and_then(Value::as_i64).unwrap_or(0)
}

/// The pod IP as the internal API sees it: `status.podIP`, else `status.podIPs[0].ip`.
pub(crate) fn pod_ip(pod: &Value) -> String {
    let ip = str_at(pod, &["status", "podIP"]);
    if !ip.is_empty() {
        return ip;
    }
    path(pod, &["status", "podIPs", "0"])
        .or_else(|| {
            path(pod, &["status", "podIPs"])
                .and_then(|v| v.as_array())
                .and_then(|a| a.first())
        })
        .map(|v| str_at(v, &["ip"]))
        .unwrap_or_default()
}

/// Value of a field label for an object of a kind, as kube's selectable
/// fields set holds it. `None`: the label is not supported for this kind
/// (see [`convert_field_label`] for the error). `Some(None)`: supported but not
/// in kube's field set (matches as ""). `Some(Some(v))`: the value; missing
/// object fields read as "".
pub fn field_value(labels: &FieldLabels, obj: &Value, field: &str) -> Option<Option<String>> {
    let field = convert_field_label(labels, field).ok()?;
    Some(match field.as_str() {
        "metadata.name" => Some(str_at(obj, &["metadata", "name"])),
        "metadata.namespace" => Some(str_at(obj, &["metadata", "namespace"])),
        _ => (labels.value)(obj, &field),
    })
}

/// Event selectable fields; reads both the core v1 and events.k8s.io spelling.
pub(super) fn event_field(obj: &Value, field: &str) -> String {
    let reference = |k: &str| first_str(obj, &[&["involvedObject", k], &["regarding", k]]);
    match field {
        "involvedObject.kind" | "regarding.kind" => reference("kind"),
        "involvedObject.namespace" | "regarding.namespace" => reference("namespace"),
        "involvedObject.name" | "regarding.name" => reference("name"),
        "involvedObject.uid" | "regarding.uid" => reference("uid"),
        "involvedObject.apiVersion" | "regarding.apiVersion" => reference("apiVersion"),
        "involvedObject.resourceVersion" | "regarding.resourceVersion" => {
            reference("resourceVersion")
        }
        "involvedObject.fieldPath" | "regarding.fieldPath" => reference("fieldPath"),
        "reason" => str_at(obj, &["reason"]),
        "type" => str_at(obj, &["type"]),
        "reportingComponent" | "reportingController" => {
            first_str(obj, &[&["reportingComponent"], &["reportingController"]])
        }
        "source" => {
            let c = first_str(
                obj,
                &[&["source", "component"], &["deprecatedSource", "component"]],
            );
            if c.is_empty() {
                first_str(obj, &[&["reportingComponent"], &["reportingController"]])
            } else {
                c
            }
        }
        _ => String::new(),
    }
}
