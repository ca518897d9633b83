//! Strategies of the apiextensions kinds: custom resources (their CRD's
//! structural schema, CEL rules and metadata rules; no strategic merge
//! patch) and CustomResourceDefinitions themselves.

use serde_json::Value;

use super::Strategy;
use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::validation::FieldError;

/// The finalizer that holds a deleted CRD until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Custom resources: pruned, defaulted and validated by their version's
/// schema and rules; generation tracked; the deleted object in DELETE's answer.
#[derive(Debug, Default, Clone, Copy)]
pub struct CustomResourceStrategy;

impl Strategy for CustomResourceStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn accepts_strategic_merge_patch(&self) -> bool {
        false
    }

    fn normalize(&self, rt: &ResourceType, obj: &mut Value) -> Result<Vec<String>, ApiError> {
        let mut unknown = crate::typed::normalize_metadata(rt, obj)?;
        if let Some(custom) = &rt.custom {
            unknown.extend(custom.schema.prune(obj));
            custom.schema.drop_nulls(obj);
        }
        Ok(unknown)
    }

    fn default(&self, rt: &ResourceType, obj: &mut Value) {
        if let Some(custom) = &rt.custom {
            custom.schema.apply_defaults(obj);
        }
    }

    fn validate(&self, rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errors = crate::crd::validate_metadata(obj, old, rt.namespaced);
        let Some(custom) = &rt.custom else {
            return errors;
        };
        let mut schema_errors = custom.schema.validate(obj);
        crate::crd::structural::ratchet(&mut schema_errors, obj, old);
        errors.extend(schema_errors);
        if errors.is_empty() && !custom.rules.is_empty() {
            errors.extend(custom.rules.validate(obj, old));
        }
        errors
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// CustomResourceDefinitions: their own defaults and validation, generation
/// tracked, and a cleanup finalizer so their custom resources go first.
#[derive(Debug, Default, Clone, Copy)]
pub struct DefinitionStrategy;

impl Strategy for DefinitionStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn normalize(&self, rt: &ResourceType, obj: &mut Value) -> Result<Vec<String>, ApiError> {
        crate::typed::normalize(rt, obj)
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        crate::crd::definition::apply_defaults(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        crate::crd::definition::validate(obj, old)
    }

    fn deletion_finalizer(&self) -> Option<&'static str> {
        Some(CLEANUP_FINALIZER)
    }

    /// kube's PrepareForCreate: the status starts with the storage version in
    /// `storedVersions` and empty accepted names (Go writes `conditions`,
    /// `acceptedNames.plural` and `.kind` even when empty); the controller
    /// fills in the rest.
    fn prepare_for_create(&self, obj: &mut serde_json::Map<String, Value>) {
        let stored = crate::crd::definition::stored_versions(&Value::Object(obj.clone()), None);
        let mut status = serde_json::Map::new();
        status.insert("conditions".into(), Value::Null);
        status.insert(
            "acceptedNames".into(),
            crate::crd::definition::names::Names::default().to_json(),
        );
        status.insert(
            "storedVersions".into(),
            Value::Array(stored.into_iter().map(Value::String).collect()),
        );
        obj.insert("status".into(), Value::Object(status));
    }
}
