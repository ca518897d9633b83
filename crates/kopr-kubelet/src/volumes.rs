//! What the kubelet gives a simulated container to run a command in: its
//! file tree (the base layout plus the pod's volumes at the container's
//! mount paths, read from the store when the container's tree is first
//! needed) and its environment (the container's `env` and `envFrom`, with
//! `$(VAR)` references expanded, service links, `PATH`, `HOSTNAME`, `HOME`).

use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use super::files::{Fs, components};
use crate::authn::service_account::ServiceAccountTokens;
use crate::object;
use crate::registry::{Api, Target};

/// The `PATH` of every simulated image.
pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Reads one object of a core v1 resource (None when missing).
async fn core_object(api: &Api, plural: &str, namespace: &str, name: &str) -> Option<Arc<Value>> {
    let rt = api.catalog.get("", "v1", plural)?;
    let target = Target {
        rt,
        namespace: Some(namespace.to_string()),
        name: Some(name.to_string()),
    };
    api.get(&target).await.ok()
}

/// The hostname the pod's containers see.
pub fn hostname(pod: &Value) -> String {
    let name = pod
        .pointer("/spec/hostname")
        .and_then(Value::as_str)
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| object::name(pod));
    name.chars().take(63).collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A ConfigMap's or Secret's entries as bytes (Secret data is base64).
fn entries(obj: &Value, secret: bool) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some(data) = obj.get("data").and_then(Value::as_object) {
        for (k, v) in data {
            let s = v.as_str().unwrap_or("");
            let bytes = if secret {
                b64.decode(s).unwrap_or_default()
            } else {
                s.as_bytes().to_vec()
            };
            out.push((k.clone(), bytes));
        }
    }
    if !secret && let Some(data) = obj.get("binaryData").and_then(Value::as_object) {
        for (k, v) in data {
            out.push((
                k.clone(),
                b64.decode(v.as_str().unwrap_or("")).unwrap_or_default(),
            ));
        }
    }
    out
}

/// The files of a ConfigMap or Secret source: all keys, or the `items`.
fn source_files(
    entries: &[(String, Vec<u8>)],
    items: Option<&Value>,
    default_mode: u32,
) -> Vec<(String, Vec<u8>, u32)> {
    match items.and_then(Value::as_array) {
        Some(items) if !items.is_empty() => items
            .iter()
            .filter_map(|item| {
                let key = str_of(item, "key");
                let (_, data) = entries.iter().find(|(k, _)| k == key)?;
                let mode = item
                    .get("mode")
                    .and_then(Value::as_u64)
                    .map_or(default_mode, |m| m as u32);
                Some((str_of(item, "path").to_string(), data.clone(), mode))
            })
            .collect(),
        _ => entries
            .iter()
            .map(|(k, d)| (k.clone(), d.clone(), default_mode))
            .collect(),
    }
}

/// The value of a downward API `fieldRef`.
pub fn field_value(pod: &Value, path: &str) -> String {
    let map_lines = |m: Option<&Value>| {
        let mut lines: Vec<String> = m
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", v.as_str().unwrap_or("")))
                    .collect()
            })
            .unwrap_or_default();
        lines.sort();
        lines.join("\n")
    };
    let meta = &pod["metadata"];
    if let Some(rest) = path
        .strip_prefix("metadata.labels['")
        .or_else(|| path.strip_prefix("metadata.annotations['"))
    {
        let key = rest.trim_end_matches("']");
        let map = if path.starts_with("metadata.labels") {
            "labels"
        } else {
            "annotations"
        };
        return str_of(&meta[map], key).to_string();
    }
    match path {
        "metadata.name" => str_of(meta, "name").to_string(),
        "metadata.namespace" => str_of(meta, "namespace").to_string(),
        "metadata.uid" => str_of(meta, "uid").to_string(),
        "metadata.labels" => map_lines(meta.get("labels")),
        "metadata.annotations" => map_lines(meta.get("annotations")),
        "spec.nodeName" => str_of(&pod["spec"], "nodeName").to_string(),
        "spec.serviceAccountName" => str_of(&pod["spec"], "serviceAccountName").to_string(),
        "status.podIP" => str_of(&pod["status"], "podIP").to_string(),
        "status.hostIP" => str_of(&pod["status"], "hostIP").to_string(),
        _ => String::new(),
    }
}

