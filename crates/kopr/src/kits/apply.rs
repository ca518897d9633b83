//! Applying manifest files to a cluster, as `kubectl apply -f` does: what `<operator> dev --apply`
//! runs, and what tests use to load samples.
//!
//! [`load`] reads files and directories (`.yaml`, `.yml`, `.json`; directories are not recursed
//! into) into [`Document`]s, splitting multi-document YAML and expanding `List` objects. A file
//! that does not parse fails with the file name, line and column. [`apply`] then sends every
//! object with server-side apply (objects with only `generateName` are created), Namespaces
//! first, CustomResourceDefinitions next (waiting until they are established), then the rest in
//! file order, finding each kind through discovery.
//!
//! ```no_run
//! # async fn run(client: kube::Client) -> Result<(), kopr::apply::ManifestError> {
//! use std::path::PathBuf;
//! for outcome in kopr::apply::apply_paths(&client, &[PathBuf::from("samples")]).await? {
//!     match &outcome.result {
//!         Ok(_) => println!("{outcome}"), // e.g. `Greeting hello in default created (from ...)`
//!         Err(error) => eprintln!("{}: {error}", outcome.source),
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::Value;

/// The field manager objects are applied under.
pub const FIELD_MANAGER: &str = "kopr-apply";

/// Where a document came from: a file and the line its document starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file.
    pub path: PathBuf,
    /// The 1-based line the document starts on.
    pub line: usize,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)
    }
}

/// One object read from a manifest file.
#[derive(Debug, Clone)]
pub struct Document {
    /// Where it was read from.
    pub source: Source,
    /// The object, with `apiVersion`, `kind` and `metadata` checked to be present.
    pub object: Value,
}

impl Document {
    /// The object's `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The object's `kind`.
    pub fn kind(&self) -> &str {
        self.object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `metadata.name`, or `metadata.generateName` followed by `*` when only that is given.
    pub fn name(&self) -> String {
        let meta = self.object.get("metadata");
        let field = |key: &str| {
            meta.and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        match (field("name"), field("generateName")) {
            (Some(name), _) => name.to_owned(),
            (None, Some(prefix)) => format!("{prefix}*"),
            (None, None) => String::new(),
        }
    }

    /// `metadata.namespace`, when given.
    pub fn namespace(&self) -> Option<&str> {
        self.object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    fn group_version_kind(&self) -> GroupVersionKind {
        let (group, version) = match self.api_version().split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", self.api_version()),
        };
        GroupVersionKind::gvk(group, version, self.kind())
    }

    fn order(&self) -> u8 {
        match (self.api_version(), self.kind()) {
            ("v1", "Namespace") => 0,
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => 1,
            _ => 2,
        }
    }
}

/// Why manifests could not be loaded or applied.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A file is not valid YAML or JSON.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the error.
        line: usize,
        /// The 1-based column of the error.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A document parsed but is not a Kubernetes object.
    #[error("{at}: {message}")]
    Invalid {
        /// Where the document starts.
        at: Source,
        /// What is missing or wrong.
        message: String,
    },
    /// The API server does not serve the object's kind.
    #[error("{at}: {kind} {name}: the server does not serve kind {kind} in {api_version}: {error}")]
    UnknownKind {
        /// Where the document starts.
        at: Source,
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
        /// The object's name.
        name: String,
        /// The discovery failure.
        error: Box<kube::Error>,
    },
    /// The API server refused the object.
    #[error("{at}: {kind} {name}: {}", describe(error))]
    Rejected {
        /// Where the document starts.
        at: Source,
        /// The object's kind.
        kind: String,
        /// The object's name.
        name: String,
        /// The API error.
        error: Box<kube::Error>,
    },
    /// A CustomResourceDefinition did not become established.
    #[error("{at}: CustomResourceDefinition {name} was not established: {reason}")]
    NotEstablished {
        /// Where the document starts.
        at: Source,
        /// The CRD's name.
        name: String,
        /// Why (a timeout or a failed watch).
        reason: String,
    },
}

fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

fn is_manifest(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("yaml" | "yml" | "json")
    )
}

