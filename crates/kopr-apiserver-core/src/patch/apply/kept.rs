//! An update's managedFields with the entries it leaves alone kept as stored.
//!
//! The general path ([`update_managed_fields`]) decodes every entry into a [`FieldSet`],
//! takes the changed fields away from the other managers, adds them to the writer's entry
//! and encodes every entry again. On most updates (a controller writing its status, say)
//! nobody else owns what changed and the writer already owns it, so every entry but the
//! writer's `time` comes out as it went in. [`update`] writes that result without the
//! decoding and encoding, and answers `None` wherever it cannot show the result is the
//! same: an entry that encoding would rewrite, a field another manager loses, removed
//! fields, the cap on update managers, numbers compared as floats.

#[allow(unused_imports)]
use super::*;

/// Deeper `fieldsV1` is left to the general path.
const MAX_FIELDS_DEPTH: usize = 256;

/// The keys [`entry_json`] writes.
const ENTRY_KEYS: [&str; 7] = [
    "apiVersion",
    "fieldsType",
    "fieldsV1",
    "manager",
    "operation",
    "subresource",
    "time",
];

/// The managedFields the general path writes for this update, when it can be had from the
/// stored entries as they are. `stored` is the list the general path decodes; `written` is
/// the list that came with the new object, which the general path takes instead when it is
/// different (and which is moved from, not copied, when it is the same); `changed` and
/// `owned` are the fields the update changed and those it records as the writer's.
pub(super) fn update(
    req: &UpdateRequest<'_>,
    stored: &Value,
    written: &mut Option<Value>,
    cmp: &Comparison,
    changed: &FieldSet,
    owned: &FieldSet,
) -> Option<Value> {
    let Value::Array(entries) = stored else {
        return None;
    };
    let same_list = written.as_ref() == Some(stored);
    if entries.is_empty()
        || !cmp.removed.is_empty()
        || (req.subresource.is_none() && written.is_some() && !same_list)
        || has_float(changed)
    {
        return None;
    }
    let writer = req.writer();
    let writer_id = (
        writer.manager.as_str(),
        false,
        writer.api_version.as_str(),
        writer.subresource.as_str(),
    );
    let mut ids = std::collections::HashSet::with_capacity(entries.len());
    let mut updaters = 0;
    // The writer's entry, and whether its fields stay as they are.
    let mut own: Option<(usize, bool)> = None;
    for (i, entry) in entries.iter().enumerate() {
        let Value::Object(e) = entry else {
            return None;
        };
        let fields = canonical_entry(e)?;
        let id = identity(e);
        updaters += usize::from(!id.1);
        if id == writer_id && !owned.is_empty() {
            // The writer loses what changed and gains what it records: the same set when it
            // owns all it records and loses nothing it does not record again.
            let lost = changed.difference(owned);
            own = Some((
                i,
                owned.within_fields_v1(fields) && !lost.meets_fields_v1(fields),
            ));
        } else if changed.meets_fields_v1(fields) {
            return None;
        }
        if !ids.insert(id) {
            return None;
        }
    }
    if !owned.is_empty() && own.is_none() {
        updaters += 1;
    }
    if updaters > MAX_UPDATE_MANAGERS {
        return None;
    }
    // What becomes of the writer's entry: a new time only, a new set (in its place, or
    // added), or nothing when the update records nothing.
    let plan = match own {
        Some((i, true)) => Writer::Touch(i),
        Some((i, false)) => {
            let before = FieldSet::from_fields_v1(entries[i].get("fieldsV1")?).ok()?;
            Writer::Put(Some(i), owned.union(&before.difference(changed)))
        }
        None if !owned.is_empty() => Writer::Put(None, owned.clone()),
        None => Writer::Leave,
    };
    let mut list = match written.take() {
        Some(Value::Array(list)) if same_list => list,
        other => {
            *written = other;
            entries.clone()
        }
    };
    match plan {
        Writer::Touch(i) => {
            if let Some(Value::Object(e)) = list.get_mut(i) {
                e.insert("time".into(), Value::String(req.now.to_string()));
            }
        }
        Writer::Put(at, set) => {
            let entry = entry_json(&writer, req.api_version, Some(req.now), set.to_fields_v1());
            match at.and_then(|i| list.get_mut(i)) {
                Some(slot) => *slot = entry,
                None => list.push(entry),
            }
        }
        Writer::Leave => {}
    }
    list.sort_by(|p, q| order_key(p).cmp(&order_key(q)));
    Some(Value::Array(list))
}