fn mode_of(v: &Value, key: &str, default: u32) -> u32 {
    v.get(key)
        .and_then(Value::as_u64)
        .map_or(default, |m| m as u32)
}

/// A bound service account token for the pod, as the kubelet requests it.
async fn pod_token(
    api: &Api,
    tokens: Option<&ServiceAccountTokens>,
    pod: &Value,
    source: &Value,
) -> Vec<u8> {
    let Some(tokens) = tokens else {
        return Vec::new();
    };
    let sa = pod
        .pointer("/spec/serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default");
    let mut spec = serde_json::json!({
        "expirationSeconds": source.get("expirationSeconds").cloned().unwrap_or(Value::from(3607)),
        "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": object::name(pod), "uid": object::uid(pod)},
    });
    if let Some(aud) = source.get("audience").and_then(Value::as_str) {
        spec["audiences"] = serde_json::json!([aud]);
    }
    let body = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    match crate::reviews::request_token(api, tokens, object::namespace(pod), sa, body).await {
        Ok(answer) => answer
            .pointer("/status/token")
            .and_then(Value::as_str)
            .unwrap_or("")
            .as_bytes()
            .to_vec(),
        Err(_) => Vec::new(),
    }
}

/// The files of one volume, and whether the kubelet mounts it read-only.
async fn volume_files(
    api: &Api,
    tokens: Option<&ServiceAccountTokens>,
    pod: &Value,
    volume: &Value,
) -> (Vec<(String, Vec<u8>, u32)>, bool) {
    let ns = object::namespace(pod);
    if let Some(cm) = volume.get("configMap") {
        let data = match core_object(api, "configmaps", ns, str_of(cm, "name")).await {
            Some(obj) => entries(&obj, false),
            None => Vec::new(),
        };
        return (
            source_files(&data, cm.get("items"), mode_of(cm, "defaultMode", 0o644)),
            true,
        );
    }
    if let Some(s) = volume.get("secret") {
        let data = match core_object(api, "secrets", ns, str_of(s, "secretName")).await {
            Some(obj) => entries(&obj, true),
            None => Vec::new(),
        };
        return (
            source_files(&data, s.get("items"), mode_of(s, "defaultMode", 0o644)),
            true,
        );
    }
    if let Some(d) = volume.get("downwardAPI") {
        return (
            downward_files(pod, d.get("items"), mode_of(d, "defaultMode", 0o644)),
            true,
        );
    }
    if let Some(p) = volume.get("projected") {
        let default_mode = mode_of(p, "defaultMode", 0o644);
        let mut files = Vec::new();
        for source in p
            .get("sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(cm) = source.get("configMap") {
                if let Some(obj) = core_object(api, "configmaps", ns, str_of(cm, "name")).await {
                    files.extend(source_files(
                        &entries(&obj, false),
                        cm.get("items"),
                        default_mode,
                    ));
                }
            } else if let Some(s) = source.get("secret") {
                if let Some(obj) = core_object(api, "secrets", ns, str_of(s, "name")).await {
                    files.extend(source_files(
                        &entries(&obj, true),
                        s.get("items"),
                        default_mode,
                    ));
                }
            } else if let Some(d) = source.get("downwardAPI") {
                files.extend(downward_files(pod, d.get("items"), default_mode));
            } else if let Some(t) = source.get("serviceAccountToken") {
                let token = pod_token(api, tokens, pod, t).await;
                files.push((str_of(t, "path").to_string(), token, default_mode));
            }
        }
        return (files, true);
    }
    (Vec::new(), false)
}