/// Lists the manifest files named by `paths`: files as given, directories' `.yaml`, `.yml`
/// and `.json` files in name order (not recursing into subdirectories).
///
/// # Errors
/// [`ManifestError::Read`] naming a path that cannot be read.
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ManifestError> {
    let mut found = Vec::new();
    for path in paths {
        let read_error = |source| ManifestError::Read {
            path: path.clone(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(read_error)?;
        if metadata.is_dir() {
            let mut entries = Vec::new();
            for entry in std::fs::read_dir(path).map_err(read_error)? {
                let entry = entry.map_err(read_error)?;
                let file = entry.path();
                if file.is_file() && is_manifest(&file) {
                    entries.push(file);
                }
            }
            entries.sort();
            found.extend(entries);
        } else {
            found.push(path.clone());
        }
    }
    Ok(found)
}

/// Reads every manifest in `paths` (files or directories, see [`files`]).
///
/// # Errors
/// The first file that cannot be read or parsed, as [`parse`] reports it.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Document>, ManifestError> {
    let mut documents = Vec::new();
    for file in files(paths)? {
        let text = std::fs::read_to_string(&file).map_err(|source| ManifestError::Read {
            path: file.clone(),
            source,
        })?;
        documents.extend(parse(&file, &text)?);
    }
    Ok(documents)
}

/// Parses the text of one manifest file named `path` (JSON when it ends in `.json`, YAML
/// otherwise, possibly several documents).
///
/// ```
/// use std::path::Path;
/// let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: b-}\n";
/// let documents = kopr::apply::parse(Path::new("samples.yaml"), text)?;
/// assert_eq!(documents.len(), 2);
/// assert_eq!((documents[0].kind(), documents[0].name()), ("ConfigMap", "a".to_owned()));
/// assert_eq!(documents[1].name(), "b-*");
/// assert_eq!(documents[1].source.line, 5);
/// # Ok::<(), kopr::apply::ManifestError>(())
/// ```
///
/// # Errors
/// An [`ManifestError`] naming the file, line and column of text that does not parse, or a
/// document without `apiVersion`, `kind` or `metadata`.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Document>, ManifestError> {
    let is_json = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let mut raw = Vec::new();
    if is_json {
        let value: Value = serde_json::from_str(text).map_err(|error| ManifestError::Parse {
            path: path.to_owned(),
            line: error.line(),
            column: error.column(),
            message: json_message(&error),
        })?;
        raw.push((1, value));
    } else {
        for (start, chunk) in yaml_documents(text) {
            let Some(line) = first_content_line(start, &chunk) else {
                continue;
            };
            let value: Value =
                serde_saphyr::from_str(&chunk).map_err(|error| yaml_error(path, start, &error))?;
            if !value.is_null() {
                raw.push((line, value));
            }
        }
    }
    let mut documents = Vec::new();
    for (line, value) in raw {
        let source = Source {
            path: path.to_owned(),
            line,
        };
        expand(source, value, &mut documents)?;
    }
    Ok(documents)
}

