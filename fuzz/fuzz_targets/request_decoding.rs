//! Request bodies in every accepted media type, and query strings, never
//! panic: they decode or give a Status.
#![no_main]

use kopr_apiserver_core::http::{body, query::Query};
use libfuzzer_sys::fuzz_target;

const TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let content_type = TYPES[selector as usize % TYPES.len()];
    if let Ok(mut obj) = body::decode_object(Some(content_type), rest) {
        // Typed decoding, defaulting and validation of whatever decoded.
        let Some(pods) = kopr_apiserver_core::kinds::all()
            .into_iter()
            .find(|k| k.group.is_empty() && k.plural == "pods")
        else {
            return;
        };
        let rt = pods.resource_type();
        let _ = kopr_apiserver_core::typed::normalize(&rt, &mut obj);
        if let Some(default) = pods.default {
            kopr_apiserver_core::defaults::apply(default, &mut obj);
        }
        let _ = kopr_apiserver_core::validation::validate(pods.validate, true, &obj, None);
    }
    if let Ok(text) = std::str::from_utf8(rest) {
        if let Ok(q) = Query::parse(Some(text)) {
            let _ = q.resource_version_number();
        }
    }
});