fn downward_files(
    pod: &Value,
    items: Option<&Value>,
    default_mode: u32,
) -> Vec<(String, Vec<u8>, u32)> {
    items
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|item| {
            let path = item
                .pointer("/fieldRef/fieldPath")
                .and_then(Value::as_str)
                .unwrap_or("");
            (
                str_of(item, "path").to_string(),
                field_value(pod, path).into_bytes(),
                mode_of(item, "mode", default_mode),
            )
        })
        .collect()
}

/// The file tree a container instance starts with.
pub async fn initial_tree(
    api: &Api,
    tokens: Option<&ServiceAccountTokens>,
    pod: &Value,
    container: &Value,
) -> Fs {
    let mut fs = Fs::new();
    let host = hostname(pod);
    let ip = pod
        .pointer("/status/podIP")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ns = object::namespace(pod);
    let etc = [
        ("/etc/hostname", format!("{host}\n")),
        (
            "/etc/hosts",
            format!(
                "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n{ip}\t{host}\n"
            ),
        ),
        (
            "/etc/resolv.conf",
            format!(
                "search {ns}.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
            ),
        ),
    ];
    for (path, text) in etc {
        let _ = fs.write(&components("/", path), text.as_bytes(), false, 0o644);
    }
    let volumes: Vec<Value> = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for mount in container
        .get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = str_of(mount, "name");
        let Some(volume) = volumes.iter().find(|v| str_of(v, "name") == name) else {
            continue;
        };
        let (mut files, read_only) = volume_files(api, tokens, pod, volume).await;
        let read_only = read_only || mount.get("readOnly").and_then(Value::as_bool) == Some(true);
        let at = components("/", str_of(mount, "mountPath"));
        let sub = str_of(mount, "subPath");
        if !sub.is_empty() {
            // A single entry of the volume at the mount path.
            if let Some(pos) = files.iter().position(|(p, ..)| p == sub) {
                let (_, data, mode) = files.swap_remove(pos);
                if let Some((_, parent)) = at.split_last() {
                    let _ = fs.mkdir(parent, true);
                }
                let _ = fs.write(&at, &data, false, mode);
                continue;
            }
            files.clear();
        }
        fs.mount(&at, &files, read_only);
    }
    fs
}

