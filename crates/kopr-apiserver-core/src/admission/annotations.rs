//! Audit annotations from admission: what webhooks return in
//! `auditAnnotations` and what ValidatingAdmissionPolicies publish (their
//! `auditAnnotations`, and the `Audit` action's validation failures), kept
//! for the request's audit event. The HTTP layer runs each request within
//! [`collecting`]; admission adds to it with [`annotate`].

use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

tokio::task_local! {
    static ANNOTATIONS: Arc<Mutex<Map<String, Value>>>;
}

/// Runs `request`, returning its output and the annotations admission made.
pub async fn collecting<F: Future>(request: F) -> (F::Output, Map<String, Value>) {
    let annotations = Arc::new(Mutex::new(Map::new()));
    let output = ANNOTATIONS.scope(annotations.clone(), request).await;
    let made = annotations.lock().map(|m| m.clone()).unwrap_or_default();
    (output, made)
}

/// Adds an annotation to the current request's audit event; as kube, a key
/// is not overwritten with another value (the first stays).
pub(crate) fn annotate(key: &str, value: &str) {
    let _ = ANNOTATIONS.try_with(|annotations| {
        if let Ok(mut annotations) = annotations.lock() {
            match annotations.get(key) {
                Some(existing) if existing != value => {
                    tracing::debug!(key, "audit annotation already set; kept the first value");
                }
                _ => {
                    annotations.insert(key.to_string(), Value::from(value));
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn annotations_belong_to_their_request() {
        let ((), made) = collecting(async {
            annotate("a.example.com/k", "one");
            annotate("a.example.com/k", "two");
            annotate("b.example.com/k", "x");
        })
        .await;
        assert_eq!(made["a.example.com/k"], "one");
        assert_eq!(made["b.example.com/k"], "x");
        // Outside a request, nothing is kept and nothing fails.
        annotate("c/k", "v");
    }
}
