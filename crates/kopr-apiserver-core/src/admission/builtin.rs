//! The admission plugins every server runs: the kind's defaulting
//! (mutating) and the kind's validation (validating), as its strategy
//! defines them.

use serde_json::Value;

use super::plugin::{Mutating, Validating};
use crate::object;
use crate::registry::{AdmissionRequest, invalid_object};
use crate::status::ApiError;

/// Fills in the kind's defaults.
#[derive(Debug, Default, Clone, Copy)]
pub struct Defaulting;

impl Mutating for Defaulting {
    fn admit(&self, request: &AdmissionRequest<'_>, obj: &mut Value) -> Result<(), ApiError> {
        request.rt.strategy.default(request.rt, obj);
        Ok(())
    }
}

/// Validates the object by the kind's rules: a 422 listing every error.
#[derive(Debug, Default, Clone, Copy)]
pub struct StrategyValidation;

impl Validating for StrategyValidation {
    fn validate(&self, request: &AdmissionRequest<'_>, obj: &Value) -> Result<(), ApiError> {
        let rt = request.rt;
        let own = match (request.subresource, request.old) {
            (Some(sub), Some(old)) => rt.strategy.validate_subresource_update(rt, sub, obj, old),
            _ => None,
        };
        let errors = own.unwrap_or_else(|| rt.strategy.validate(rt, obj, request.old));
        if errors.is_empty() {
            return Ok(());
        }
        Err(invalid_object(rt, object::name(obj), &errors))
    }
}
