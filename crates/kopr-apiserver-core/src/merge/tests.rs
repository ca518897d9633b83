//! The merge rules over representative paths of the built-in kinds, and
//! (TEMPORARY) a comparison with the old path-shaped rules.

use std::collections::BTreeMap;

use super::old;
use super::*;

fn paths_of(root: Option<u16>) -> Vec<Vec<&'static str>> {
    let mut out = vec![];
    let mut stack = vec![];
    match root {
        Some(r) => walk(r, &mut vec![], &mut stack, &mut out),
        None => {
            out.push(vec!["metadata"]);
            walk(OBJECT_META, &mut vec!["metadata"], &mut stack, &mut out);
        }
    }
    out
}

fn walk(
    msg: u16,
    prefix: &mut Vec<&'static str>,
    stack: &mut Vec<u16>,
    out: &mut Vec<Vec<&'static str>>,
) {
    if stack.contains(&msg) || prefix.len() > 14 {
        return;
    }
    stack.push(msg);
    for (_, f) in json_fields(msg) {
        prefix.push(f.name);
        out.push(prefix.clone());
        if matches!(f.card, Card::Map) {
            prefix.push("k");
            out.push(prefix.clone());
            prefix.pop();
        }
        if let Ty::Msg(m) = f.ty {
            walk(m, prefix, stack, out);
        }
        prefix.pop();
    }
    stack.pop();
}

fn protocol_keyed(s: &ListStrategy) -> bool {
    matches!(s, ListStrategy::Map { keys } if keys.iter().any(|k| k == "protocol"))
}

/// Why a difference is expected, or `None`.
fn explained(av: &str, k: &str, p: &[&str], o: &Answers, n: &Answers) -> Option<&'static str> {
    let schema = apply_schema(av, k);
    let Some(site) = schema.resolve(p) else {
        return Some("path not in the kind's type");
    };
    let same_lists =
        o.smp == n.smp && o.ssa == n.ssa && o.retain == n.retain && o.default == n.default;
    let ty = site.ty.and_then(message_name).unwrap_or("");
    if same_lists && n.atomic && !o.atomic && rules::struct_is_atomic(ty) {
        return Some("atomic struct type reached by the walk");
    }
    if ty == "io.k8s.api.core.v1.ResourceRequirements" || p.ends_with(&["resources", "claims"]) {
        return Some("ResourceRequirements.claims reached by the walk");
    }
    let nested_meta = p.iter().skip(1).any(|s| *s == "metadata")
        && !p.starts_with(&["spec", "template", "metadata"])
        && !p.starts_with(&["template", "metadata"])
        && !p.starts_with(&["spec", "jobTemplate", "spec", "template", "metadata"]);
    if nested_meta {
        return Some("ObjectMeta reached by the walk");
    }
    if p.starts_with(&["spec", "volumeClaimTemplates", "status"]) {
        return Some("PersistentVolumeClaimStatus reached by the walk");
    }
    if p == ["status", "conditions"]
        && matches!(
            k,
            "CertificateSigningRequest" | "FlowSchema" | "PriorityLevelConfiguration"
        )
        && n.smp == ListStrategy::Atomic
        && o.ssa == n.ssa
    {
        return Some("kube: conditions without patchStrategy");
    }
    if p == ["status", "resourceClaimStatuses"] && n.retain && o.smp == n.smp {
        return Some("kube: patchStrategy merge,retainKeys");
    }
    None
}

#[derive(Debug, PartialEq)]
struct Answers {
    smp: ListStrategy,
    ssa: ListStrategy,
    atomic: bool,
    retain: bool,
    default: Option<Value>,
}

fn old_answers(g: &str, k: &str, p: &[&str]) -> Answers {
    Answers {
        smp: old::list_strategy(g, k, p),
        ssa: old::apply_list_strategy(g, k, p),
        atomic: old::map_is_atomic(g, k, p),
        retain: old::retain_keys_allowed(g, k, p),
        default: (old::is_builtin(g, k) && protocol_keyed(&old::apply_list_strategy(g, k, p)))
            .then(|| Value::String("TCP".into())),
    }
}

fn new_answers(av: &str, k: &str, p: &[&str]) -> Answers {
    let s = strategic_schema(av, k);
    let a = apply_schema(av, k);
    Answers {
        smp: s.list_strategy(p),
        ssa: a.list_strategy(p),
        atomic: a.map_is_atomic(p),
        retain: s.retain_keys_allowed(p),
        default: a
            .key_default(p, "protocol")
            .filter(|_| protocol_keyed(&a.list_strategy(p))),
    }
}

#[test]
fn compare_old_and_new() {
    let mut diffs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut total = 0;
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let kinds = crate::kinds::all();
    for (g, k) in old::BUILTIN_KINDS {
        assert!(
            kinds.iter().any(|d| d.group == *g && d.kind == *k),
            "{g}/{k} not served"
        );
    }
    for def in kinds {
        let av = if def.group.is_empty() {
            def.version.to_string()
        } else {
            format!("{}/{}", def.group, def.version)
        };
        let root = crate::protobuf::kind_message(&av, def.kind);
        if root.is_none() {
            eprintln!("no message: {av} {}", def.kind);
        }
        if !old::is_builtin(def.group, def.kind) {
            eprintln!("not in old BUILTIN_KINDS: {av} {}", def.kind);
        }
        let mut paths = paths_of(root);
        for extra in [
            &["spec", "selector"][..],
            &["spec", "template", "spec", "containers", "ports"],
            &["status", "conditions"],
        ] {
            paths.push(extra.to_vec());
        }
        for p in paths {
            total += 1;
            let o = old_answers(def.group, def.kind, &p);
            let n = new_answers(&av, def.kind, &p);
            if o != n {
                let why = explained(&av, def.kind, &p, &o, &n);
                *reasons.entry(why.unwrap_or("UNEXPLAINED")).or_insert(0) += 1;
                if why.is_some() {
                    continue;
                }
                diffs
                    .entry(format!("{av} {}", def.kind))
                    .or_default()
                    .push(format!("{}: old {o:?} new {n:?}", p.join(".")));
            }
        }
    }
    let mut s = String::new();
    for (k, v) in &diffs {
        s.push_str(&format!("== {k}\n"));
        for d in v {
            s.push_str(&format!("  {d}\n"));
        }
    }
    std::fs::write("/tmp/merge_diffs.txt", &s).ok();
    eprintln!("{total} paths compared: {reasons:#?}");
    assert!(diffs.is_empty(), "{s}");
}