/// Expands `$(VAR)` references to variables defined before (`$$` escapes).
fn expand(value: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match env.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => out.push_str(v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn set(env: &mut Vec<(String, String)>, key: &str, value: String) {
    match env.iter_mut().find(|(k, _)| k == key) {
        Some(e) => e.1 = value,
        None => env.push((key.to_string(), value)),
    }
}

/// The service link variables of one Service (`{NAME}_SERVICE_HOST`, …).
fn service_vars(svc: &Value, env: &mut Vec<(String, String)>) {
    let ip = svc
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("");
    if ip.is_empty() || ip == "None" {
        return;
    }
    let name = object::name(svc).to_uppercase().replace('-', "_");
    let ports: Vec<Value> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(first) = ports.first() else { return };
    let port_of = |p: &Value| p.get("port").and_then(Value::as_i64).unwrap_or(0);
    set(env, &format!("{name}_SERVICE_HOST"), ip.to_string());
    set(
        env,
        &format!("{name}_SERVICE_PORT"),
        port_of(first).to_string(),
    );
    for p in &ports {
        let pname = str_of(p, "name");
        if !pname.is_empty() {
            let key = format!(
                "{name}_SERVICE_PORT_{}",
                pname.to_uppercase().replace('-', "_")
            );
            set(env, &key, port_of(p).to_string());
        }
    }
    let proto_of = |p: &Value| {
        let pr = str_of(p, "protocol");
        if pr.is_empty() { "TCP" } else { pr }.to_string()
    };
    set(
        env,
        &format!("{name}_PORT"),
        format!(
            "{}://{ip}:{}",
            proto_of(first).to_lowercase(),
            port_of(first)
        ),
    );
    for p in &ports {
        let proto = proto_of(p);
        let prefix = format!("{name}_PORT_{}_{proto}", port_of(p));
        set(
            env,
            &prefix,
            format!("{}://{ip}:{}", proto.to_lowercase(), port_of(p)),
        );
        set(env, &format!("{prefix}_PROTO"), proto.to_lowercase());
        set(env, &format!("{prefix}_PORT"), port_of(p).to_string());
        set(env, &format!("{prefix}_ADDR"), ip.to_string());
    }
}

async fn services(api: &Api, namespace: &str) -> Vec<Arc<Value>> {
    let Some(rt) = api.catalog.get("", "v1", "services") else {
        return Vec::new();
    };
    let opts = crate::registry::ListOptions::default();
    match api.list(&rt, Some(namespace), &opts).await {
        Ok(r) => r.items,
        Err(_) => Vec::new(),
    }
}

/// The environment of a command run in the container.
pub async fn environment(api: &Api, pod: &Value, container: &Value) -> Vec<(String, String)> {
    let ns = object::namespace(pod);
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), PATH.into()),
        ("HOSTNAME".into(), hostname(pod)),
    ];
    for from in container
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let prefix = str_of(from, "prefix");
        let (obj, secret) = if let Some(cm) = from.get("configMapRef") {
            (
                core_object(api, "configmaps", ns, str_of(cm, "name")).await,
                false,
            )
        } else if let Some(s) = from.get("secretRef") {
            (
                core_object(api, "secrets", ns, str_of(s, "name")).await,
                true,
            )
        } else {
            (None, false)
        };
        if let Some(obj) = obj {
            for (k, v) in entries(&obj, secret) {
                set(
                    &mut env,
                    &format!("{prefix}{k}"),
                    String::from_utf8_lossy(&v).into_owned(),
                );
            }
        }
    }
    for e in container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = str_of(e, "name");
        let value = if let Some(v) = e.get("value").and_then(Value::as_str) {
            expand(v, &env)
        } else if let Some(path) = e
            .pointer("/valueFrom/fieldRef/fieldPath")
            .and_then(Value::as_str)
        {
            field_value(pod, path)
        } else if let Some(r) = e.pointer("/valueFrom/configMapKeyRef") {
            let obj = core_object(api, "configmaps", ns, str_of(r, "name")).await;
            obj.map(|o| str_of(&o["data"], str_of(r, "key")).to_string())
                .unwrap_or_default()
        } else if let Some(r) = e.pointer("/valueFrom/secretKeyRef") {
            let obj = core_object(api, "secrets", ns, str_of(r, "name")).await;
            let key = str_of(r, "key");
            obj.and_then(|o| entries(&o, true).into_iter().find(|(k, _)| k == key))
                .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default()
        } else {
            String::new()
        };
        set(&mut env, name, value);
    }
    if pod
        .pointer("/spec/enableServiceLinks")
        .and_then(Value::as_bool)
        != Some(false)
    {
        for svc in services(api, ns).await {
            service_vars(&svc, &mut env);
        }
    }
    if let Some(k) = core_object(api, "services", "default", "kubernetes").await {
        service_vars(&k, &mut env);
    }
    if !env.iter().any(|(k, _)| k == "HOME") {
        env.push(("HOME".into(), "/root".into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_references() {
        let env = vec![("A".to_string(), "1".to_string())];
        assert_eq!(expand("x$(A)y$(B)$$(A)", &env), "x1y$(B)$(A)");
    }

    #[test]
    fn downward_fields() {
        let pod = serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"b": "2", "a": "1"}}});
        assert_eq!(field_value(&pod, "metadata.namespace"), "ns");
        assert_eq!(field_value(&pod, "metadata.labels"), "a=\"1\"\nb=\"2\"");
        assert_eq!(field_value(&pod, "metadata.labels['b']"), "2");
    }
}