/// What an update does to the writer's entry in a kept list.
enum Writer {
    /// Its fields stay as they are: only its time is new.
    Touch(usize),
    /// It gets this set: at its index, or added when it has no entry yet.
    Put(Option<usize>, FieldSet),
    /// The update records nothing for the writer.
    Leave,
}

/// What [`encode_managed_fields`] orders entries by: operation (`Apply` first), time,
/// manager, apiVersion, subresource.
fn order_key(entry: &Value) -> (bool, Option<&str>, &str, &str, &str) {
    let s = |k: &str| entry.get(k).and_then(Value::as_str);
    (
        s("operation") != Some("Apply"),
        s("time"),
        s("manager").unwrap_or(""),
        s("apiVersion").unwrap_or(""),
        s("subresource").unwrap_or(""),
    )
}

/// What [`ManagerInfo::identifier`] keys an entry by, as [`decode_managed_fields`] reads
/// it: manager, whether it applies, apiVersion (none for appliers), subresource.
fn identity(e: &Map<String, Value>) -> (&str, bool, &str, &str) {
    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
    let applies = s("operation") == "Apply";
    (
        s("manager"),
        applies,
        if applies { "" } else { s("apiVersion") },
        s("subresource"),
    )
}

/// The entry's `fieldsV1` when decoding the entry and encoding it again writes it back
/// unchanged: only the keys [`entry_json`] writes, each in the form it writes, and
/// `fieldsV1` in its canonical form with at least one field.
fn canonical_entry(e: &Map<String, Value>) -> Option<&Map<String, Value>> {
    let text = |k: &str| e.get(k).and_then(Value::as_str);
    let named = |k: &str| {
        e.get(k)
            .is_none_or(|v| v.as_str().is_some_and(|s| !s.is_empty()))
    };
    let fits = e.keys().all(|k| ENTRY_KEYS.contains(&k.as_str()))
        && named("manager")
        && named("subresource")
        && matches!(text("operation"), Some("Apply" | "Update"))
        && text("apiVersion").is_some_and(|s| !s.is_empty())
        && e.get("time").is_none_or(Value::is_string)
        && text("fieldsType") == Some("FieldsV1");
    match e.get("fieldsV1") {
        Some(Value::Object(fields))
            if fits && !fields.is_empty() && canonical_fields(fields, 0) =>
        {
            Some(fields)
        }
        _ => None,
    }
}

/// Whether a `fieldsV1` level is what [`FieldSet::to_fields_v1`] writes for its decoding:
/// `"."` (never at the top) only beside other keys and always `{}`, every other key a
/// canonical path element whose value is an object, recursively.
fn canonical_fields(level: &Map<String, Value>, depth: usize) -> bool {
    if depth > MAX_FIELDS_DEPTH {
        return false;
    }
    level.iter().all(|(k, v)| {
        let Value::Object(inner) = v else {
            return false;
        };
        if k == "." {
            return depth > 0 && inner.is_empty() && level.len() > 1;
        }
        canonical_key(k) && (inner.is_empty() || canonical_fields(inner, depth + 1))
    })
}

/// Whether a `fieldsV1` key is written back as it is, and names one element only by its
/// text (no floats, which compare equal in other spellings).
fn canonical_key(k: &str) -> bool {
    let Some((prefix, rest)) = k.split_once(':') else {
        return false;
    };
    match prefix {
        "f" => true,
        "i" => rest.parse::<usize>().is_ok_and(|i| i.to_string() == rest),
        "k" | "v" => match serde_json::from_str::<Value>(rest) {
            Ok(v) => {
                (prefix == "v" || v.is_object())
                    && !value_has_float(&v)
                    && serde_json::to_string(&v).is_ok_and(|text| text == rest)
            }
            Err(_) => false,
        },
        _ => false,
    }
}

fn value_has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(a) => a.iter().any(value_has_float),
        Value::Object(m) => m.values().any(value_has_float),
        _ => false,
    }
}

