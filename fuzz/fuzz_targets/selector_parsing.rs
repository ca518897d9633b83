//! Label and field selectors parse or fail cleanly, and matching never panics.
#![no_main]

use kopr_apiserver_core::selectors::{FieldSelector, LabelSelector, POD_FIELDS, field_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let pod = serde_json::json!({"metadata": {"name": "p", "namespace": "n", "labels": {"app": "web", "tier": "1"}},
        "spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}});
    if let Ok(l) = LabelSelector::parse(text) {
        let _ = l.matches(pod["metadata"]["labels"].as_object());
        let _ = l.to_string();
    }
    if let Ok(f) = FieldSelector::parse(text) {
        let get = |label: &str| field_value(&POD_FIELDS, &pod, label).flatten();
        let _ = f.matches(&get);
        let _ = f.to_string();
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = LabelSelector::from_label_selector_value(&v);
    }
});
