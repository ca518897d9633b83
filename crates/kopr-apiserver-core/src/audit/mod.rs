//! Auditing: one `audit.k8s.io/v1` Event per request stage, as JSON lines
//! (`--audit-log-path`, `-` for standard output), at the level the policy
//! (`--audit-policy-file`, [`policy`]) gives the request, as kube-apiserver's
//! audit filter writes them: who (user, impersonated user, source address,
//! user agent), what (verb, URI, object reference), the answer's status,
//! authorization's decision and, at `Request` and `RequestResponse`, the
//! bodies.
//!
//! Secrets never reach the log: requests for Secrets, TokenRequests and
//! TokenReviews are logged at `Metadata` at most, whatever the policy says.
//! Stages logged: `RequestReceived` and `ResponseComplete`; a watch logs
//! `ResponseStarted` when its stream begins instead of `ResponseComplete`.

pub mod policy;

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::mpsc;

use serde_json::{Map, Value, json};

use crate::authz::Attributes;
use crate::identity::UserInfo;
pub use policy::{Level, Policy, PolicyError};

/// Where events go and which requests are logged at which level.
pub struct Auditor {
    policy: Policy,
    sink: mpsc::Sender<String>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Auditor(..)")
    }
}

/// Errors opening the audit log.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The policy could not be read.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The log could not be opened.
    #[error("audit log {path}: {source}")]
    Log {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

fn spawn_writer(mut out: Box<dyn Write + Send>) -> mpsc::Sender<String> {
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        while let Ok(line) = rx.recv() {
            let mut lines = vec![line];
            lines.extend(rx.try_iter());
            for l in &lines {
                if out.write_all(l.as_bytes()).is_err() || out.write_all(b"\n").is_err() {
                    return;
                }
            }
            let _ = out.flush();
        }
    });
    tx
}

impl Auditor {
    /// An auditor appending to `path` (created 0600; `-` is standard
    /// output) under `policy`.
    ///
    /// # Errors
    /// [`AuditError::Log`] when the file cannot be opened.
    pub fn open(path: &Path, policy: Policy) -> Result<Auditor, AuditError> {
        let out: Box<dyn Write + Send> = if path.as_os_str() == "-" {
            Box::new(std::io::stdout())
        } else {
            let mut opts = std::fs::OpenOptions::new();
            opts.create(true).append(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let file = opts.open(path).map_err(|source| AuditError::Log {
                path: path.display().to_string(),
                source,
            })?;
            Box::new(std::io::BufWriter::new(file))
        };
        Ok(Auditor {
            policy,
            sink: spawn_writer(out),
        })
    }

    /// Starts the record of one request, or `None` when its level is
    /// `None`. `user` is who authenticated (`None` for a refused
    /// credential), `acting` whom it impersonates.
    pub fn begin(&self, request: RequestInfo<'_>) -> Option<Record> {
        let who = request.user.cloned().unwrap_or_default();
        let (mut level, omit) = self.policy.level_of(&who, request.attributes);
        if level == Level::None {
            return None;
        }
        if sensitive(request.attributes) {
            level = level.min(Level::Metadata);
        }
        let received = now();
        let mut event = json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": level.as_str(),
            "auditID": crate::object::new_uid(),
            "requestURI": request.uri,
            "verb": request.attributes.verb,
            "user": user_json(request.user),
            "sourceIPs": request.peer.map(|p| vec![p.ip().to_string()]).unwrap_or_default(),
            "userAgent": request.user_agent,
            "requestReceivedTimestamp": received,
        });
        if let Some(r) = &request.attributes.resource {
            let mut object = Map::new();
            object.insert("resource".into(), json!(r.resource));
            if let Some(ns) = &r.namespace {
                object.insert("namespace".into(), json!(ns));
            }
            if let Some(name) = &r.name {
                object.insert("name".into(), json!(name));
            }
            object.insert("apiGroup".into(), json!(r.group));
            object.insert("apiVersion".into(), json!(r.version));
            if let Some(sub) = &r.subresource {
                object.insert("subresource".into(), json!(sub));
            }
            event["objectRef"] = Value::Object(object);
        }
        let record = Record {
            level,
            omit,
            event,
            sink: self.sink.clone(),
        };
        record.emit("RequestReceived");
        Some(record)
    }
}