fn json_message(error: &serde_json::Error) -> String {
    // serde_json appends " at line L column C"; the location is reported separately.
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

fn yaml_error(path: &Path, start: usize, error: &serde_saphyr::Error) -> ManifestError {
    let options = serde_saphyr::render_options! {
        snippets: serde_saphyr::SnippetMode::Off,
    };
    let mut message = error.render_with_options(options);
    let (line, column) = match error.location() {
        Some(location) => {
            let line = usize::try_from(location.line()).unwrap_or(0);
            let column = usize::try_from(location.column()).unwrap_or(0);
            // The rendered text repeats the location relative to the document; drop it.
            for suffix in [
                format!(" at line {line}, column {column}"),
                format!(" at line {line} column {column}"),
            ] {
                if let Some(stripped) = message.strip_suffix(&suffix) {
                    message = stripped.to_owned();
                }
            }
            (start + line.saturating_sub(1), column)
        }
        None => (start, 1),
    };
    ManifestError::Parse {
        path: path.to_owned(),
        line,
        column,
        message: message.trim().to_owned(),
    }
}

/// Splits YAML text at document markers (`---` or `...` at the start of a line), returning each
/// document's text with the 1-based line its text starts on. A `---` marker is blanked rather
/// than dropped so that content after it on the same line (`--- {a: 1}`) keeps its position.
fn yaml_documents(text: &str) -> Vec<(usize, String)> {
    let mut documents = Vec::new();
    let mut current = String::new();
    let mut start = 1;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let marker = line == "---" || line.starts_with("--- ") || line.starts_with("---\t");
        let end = line == "..." || line.starts_with("... ");
        if marker || end {
            documents.push((start, std::mem::take(&mut current)));
            start = number + 1;
            if marker && line.len() > 3 {
                start = number;
                current.push_str("   ");
                current.push_str(&line[3..]);
                current.push('\n');
            }
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    documents.push((start, current));
    documents
}

/// The line of the first line of `chunk` (starting at `start`) with content.
fn first_content_line(start: usize, chunk: &str) -> Option<usize> {
    chunk
        .lines()
        .position(|line| {
            let line = line.trim();
            !(line.is_empty() || line.starts_with('#') || line.starts_with('%'))
        })
        .map(|offset| start + offset)
}

fn expand(source: Source, value: Value, into: &mut Vec<Document>) -> Result<(), ManifestError> {
    let invalid = |message: String| ManifestError::Invalid {
        at: source.clone(),
        message,
    };
    let Some(object) = value.as_object() else {
        return Err(invalid(
            "the document is not a mapping (a Kubernetes object)".into(),
        ));
    };
    let kind = match object.get("kind") {
        Some(Value::String(kind)) if !kind.is_empty() => kind.clone(),
        Some(_) => return Err(invalid("kind is not a string".into())),
        None => return Err(invalid("the object has no kind".into())),
    };
    match object.get("apiVersion") {
        Some(Value::String(v)) if !v.is_empty() => {}
        Some(_) => return Err(invalid("apiVersion is not a string".into())),
        None => return Err(invalid(format!("the {kind} has no apiVersion"))),
    }
    if kind.ends_with("List")
        && let Some(items) = object.get("items")
    {
        let Some(items) = items.as_array() else {
            return Err(invalid(format!("the {kind}'s items are not a list")));
        };
        for item in items {
            expand(source.clone(), item.clone(), into)?;
        }
        return Ok(());
    }
    let document = Document {
        source: source.clone(),
        object: value,
    };
    let metadata = document.object.get("metadata");
    if !matches!(metadata, Some(Value::Object(_))) {
        return Err(invalid(format!("the {kind} has no metadata")));
    }
    if document.name().is_empty() {
        return Err(invalid(format!(
            "the {kind} has neither metadata.name nor metadata.generateName"
        )));
    }
    into.push(document);
    Ok(())
}

/// What happened to one applied object.
#[derive(Debug)]
pub struct ManifestApplied {
    /// Where the object was read from.
    pub source: Source,
    /// Its kind.
    pub kind: String,
    /// Its name (the generated one for `generateName` objects that were created).
    pub name: String,
    /// Its namespace, for namespaced objects.
    pub namespace: Option<String>,
    /// `"created"` or `"applied"`, or why it failed.
    pub result: Result<&'static str, ManifestError>,
}

impl fmt::Display for ManifestApplied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.result {
            Ok(action) => {
                write!(f, "{} {}", self.kind, self.name)?;
                if let Some(namespace) = &self.namespace {
                    write!(f, " in {namespace}")?;
                }
                write!(f, " {action} (from {})", self.source)
            }
            Err(error) => write!(f, "{error}"),
        }
    }
}

/// How long [`apply`] waits for each CustomResourceDefinition to be established.
pub const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// Applies `documents` (see the module documentation for the order). Namespaced objects without
/// a namespace go to the client's default namespace. Every object is attempted; each outcome
/// is reported in file order within its group.
pub async fn apply(client: &kube::Client, documents: &[Document]) -> Vec<ManifestApplied> {
    let mut ordered: Vec<&Document> = documents.iter().collect();
    ordered.sort_by_key(|d| d.order());
    let mut kinds: HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)> = HashMap::new();
    let mut outcomes = Vec::with_capacity(ordered.len());
    for document in ordered {
        outcomes.push(apply_one(client, document, &mut kinds).await);
    }
    outcomes
}

/// Loads `paths` and applies them; fails only when a file cannot be read or parsed.
///
/// # Errors
/// As [`load`]; objects the server refuses are reported in their [`ManifestApplied::result`].
pub async fn apply_paths(
    client: &kube::Client,
    paths: &[PathBuf],
) -> Result<Vec<ManifestApplied>, ManifestError> {
    let documents = load(paths)?;
    Ok(apply(client, &documents).await)
}

