//! Label selectors and field selectors, parsed and matched the way
//! kube-apiserver 1.32 does (apimachinery `labels.Parse`, `fields.ParseSelector`
//! and the per-kind field label conversions), including the exact error texts
//! that end up in a 400 BadRequest `Status`.
//!
//! Everything here works on `serde_json::Value` objects and never panics on
//! any input string.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::gofmt::quote as go_quote;

mod field;
mod label;
#[cfg(test)]
mod tests;

#[allow(unused_imports)]
pub use self::field::*;
#[allow(unused_imports)]
pub use self::label::*;

/// A selector that could not be parsed or uses an unsupported field label.
///
/// `Display` is exactly the message kube-apiserver puts in the 400 BadRequest
/// `Status` for the same input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The `labelSelector` (or a `metav1.LabelSelector` value) is invalid.
    #[error("{0}")]
    Label(String),
    /// The `fieldSelector` could not be parsed.
    #[error("{0}")]
    Field(String),
    /// The field selector names a field label this kind does not support.
    #[error("{0}")]
    UnsupportedField(String),
}
