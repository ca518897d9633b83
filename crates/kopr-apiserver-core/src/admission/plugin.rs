//! The contract of the built-in admission plugins: a mutating plugin changes the object, a
//! validating one accepts or refuses it, both synchronously and in process.

use serde_json::Value;

use crate::registry::AdmissionRequest;
use crate::status::ApiError;

/// A mutating admission plugin.
pub trait Mutating: Send + Sync {
    /// Changes `obj` as the plugin admits it.
    ///
    /// # Errors
    /// The Status that refuses the write.
    fn admit(&self, request: &AdmissionRequest<'_>, obj: &mut Value) -> Result<(), ApiError>;
}

/// A validating admission plugin.
pub trait Validating: Send + Sync {
    /// Accepts or refuses `obj`.
    ///
    /// # Errors
    /// The Status that refuses the write.
    fn validate(&self, request: &AdmissionRequest<'_>, obj: &Value) -> Result<(), ApiError>;
}