async fn apply_one(
    client: &kube::Client,
    document: &Document,
    kinds: &mut HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>,
) -> ManifestApplied {
    let mut applied = ManifestApplied {
        source: document.source.clone(),
        kind: document.kind().to_owned(),
        name: document.name(),
        namespace: None,
        result: Ok("applied"),
    };
    let gvk = document.group_version_kind();
    let found = match kinds.get(&gvk) {
        Some(found) => found.clone(),
        None => match kube::discovery::pinned_kind(client, &gvk).await {
            Ok(found) => {
                kinds.insert(gvk.clone(), found.clone());
                found
            }
            Err(error) => {
                applied.result = Err(ManifestError::UnknownKind {
                    at: document.source.clone(),
                    api_version: document.api_version().to_owned(),
                    kind: applied.kind.clone(),
                    name: applied.name.clone(),
                    error: Box::new(error),
                });
                return applied;
            }
        },
    };
    let (resource, capabilities) = found;
    let api: Api<DynamicObject> = if capabilities.scope == Scope::Namespaced {
        let namespace = document
            .namespace()
            .map_or_else(|| client.default_namespace().to_owned(), str::to_owned);
        applied.namespace = Some(namespace.clone());
        Api::namespaced_with(client.clone(), &namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    };
    let rejected = |error: kube::Error, name: &str| ManifestError::Rejected {
        at: document.source.clone(),
        kind: document.kind().to_owned(),
        name: name.to_owned(),
        error: Box::new(error),
    };
    let object: DynamicObject = match serde_json::from_value(document.object.clone()) {
        Ok(object) => object,
        Err(error) => {
            applied.result = Err(ManifestError::Invalid {
                at: document.source.clone(),
                message: error.to_string(),
            });
            return applied;
        }
    };
    let named = object.metadata.name.clone().filter(|n| !n.is_empty());
    match named {
        Some(name) => {
            let params = PatchParams::apply(FIELD_MANAGER).force();
            if let Err(error) = api
                .patch(&name, &params, &Patch::Apply(&document.object))
                .await
            {
                applied.result = Err(rejected(error, &name));
                return applied;
            }
        }
        None => match api.create(&PostParams::default(), &object).await {
            Ok(created) => {
                applied.name = created.metadata.name.unwrap_or_default();
                applied.result = Ok("created");
            }
            Err(error) => {
                applied.result = Err(rejected(error, &applied.name));
                return applied;
            }
        },
    }
    if document.order() == 1 {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let established = kube::runtime::conditions::is_crd_established();
        let wait = kube::runtime::wait::await_condition(crds, &applied.name, established);
        match tokio::time::timeout(ESTABLISH_TIMEOUT, wait).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                applied.result = Err(ManifestError::NotEstablished {
                    at: document.source.clone(),
                    name: applied.name.clone(),
                    reason: error.to_string(),
                });
            }
            Err(_) => {
                applied.result = Err(ManifestError::NotEstablished {
                    at: document.source.clone(),
                    name: applied.name.clone(),
                    reason: format!("still not established after {ESTABLISH_TIMEOUT:?}"),
                });
            }
        }
    }
    applied
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_str(name: &str, text: &str) -> Result<Vec<Document>, ManifestError> {
        parse(Path::new(name), text)
    }

    #[test]
    fn splits_documents_and_keeps_their_lines() {
        let text = "# leading comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n--- {apiVersion: v1, kind: Namespace, metadata: {name: c}}\n";
        let docs = parse_str("x.yaml", text).unwrap();
        let found: Vec<(String, usize)> = docs.iter().map(|d| (d.name(), d.source.line)).collect();
        assert_eq!(
            found,
            vec![("a".into(), 2), ("b".into(), 9), ("c".into(), 12)]
        );
        assert_eq!(docs[2].kind(), "Namespace");
    }

    #[test]
    fn expands_lists_and_reads_json() {
        let text = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "g-"}}]}"#;
        let docs = parse_str("l.json", text).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].name(), "g-*");
        assert_eq!(docs[0].object["metadata"], json!({"generateName": "g-"}));
    }

    #[test]
    fn yaml_errors_name_the_file_and_line() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n";
        let error = parse_str("bad.yaml", text).unwrap_err();
        assert_eq!(error.to_string(), "bad.yaml:9:9: unclosed bracket '['");
    }

    #[test]
    fn json_errors_name_the_file_and_line() {
        let error = parse_str("bad.json", "{\n  \"kind\": \"ConfigMap\",\n  oops\n}").unwrap_err();
        assert!(error.to_string().starts_with("bad.json:3:"), "{error}");
    }

    #[test]
    fn documents_must_be_objects() {
        let missing_kind =
            parse_str("k.yaml", "apiVersion: v1\nmetadata: {name: x}\n").unwrap_err();
        assert_eq!(missing_kind.to_string(), "k.yaml:1: the object has no kind");
        let no_name =
            parse_str("n.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n").unwrap_err();
        assert!(
            no_name.to_string().contains("neither metadata.name"),
            "{no_name}"
        );
        let scalar = parse_str("s.yaml", "just text\n").unwrap_err();
        assert!(scalar.to_string().contains("not a mapping"), "{scalar}");
    }
}