/// Whether a set names an element by a value holding a float.
fn has_float(set: &FieldSet) -> bool {
    let float = |pe: &PathElement| match pe {
        PathElement::Key(kv) => kv.iter().any(|(_, v)| value_has_float(v)),
        PathElement::Value(v) => value_has_float(v),
        PathElement::Field(_) | PathElement::Index(_) => false,
    };
    set.members.iter().any(float) || set.children.iter().any(|(pe, c)| float(pe) || has_float(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::apply_schema;

    /// One update as a test runs it: the writer, its subresource, the paths reset.
    struct Write {
        manager: &'static str,
        subresource: Option<&'static str>,
        ignored: &'static [&'static [&'static str]],
        change: fn(&mut Value),
    }

    const STATUS: &[&[&str]] = &[&["spec"]];
    const MAIN: &[&[&str]] = &[&["status"]];

    fn run(old: &Value, new: &Value, w: &Write, now: &str, general: bool) -> Value {
        let schema = apply_schema("v1", "Pod");
        let mut out = new.clone();
        FORCE_GENERAL.with(|f| f.set(general));
        update_managed_fields(
            UpdateRequest {
                old: Some(old),
                manager: w.manager,
                subresource: w.subresource,
                api_version: "v1",
                now,
                ignored_fields: w.ignored,
            },
            &mut out,
            &schema,
        );
        FORCE_GENERAL.with(|f| f.set(false));
        out
    }

    fn managed(obj: &mut Value) -> &mut Value {
        &mut obj["metadata"]["managedFields"]
    }

    /// Ways a stored list can differ from what encoding its decoding writes, or hold what
    /// the shortcut leaves to the general path.
    fn odd_lists(list: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        let mut first = |f: &dyn Fn(&mut Map<String, Value>)| {
            let mut l = list.clone();
            if let Some(Value::Object(e)) = l.get_mut(0) {
                f(e);
            }
            out.push(l);
        };
        first(&|e| {
            e.insert("extra".into(), json!(1));
        });
        first(&|e| {
            e.insert("manager".into(), json!(""));
        });
        first(&|e| {
            e.insert("subresource".into(), json!(""));
        });
        first(&|e| {
            e.insert("time".into(), json!(5));
        });
        first(&|e| {
            e.remove("time");
        });
        first(&|e| {
            e.insert("apiVersion".into(), json!(""));
        });
        first(&|e| {
            e.insert("operation".into(), json!("Patch"));
        });
        first(&|e| {
            e.insert("fieldsType".into(), json!("FieldsV2"));
        });
        first(&|e| {
            e.insert("fieldsV1".into(), json!({}));
        });
        first(&|e| {
            e.remove("fieldsV1");
        });
        first(&|e| {
            e["fieldsV1"]["."] = json!({});
        });
        first(&|e| {
            e["fieldsV1"]["f:metadata"]["f:annotations"] = json!({".": {}});
        });
        first(&|e| {
            e["fieldsV1"]["f:metadata"]["."] = json!({"f:x": {}});
        });
        first(&|e| {
            e["fieldsV1"]["f:spec"]["f:containers"]["k:{ \"name\": \"c\" }"] = json!({});
        });
        first(&|e| {
            e["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":1.0}"] = json!({});
        });
        first(&|e| {
            e["fieldsV1"]["f:spec"]["f:tolerations"] = json!({"v:1.0": {}, "i:01": {}});
        });
        first(&|e| {
            e["fieldsV1"]["f:spec"]["f:nodeName"] = json!(1);
        });
        first(&|e| {
            e["fieldsV1"]["x:y"] = json!({});
        });
        // Another manager owning what the updates change.
        let mut taken = list.clone();
        if let Value::Array(a) = &mut taken {
            a.push(json!({"manager": "other", "operation": "Update", "apiVersion": "v1",
                "time": "2023-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:status": {"f:phase": {}, "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}},
                    "f:metadata": {"f:labels": {"f:a": {}, "f:b": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {"f:image": {}}}}}}));
            // Twice the same manager, and an entry that is no object.
            let mut twice = a.clone();
            twice.push(a[0].clone());
            out.push(Value::Array(twice));
            let mut odd = a.clone();
            odd.push(json!("x"));
            out.push(Value::Array(odd));
            // Ten more update managers: the cap merges the oldest.
            let mut many = a.clone();
            for i in 0..10 {
                many.push(json!({"manager": format!("m{i}"), "operation": "Update",
                    "apiVersion": "v1", "time": format!("2023-01-0{}T00:00:00Z", i % 9 + 1),
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:annotations": {format!("f:x{i}"): {}}}}}));
            }
            out.push(Value::Array(many));
        }
        out.push(taken);
        out.push(json!("x"));
        out.push(json!([]));
        out
    }

    #[test]
    fn kept_entries_are_what_the_general_path_writes() {
        let writes = [
            Write {
                manager: "kubelet",
                subresource: Some("status"),
                ignored: STATUS,
                change: |o| o["status"]["phase"] = json!("Running"),
            },
            Write {
                manager: "kubelet",
                subresource: Some("status"),
                ignored: STATUS,
                change: |o| o["status"]["phase"] = json!("Succeeded"),
            },
            Write {
                manager: "kubelet",
                subresource: Some("status"),
                ignored: STATUS,
                change: |o| o["status"]["conditions"][0]["status"] = json!("False"),
            },
            Write {
                manager: "kubelet",
                subresource: Some("status"),
                ignored: STATUS,
                change: |o| o["status"]["hostIP"] = json!("10.0.0.1"),
            },
            Write {
                manager: "ctl",
                subresource: None,
                ignored: MAIN,
                change: |o| o["metadata"]["labels"]["b"] = json!("2"),
            },
            Write {
                manager: "ctl",
                subresource: None,
                ignored: MAIN,
                change: |o| o["metadata"]["labels"]["b"] = json!("3"),
            },
            Write {
                manager: "creator",
                subresource: None,
                ignored: MAIN,
                change: |o| o["spec"]["containers"][0]["image"] = json!("j"),
            },
            Write {
                manager: "ctl",
                subresource: None,
                ignored: MAIN,
                change: |o| o["metadata"]["labels"]["a"] = json!("9"),
            },
            Write {
                manager: "",
                subresource: None,
                ignored: MAIN,
                change: |o| o["metadata"]["annotations"] = json!({"n": "1"}),
            },
            Write {
                manager: "ctl",
                subresource: None,
                ignored: MAIN,
                change: |_| {},
            },
            Write {
                manager: "ctl",
                subresource: None,
                ignored: MAIN,
                change: |o| o["status"]["phase"] = json!("Ignored"),
            },
            Write {
                manager: "ctl",
                subresource: None,
                ignored: MAIN,
                change: |o| {
                    if let Some(labels) = o["metadata"]["labels"].as_object_mut() {
                        labels.remove("b");
                    }
                },
            },
        ];
        let created = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "d", "labels": {"a": "1"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "True"}]}});
        let mut current = created.clone();
        let schema = apply_schema("v1", "Pod");
        update_managed_fields(
            UpdateRequest {
                old: None,
                manager: "creator",
                subresource: None,
                api_version: "v1",
                now: T0,
                ignored_fields: MAIN,
            },
            &mut current,
            &schema,
        );
        let before = KEPT_UPDATES.with(std::cell::Cell::get);
        let times = [
            "2024-01-01T00:00:01Z",
            "2024-01-01T00:00:02Z",
            "2024-01-01T00:00:03Z",
        ];
        for (step, w) in writes.iter().enumerate() {
            let now = times[step % times.len()];
            let mut new = current.clone();
            (w.change)(&mut new);
            let stored = current["metadata"]["managedFields"].clone();
            // The new object with the stored list, without one, and with a list of its own.
            let mut without = new.clone();
            if let Some(m) = without["metadata"].as_object_mut() {
                m.remove("managedFields");
            }
            let mut own = new.clone();
            if let Some(a) = managed(&mut own).as_array_mut() {
                a.truncate(1);
            }
            for candidate in [&new, &without, &own] {
                assert_eq!(
                    run(&current, candidate, w, now, false),
                    run(&current, candidate, w, now, true),
                    "step {step}\n{candidate}"
                );
            }
            for list in odd_lists(&stored) {
                let mut old = current.clone();
                *managed(&mut old) = list.clone();
                let mut odd_new = new.clone();
                *managed(&mut odd_new) = list.clone();
                for candidate in [&odd_new, &new, &without] {
                    assert_eq!(
                        run(&old, candidate, w, now, false),
                        run(&old, candidate, w, now, true),
                        "step {step}, stored {list}\n{candidate}"
                    );
                }
            }
            current = run(&current, &new, w, now, true);
        }
        // The shortcut was taken where it applies: a status write by its owner, a label
        // nobody else owns, a write that changes nothing.
        let taken = KEPT_UPDATES.with(std::cell::Cell::get) - before;
        assert!(taken >= 10, "the shortcut was taken {taken} times");
        // The second status write kept the entries as they were, the writer's time aside.
        let phases = current["metadata"]["managedFields"].clone();
        assert!(phases.as_array().is_some_and(|a| a.len() >= 3), "{phases}");
    }

    const T0: &str = "2024-01-01T00:00:00Z";

    #[test]
    fn canonical_keys() {
        for good in [
            "f:a",
            "f:",
            "i:0",
            "i:12",
            "k:{\"name\":\"c\"}",
            "v:\"x\"",
            "v:3",
        ] {
            assert!(canonical_key(good), "{good}");
        }
        for bad in [
            "a",
            "x:y",
            "i:01",
            "i:-1",
            "k:{ \"name\":\"c\"}",
            "k:\"c\"",
            "v:1.0",
            "v:x",
        ] {
            assert!(!canonical_key(bad), "{bad}");
        }
    }
}
