//! Managers and `metadata.managedFields`: decoding and encoding entries,
//! taking ownership away, capping the number of update managers.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Managers and managedFields
// ---------------------------------------------------------------------------

/// Operation of a managedFields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write.
    Update,
}

impl Operation {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Identity of a field manager as kube keys it (Apply entries ignore the
/// API version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerInfo {
    /// `manager` name.
    pub manager: String,
    /// `operation`.
    pub operation: Operation,
    /// `apiVersion` (empty for appliers, which are not keyed by version).
    pub api_version: String,
    /// `subresource`, empty for the main resource.
    pub subresource: String,
}

impl ManagerInfo {
    /// kube's manager identifier: the JSON of the entry's identity fields.
    pub(super) fn identifier(&self) -> String {
        let mut out = Vec::with_capacity(96);
        out.push(b'{');
        let mut field = |name: &str, value: &str| {
            if out.len() > 1 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            // Writing a string into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut out, value);
        };
        if !self.manager.is_empty() {
            field("manager", &self.manager);
        }
        field("operation", self.operation.as_str());
        if !self.api_version.is_empty() {
            field("apiVersion", &self.api_version);
        }
        if !self.subresource.is_empty() {
            field("subresource", &self.subresource);
        }
        out.push(b'}');
        String::from_utf8(out).unwrap_or_default()
    }

    /// How kube names the manager in conflict messages:
    /// `"name"`, `"name" with subresource "status"`, `... using v1`.
    pub fn display(&self) -> String {
        let mut s = go_quote(&self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {}", go_quote(&self.subresource));
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) info: ManagerInfo,
    pub(super) api_version: String,
    pub(super) set: FieldSet,
    pub(super) time: Option<String>,
}

/// Managers keyed by identifier.
pub(super) type Managers = BTreeMap<String, Entry>;

pub(super) fn decode_managed_fields(v: Option<&Value>) -> Result<Managers, ManagedFieldsError> {
    let mut out = Managers::new();
    let list = match v {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(ManagedFieldsError::NotList),
    };
    for (i, e) in list.iter().enumerate() {
        let Value::Object(e) = e else {
            return Err(ManagedFieldsError::NotObject(i));
        };
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let operation = match s("operation").as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err(ManagedFieldsError::Operation),
        };
        let api_version = s("apiVersion");
        if api_version.is_empty() {
            return Err(ManagedFieldsError::NoApiVersion);
        }
        match s("fieldsType").as_str() {
            "FieldsV1" => {}
            "" => return Err(ManagedFieldsError::NoFieldsType(i)),
            other => return Err(ManagedFieldsError::FieldsType(other.to_string(), i)),
        }
        let set = match e.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::default(),
            Some(f) => FieldSet::from_fields_v1(f)?,
        };
        let info = ManagerInfo {
            manager: s("manager"),
            operation,
            api_version: if operation == Operation::Apply {
                String::new()
            } else {
                api_version.clone()
            },
            subresource: s("subresource"),
        };
        let time = e.get("time").and_then(Value::as_str).map(str::to_string);
        out.insert(
            info.identifier(),
            Entry {
                info,
                api_version,
                set,
                time,
            },
        );
    }
    Ok(out)
}

pub(super) fn encode_managed_fields(managers: &Managers) -> Option<Value> {
    let mut entries: Vec<&Entry> = managers.values().filter(|e| !e.set.is_empty()).collect();
    if entries.is_empty() {
        return None;
    }
    entries.sort_by(|p, q| {
        p.info
            .operation
            .cmp(&q.info.operation)
            .then_with(|| p.time.cmp(&q.time))
            .then_with(|| p.info.manager.cmp(&q.info.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.info.subresource.cmp(&q.info.subresource))
    });
    let list = entries
        .into_iter()
        .map(|e| {
            entry_json(
                &e.info,
                &e.api_version,
                e.time.as_deref(),
                e.set.to_fields_v1(),
            )
        })
        .collect();
    Some(Value::Array(list))
}

/// One `managedFields` entry as kube writes it.
pub(super) fn entry_json(
    info: &ManagerInfo,
    api_version: &str,
    time: Option<&str>,
    fields_v1: Value,
) -> Value {
    let mut m = Map::new();
    if !info.manager.is_empty() {
        m.insert("manager".into(), Value::String(info.manager.clone()));
    }
    m.insert(
        "operation".into(),
        Value::String(info.operation.as_str().into()),
    );
    m.insert("apiVersion".into(), Value::String(api_version.to_string()));
    if let Some(t) = time {
        m.insert("time".into(), Value::String(t.to_string()));
    }
    m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
    m.insert("fieldsV1".into(), fields_v1);
    if !info.subresource.is_empty() {
        m.insert(
            "subresource".into(),
            Value::String(info.subresource.clone()),
        );
    }
    Value::Object(m)
}

pub(super) fn set_managed_fields(obj: &mut Value, managers: &Managers) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match encode_managed_fields(managers) {
        Some(list) => put_managed_fields(obj, list),
        None => {
            if let Some(Value::Object(meta)) = root.get_mut("metadata") {
                meta.remove("managedFields");
            }
        }
    }
}