/// What the audit filter knows of a request when it starts its record.
#[derive(Debug, Clone, Copy)]
pub struct RequestInfo<'a> {
    /// The authenticated user (`None`: the credential was refused).
    pub user: Option<&'a UserInfo>,
    /// The request's authorization attributes.
    pub attributes: &'a Attributes,
    /// Path and query.
    pub uri: &'a str,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// The `User-Agent` header.
    pub user_agent: &'a str,
}

/// Requests whose bodies may hold secrets.
fn sensitive(a: &Attributes) -> bool {
    a.resource.as_ref().is_some_and(|r| {
        (r.group.is_empty() && r.resource == "secrets")
            || (r.group.is_empty()
                && r.resource == "serviceaccounts"
                && r.subresource.as_deref() == Some("token"))
            || (r.group == "authentication.k8s.io" && r.resource == "tokenreviews")
    })
}

fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

fn user_json(user: Option<&UserInfo>) -> Value {
    user.map(UserInfo::to_json).unwrap_or_else(|| json!({}))
}

/// One request's audit record, completed as the request is served.
#[derive(Debug)]
pub struct Record {
    level: Level,
    omit: Vec<String>,
    event: Value,
    sink: mpsc::Sender<String>,
}

impl Record {
    /// The record's level.
    pub fn level(&self) -> Level {
        self.level
    }

    fn emit(&self, stage: &str) {
        if self.omit.iter().any(|s| s == stage) {
            return;
        }
        let mut event = self.event.clone();
        event["stage"] = json!(stage);
        event["stageTimestamp"] = json!(now());
        let _ = self.sink.send(event.to_string());
    }

    /// Notes whom the request acts as, when it impersonates.
    pub fn impersonating(&mut self, user: &UserInfo) {
        self.event["impersonatedUser"] = user_json(Some(user));
    }

    /// Notes authorization's decision and reason.
    pub fn authorized(&mut self, allowed: bool, reason: &str) {
        let mut annotations = json!({
            "authorization.k8s.io/decision": if allowed { "allow" } else { "forbid" },
        });
        if !reason.is_empty() {
            annotations["authorization.k8s.io/reason"] = json!(reason);
        }
        self.event["annotations"] = annotations;
    }

    /// Notes the request's body: the object's name and namespace complete
    /// the object reference (a create names them only there), and at
    /// `Request` and above the body itself is kept (JSON bodies only).
    pub fn request_body(&mut self, body: &[u8]) {
        if body.is_empty() {
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        if let Some(object) = self.event["objectRef"].as_object_mut() {
            for field in ["namespace", "name"] {
                if let Some(text) = v["metadata"][field].as_str().filter(|t| !t.is_empty()) {
                    object
                        .entry(field)
                        .or_insert_with(|| Value::String(text.to_string()));
                }
            }
        }
        if self.level >= Level::Request {
            self.event["requestObject"] = v;
        }
    }

    /// Whether the response's body is wanted ([`Record::complete`] takes it).
    pub fn wants_response_body(&self) -> bool {
        self.level >= Level::RequestResponse
    }

    /// Ends the record with the response's status code and, when wanted
    /// and JSON, its body. A watch ends its record when its stream starts.
    /// Adds the annotations admission made (webhooks' and policies'); they
    /// appear in the completing stage's event.
    pub fn admission_annotations(&mut self, made: Map<String, Value>) {
        if made.is_empty() {
            return;
        }
        if !self.event["annotations"].is_object() {
            self.event["annotations"] = json!({});
        }
        if let Some(annotations) = self.event["annotations"].as_object_mut() {
            annotations.extend(made);
        }
    }

    pub fn complete(mut self, code: u16, body: Option<&[u8]>, watch: bool) {
        let mut status = json!({"metadata": {}, "code": code});
        if let Some(v) = body.and_then(|b| serde_json::from_slice::<Value>(b).ok()) {
            if v["kind"] == "Status" {
                for field in ["status", "message", "reason"] {
                    if !v[field].is_null() {
                        status[field] = v[field].clone();
                    }
                }
            }
            if self.wants_response_body() {
                self.event["responseObject"] = v;
            }
        }
        self.event["responseStatus"] = status;
        self.emit(if watch {
            "ResponseStarted"
        } else {
            "ResponseComplete"
        });
    }
}
