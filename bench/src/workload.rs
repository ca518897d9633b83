//! The workload of the operator comparison: a namespaced `BenchItem` with one integer in its
//! spec. Every operator handles an item by writing `f(spec)` to the item's `status.result` and
//! to `data.result` of a ConfigMap child named like the item and owned by it.
//!
//! Kopf's operator (`bench/operators/kopf_operator.py`) mirrors [`result_of`] and the names
//! below; keep them in step.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of [`BenchItem`].
pub const GROUP: &str = "bench.kopr.dev";
/// The plural of [`BenchItem`].
pub const PLURAL: &str = "benchitems";
/// The key of the result in the ConfigMap child's `data`.
pub const RESULT_KEY: &str = "result";

/// The spec of a benchmark item.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "bench.kopr.dev",
    version = "v1",
    kind = "BenchItem",
    plural = "benchitems",
    namespaced,
    status = "BenchItemStatus"
)]
pub struct BenchItemSpec {
    /// The input of the handler.
    pub value: i64,
}

/// The status of a benchmark item: the handler's result, and whatever else the operator keeps
/// there (Kopf keeps its progress under `status.kopf`), hence unknown fields are preserved.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct BenchItemStatus {
    /// `f(spec)`, once handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// What handling an item with spec value `value` must produce: `value * 2`, as a string.
pub fn result_of(value: i64) -> String {
    value.saturating_mul(2).to_string()
}