/// Sets `metadata.managedFields`, adding `metadata` if need be.
pub(super) fn put_managed_fields(obj: &mut Value, list: Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Value::Object(meta) = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
    {
        meta.insert("managedFields".into(), list);
    }
}

pub(super) fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
}

/// Fields kube never records ownership of (apiVersion, kind, and the
/// server-owned parts of metadata), built once.
pub(super) fn strip_set() -> &'static FieldSet {
    static STRIP: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(|| {
        FieldSet::from_plain_paths(&[
            &["apiVersion"],
            &["kind"],
            &["metadata"],
            &["metadata", "name"],
            &["metadata", "namespace"],
            &["metadata", "creationTimestamp"],
            &["metadata", "selfLink"],
            &["metadata", "uid"],
            &["metadata", "clusterName"],
            &["metadata", "generation"],
            &["metadata", "managedFields"],
            &["metadata", "resourceVersion"],
        ])
    });
    &STRIP
}

/// Structured-merge-diff's update step: other managers lose ownership of what
/// changed (conflicts unless `force`) and of what was removed.
pub(super) fn update_others(
    managers: &mut Managers,
    workflow: &str,
    cmp: &Comparison,
    force: bool,
) -> Result<(), Conflicts> {
    if cmp.removed.is_empty() && managers.keys().all(|id| id == workflow) {
        // Nobody else owns anything (as on every create): nothing to take away.
        return Ok(());
    }
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts: Vec<(String, FieldSet)> = Vec::new();
    for (id, entry) in managers.iter() {
        if id == workflow {
            continue;
        }
        let c = entry.set.intersection(&changed);
        if !c.is_empty() {
            conflicts.push((id.clone(), c));
        }
    }
    if !force && !conflicts.is_empty() {
        let mut list = Vec::new();
        for (id, set) in &conflicts {
            let Some(entry) = managers.get(id) else {
                continue;
            };
            for p in set.paths() {
                list.push(Conflict {
                    manager: entry.info.clone(),
                    field: path_to_string(&p),
                });
            }
        }
        return Err(Conflicts(list));
    }
    for (id, set) in conflicts {
        if let Some(e) = managers.get_mut(&id) {
            e.set = e.set.difference(&set);
        }
    }
    if !cmp.removed.is_empty() {
        for (id, e) in managers.iter_mut() {
            if id != workflow {
                e.set = e.set.difference(&cmp.removed);
            }
        }
    }
    managers.retain(|_, e| !e.set.is_empty());
    Ok(())
}

/// Merges the oldest `Update` entries into `ancient-changes` buckets so at
/// most [`MAX_UPDATE_MANAGERS`] remain.
pub(super) fn cap_update_managers(managers: &mut Managers) {
    let mut updaters: Vec<(Option<String>, String)> = managers
        .iter()
        .filter(|(_, e)| e.info.operation == Operation::Update)
        .map(|(id, e)| (e.time.clone(), id.clone()))
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort();
    let mut length = updaters.len();
    let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
    for (time, id) in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managers.get(&id).cloned() else {
            continue;
        };
        let version = entry.api_version.clone();
        let bucket_info = ManagerInfo {
            manager: ANCIENT_CHANGES.to_string(),
            operation: Operation::Update,
            api_version: version.clone(),
            subresource: String::new(),
        };
        let bucket = bucket_info.identifier();
        match first_of_version.get(&version) {
            Some(first) => {
                if !managers.contains_key(&bucket)
                    && let Some(first_entry) = managers.remove(first)
                {
                    managers.insert(
                        bucket.clone(),
                        Entry {
                            info: bucket_info.clone(),
                            ..first_entry
                        },
                    );
                }
                let base = managers
                    .get(&bucket)
                    .map(|e| e.set.clone())
                    .unwrap_or_default();
                managers.remove(&id);
                managers.insert(
                    bucket,
                    Entry {
                        info: bucket_info,
                        api_version: version,
                        set: entry.set.union(&base),
                        time,
                    },
                );
                length -= 1;
            }
            None => {
                first_of_version.insert(version, id);
            }
        }
    }
}
