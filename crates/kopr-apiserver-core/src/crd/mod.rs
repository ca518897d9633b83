//! CustomResourceDefinitions: the CRD kind itself (validation, defaults,
//! status), and serving custom resources from it: per-version schemas
//! (pruning, defaulting, validation, CEL rules), printer columns, selectable
//! fields, the scale subresource and conversion webhooks.

pub mod cel;
pub mod conversion;
pub mod definition;
pub mod printer;
pub mod structural;

use std::sync::Arc;

use serde_json::Value;

use crate::validation::FieldError;

/// Why a simple JSON path (`.a.b`, `.a['b']`: a rule's `fieldPath`, a selectable
/// field) does not resolve against a schema; the messages are kube's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldPathError {
    /// A name the schema does not have.
    #[error("does not refer to a valid field")]
    NoSuchField,
    /// `[...]` where only `.name` is allowed.
    #[error("array notation is not allowed")]
    ArrayNotation,
    /// The path stops inside a step.
    #[error("unexpected end of JSON path")]
    UnexpectedEnd,
    /// `[` followed by something else than a quoted name.
    #[error("expected single quoted string but got {0}")]
    NotQuoted(String),
    /// A quoted name not followed by `]`.
    #[error("expected ] but got {0}")]
    NotClosed(String),
    /// A step that starts with neither `[` nor `.`.
    #[error("expected [ or . but got: {0}")]
    NoStep(String),
    /// An unknown escape in a quoted name.
    #[error("invalid escape char \\{0}")]
    Escape(char),
}

/// Group, version and plural of the CRD resource.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";

/// A printer column of a custom resource version.
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    /// Column name.
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub column_type: String,
    /// Optional format.
    pub format: String,
    /// Description.
    pub description: String,
    /// Priority (0 = shown by default).
    pub priority: i64,
    /// The JSONPath of the value, kubectl style (`.spec.x`).
    pub json_path: String,
}

/// Paths of the scale subresource.
#[derive(Debug, Clone)]
pub struct ScalePaths {
    /// `.spec.replicas`-style path of the desired replicas.
    pub spec_replicas: String,
    /// Path of the observed replicas.
    pub status_replicas: String,
    /// Path of the label selector string, if any.
    pub label_selector: Option<String>,
}

/// What serving one version of a custom resource needs.
pub struct CustomVersion {
    /// The version's `openAPIV3Schema`, as published in OpenAPI.
    pub openapi: Value,
    /// The structural schema.
    pub schema: structural::Structural,
    /// Compiled CEL rules.
    pub rules: cel::CelValidator,
    /// Whether the schema declares any `default`.
    pub has_defaults: bool,
    /// Printer columns.
    pub columns: Vec<PrinterColumn>,
    /// Selectable field paths (`.spec.color`).
    pub selectable_fields: Vec<String>,
    /// The scale subresource, if served.
    pub scale: Option<ScalePaths>,
    /// The CRD's conversion webhook (`strategy: Webhook`); none converts by
    /// rewriting `apiVersion` only.
    pub conversion: Option<Arc<conversion::Webhook>>,
}

impl std::fmt::Debug for CustomVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomVersion")
            .field("columns", &self.columns)
            .field("selectable_fields", &self.selectable_fields)
            .field("scale", &self.scale)
            .finish_non_exhaustive()
    }
}

fn has_default(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.contains_key("default") || m.values().any(has_default),
        Value::Array(a) => a.iter().any(has_default),
        _ => false,
    }
}

fn str_field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

impl CustomVersion {
    /// Builds the serving information of one entry of `spec.versions`.
    /// `index` locates it for error paths.
    pub fn from_version(version: &Value, index: usize) -> Result<CustomVersion, Vec<FieldError>> {
        let schema_value = version
            .pointer("/schema/openAPIV3Schema")
            .cloned()
            .unwrap_or(Value::Null);
        let rules = cel::CelValidator::compile(
            &schema_value,
            &format!("spec.versions[{index}].schema.openAPIV3Schema"),
        )?;
        let columns = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: str_field(c, "name").to_string(),
                        column_type: str_field(c, "type").to_string(),
                        format: str_field(c, "format").to_string(),
                        description: str_field(c, "description").to_string(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: str_field(c, "jsonPath").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let selectable_fields = version
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .map(|s| str_field(s, "jsonPath").to_string())
                    .collect()
            })
            .unwrap_or_default();
        let scale = version.pointer("/subresources/scale").map(|s| ScalePaths {
            spec_replicas: str_field(s, "specReplicasPath").to_string(),
            status_replicas: str_field(s, "statusReplicasPath").to_string(),
            label_selector: s
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
        Ok(CustomVersion {
            openapi: schema_value.clone(),
            has_defaults: has_default(&schema_value),
            schema: structural::Structural::from_value(&schema_value),
            rules,
            columns,
            selectable_fields,
            scale,
            conversion: None,
        })
    }
}

/// Reads the value at a `.a.b.c` path.
pub fn value_at<'a>(obj: &'a Value, dotted: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in dotted
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
    {
        cur = cur.get(part)?;
    }
    Some(cur)
}

/// Sets the value at a `.a.b.c` path, creating objects on the way.
pub fn set_value_at(obj: &mut Value, dotted: &str, value: Value) {
    let parts: Vec<&str> = dotted
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
        .collect();
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut cur = obj;
    for p in parents {
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        cur = map
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    if let Some(map) = cur.as_object_mut() {
        map.insert(last.to_string(), value);
    }
}

/// Shared serving information of a custom resource version.
pub type CustomInfo = Arc<CustomVersion>;

/// ObjectMeta validation of a custom resource (names are DNS subdomains).
pub fn validate_metadata(obj: &Value, old: Option<&Value>, namespaced: bool) -> Vec<FieldError> {
    use crate::validation::{Checker, metadata, names};
    let mut ck = Checker::default();
    let Some(root) = obj.as_object() else {
        return vec![FieldError::type_invalid("", obj.clone(), "object")];
    };
    metadata::validate_object_meta(
        &mut ck,
        root,
        namespaced,
        names::name_is_dns_subdomain,
        false,
    );
    if let Some(o) = old.and_then(Value::as_object) {
        metadata::validate_object_meta_update(&mut ck, root, o);
    }
    ck.errs
}

/// Server-side apply's view of a custom resource schema.
pub struct StructuralMergeSchema<'a>(pub &'a structural::Structural);

impl crate::patch::schema::MergeSchema for StructuralMergeSchema<'_> {
    fn list_strategy(&self, path: &[&str]) -> crate::patch::schema::ListStrategy {
        self.0.list_strategy(path)
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        self.0.map_is_atomic(path)
    }
}

/// The OpenAPI schema of a custom resource kind: its CRD schema with the
/// type and object metadata fields every object has.
pub fn openapi_schema(custom: &CustomVersion, group: &str, version: &str, kind: &str) -> Value {
    let mut schema = match &custom.openapi {
        Value::Object(m) => Value::Object(m.clone()),
        _ => serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    if let Some(m) = schema.as_object_mut() {
        let props = m
            .entry("properties")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(p) = props.as_object_mut() {
            p.insert("apiVersion".into(), serde_json::json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}));
            p.insert("kind".into(), serde_json::json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}));
            p.insert("metadata".into(), serde_json::json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}));
        }
        m.insert(
            "x-kubernetes-group-version-kind".into(),
            serde_json::json!([{"group": group, "version": version, "kind": kind}]),
        );
        m.entry("type")
            .or_insert_with(|| serde_json::json!("object"));
    }
    schema
}
