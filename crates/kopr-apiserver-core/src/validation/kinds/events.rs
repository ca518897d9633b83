//! Validation of Events, core/v1 and events.k8s.io/v1.

#[allow(unused_imports)]
use super::*;

// ------------------------------------------------------------------ events

pub(super) fn event_common(ck: &mut Checker, root: &Obj, strict_v1: bool) {
    // Field names follow kube's internal Event (paths are those of core/v1).
    let meta = sub(ck, root, "metadata", "");
    let ns = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    let (involved, reporting_controller, note_field, event_time) = if strict_v1 {
        ("regarding", "reportingController", "note", "eventTime")
    } else {
        (
            "involvedObject",
            "reportingComponent",
            "message",
            "eventTime",
        )
    };
    let inv = sub(ck, root, involved, "");
    let inv_ns = ck.string(inv, "namespace", involved);
    let has_event_time = !matches!(root.get(event_time), None | Some(Value::Null));
    if !has_event_time {
        if inv_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                ck.push(FieldError::invalid(
                    "involvedObject.namespace",
                    inv_ns,
                    "does not match event.namespace",
                ));
            }
        } else if ns != inv_ns {
            ck.push(FieldError::invalid(
                "involvedObject.namespace",
                inv_ns,
                "does not match event.namespace",
            ));
        }
    } else {
        if inv_ns.is_empty() && ns != "default" && ns != "kube-system" {
            ck.push(FieldError::invalid(
                "involvedObject.namespace",
                inv_ns,
                "does not match event.namespace",
            ));
        }
        let rc = ck.string(root, reporting_controller, "");
        if rc.is_empty() {
            ck.push(FieldError::required(reporting_controller, ""));
        }
        ck.extend(reporting_controller, rc, names::is_qualified_name(rc));
        let limited = [
            ("reportingInstance", "reportingInstance", 128usize),
            ("action", "action", 128),
            ("reason", "reason", 128),
        ];
        for (json, go, limit) in limited {
            let v = ck.string(root, json, "");
            if v.is_empty() {
                ck.push(FieldError::required(go, ""));
            }
            if v.len() > limit {
                ck.push(FieldError::invalid(
                    go,
                    "",
                    format!("can have at most {limit} characters"),
                ));
            }
        }
        let msg = ck.string(root, note_field, "");
        if msg.len() > 1024 {
            ck.push(FieldError::invalid(
                "message",
                "",
                "can have at most 1024 characters",
            ));
        }
    }
    ck.extend("namespace", ns, names::is_dns1123_subdomain(ns));
}

pub(crate) fn core_event(ck: &mut Checker, root: &Obj, _old: Option<&Obj>) {
    event_common(ck, root, false);
}

pub(crate) fn events_event(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    event_common(ck, root, true);
    match old {
        None => validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true),
        Some(o) => validate_object_meta_update(ck, root, o),
    }
    if let Some(s) = ck.obj(root, "series", "") {
        let c = ck.i32(s, "count", "series").unwrap_or(0);
        if c < 2 {
            ck.push(FieldError::invalid(
                "series.count",
                "",
                "should be at least 2",
            ));
        }
        if matches!(s.get("lastObservedTime"), None | Some(Value::Null)) {
            ck.push(FieldError::required("series.lastObservedTime", ""));
        }
    }
    if old.is_none() {
        if matches!(root.get("eventTime"), None | Some(Value::Null)) {
            ck.push(FieldError::required("eventTime", ""));
        }
        let ty = ck.string(root, "type", "");
        if ty != "Normal" && ty != "Warning" {
            ck.push(FieldError::invalid(
                "type",
                "",
                format!("has invalid value: {ty}"),
            ));
        }
        for (json, go) in [
            ("deprecatedFirstTimestamp", "firstTimestamp"),
            ("deprecatedLastTimestamp", "lastTimestamp"),
        ] {
            if !matches!(root.get(json), None | Some(Value::Null)) {
                ck.push(FieldError::invalid(go, "", "needs to be unset"));
            }
        }
        if root
            .get("deprecatedCount")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            != 0
        {
            ck.push(FieldError::invalid("count", "", "needs to be unset"));
        }
        let src = root.get("deprecatedSource").and_then(Value::as_object);
        let set = src.is_some_and(|s| {
            ["component", "host"]
                .iter()
                .any(|k| !s.get(*k).and_then(Value::as_str).unwrap_or("").is_empty())
        });
        if set {
            ck.push(FieldError::invalid("source", "", "needs to be unset"));
        }
    } else if let Some(o) = old {
        for (json, go) in [
            ("regarding", "involvedObject"),
            ("reason", "reason"),
            ("note", "message"),
            ("type", "type"),
            ("eventTime", "eventTime"),
            ("action", "action"),
            ("related", "related"),
            ("reportingController", "reportingController"),
            ("reportingInstance", "reportingInstance"),
        ] {
            let n = root.get(json).cloned().unwrap_or(Value::Null);
            if n != o.get(json).cloned().unwrap_or(Value::Null) {
                ck.push(FieldError::invalid(go, n, FIELD_IMMUTABLE));
            }
        }
    }
}
