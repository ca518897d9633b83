//! Patches of every type applied to a realistic object never panic.
#![no_main]

use kopr_apiserver_core::http::body::{PatchKind, decode_patch};
use kopr_apiserver_core::registry::patching::{PatchOptions, apply_to};
use kopr_apiserver_core::resources::ResourceType;
use libfuzzer_sys::fuzz_target;

const KINDS: &[PatchKind] = &[
    PatchKind::Json,
    PatchKind::Merge,
    PatchKind::Strategic,
    PatchKind::Apply,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let kind = KINDS[selector as usize % KINDS.len()];
    let rt = ResourceType::new(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        true,
    );
    let current = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "labels": {"a": "b"}, "finalizers": ["x/y"]},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}], "env": [{"name": "E", "value": "1"}]}],
                     "volumes": [{"name": "v", "emptyDir": {}}]}}}
    });
    let opts = PatchOptions {
        field_manager: "fuzz".into(),
        ..PatchOptions::default()
    };
    if let Ok(doc) = decode_patch(kind, rest, true) {
        let _ = apply_to(&rt, Some(&current), &doc, &opts, None);
        if kind == PatchKind::Apply {
            let _ = apply_to(&rt, None, &doc, &opts, None);
        }
    }
});
