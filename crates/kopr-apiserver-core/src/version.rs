//! The Kubernetes version this server reports and behaves as.

/// Version reported by `/version` and in OpenAPI documents: (major, minor, gitVersion).
pub const KUBE_VERSION: (&str, &str, &str) = ("1", "32", "v1.32.0-kopr");
