//! The rules of the simulated container runtime: how a container behaves
//! (decided by its image tag and its pod's restart policy), what its image
//! resolves to, how long pulls take, and the log lines each container
//! instance writes. The simulated kubelet and the pod `log` subresource
//! share these rules, so logs agree with container statuses.
//!
//! | image / pod | behaviour |
//! |---|---|
//! | tag `:missing` | the pull fails (`ErrImagePull`, then `ImagePullBackOff`) |
//! | tag `:crash` or `:fail` | runs about a second, exits with code 1 |
//! | pod `restartPolicy` `Never`/`OnFailure` (Job pods) | runs about a second, exits with code 0 |
//! | init container | runs briefly, exits with code 0 |
//! | anything else | runs until stopped; exits 0 on SIGTERM |
//!
//! A container whose command is `sleep …` (directly or through `sh -c`)
//! ignores SIGTERM, as `sleep` as PID 1 does: it is killed when the pod's
//! termination grace period runs out (exit code 137).

use std::time::Duration;

use serde_json::Value;

use crate::node_runtime::{Instance, LogLine};

use crate::podutil;

/// How long an image pull takes.
pub const PULL_TIME: Duration = Duration::from_millis(800);
/// How long a run-to-completion container runs.
pub const BATCH_RUN_TIME: Duration = Duration::from_secs(1);
/// How long a crashing container runs before it exits.
pub const CRASH_AFTER: Duration = Duration::from_secs(1);
/// How long an init container runs.
pub const INIT_RUN_TIME: Duration = Duration::from_millis(300);

/// What a simulated container does once started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    /// Runs until stopped.
    Serve,
    /// Exits with `code` after running for `after`.
    Exit {
        /// Run time.
        after: Duration,
        /// Exit code.
        code: i32,
    },
}

/// The tag of an image reference, if it has one.
pub fn image_tag(image: &str) -> Option<&str> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last.rsplit_once(':').map(|(_, t)| t)
}

/// Whether pulling the image fails.
pub fn image_missing(image: &str) -> bool {
    image_tag(image) == Some("missing")
}

/// How a container behaves.
pub fn behavior(pod: &Value, container: &Value, init: bool) -> Behavior {
    let image = container.get("image").and_then(Value::as_str).unwrap_or("");
    if matches!(image_tag(image), Some("crash" | "fail")) {
        return Behavior::Exit {
            after: CRASH_AFTER,
            code: 1,
        };
    }
    let sidecar = container.get("restartPolicy").and_then(Value::as_str) == Some("Always");
    if init && !sidecar {
        return Behavior::Exit {
            after: INIT_RUN_TIME,
            code: 0,
        };
    }
    match podutil::str_at(pod, "/spec/restartPolicy") {
        "Never" | "OnFailure" if !sidecar => Behavior::Exit {
            after: BATCH_RUN_TIME,
            code: 0,
        },
        _ => Behavior::Serve,
    }
}

/// Whether a container ignores SIGTERM (its command is `sleep`).
pub fn ignores_sigterm(container: &Value) -> bool {
    let words: Vec<&str> = ["command", "args"]
        .iter()
        .filter_map(|k| container.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match words.as_slice() {
        [first, ..] if first.ends_with("sleep") => true,
        [shell, flag, script, ..] if shell.ends_with("sh") && *flag == "-c" => {
            script.trim_start().starts_with("sleep ")
        }
        _ => false,
    }
}

/// The image with the default tag applied (`applyDefaultImageTag`):
/// `nginx` → `nginx:latest`.
pub fn with_default_tag(image: &str) -> String {
    if image.contains('@') || image_tag(image).is_some() {
        image.to_string()
    } else {
        format!("{image}:latest")
    }
}

/// The fully qualified reference a container runtime reports:
/// `nginx` → `docker.io/library/nginx:latest`.
pub fn qualified_image(image: &str) -> String {
    let tagged = with_default_tag(image);
    let first = tagged.split('/').next().unwrap_or("");
    let has_registry = tagged.contains('/')
        && (first.contains('.') || first.contains(':') || first == "localhost");
    if has_registry {
        tagged
    } else if tagged.contains('/') {
        format!("docker.io/{tagged}")
    } else {
        format!("docker.io/library/{tagged}")
    }
}

/// The image ID a runtime reports: the repository with a digest.
pub fn image_id(image: &str) -> String {
    let q = qualified_image(image);
    let repo = match q.split_once('@') {
        Some((r, _)) => r.to_string(),
        None => {
            let slash = q.rfind('/').unwrap_or(0);
            match q[slash..].rfind(':') {
                Some(i) => q[..slash + i].to_string(),
                None => q.clone(),
            }
        }
    };
    format!("{repo}@sha256:{}", podutil::hex_from(&q, 64))
}

/// The size of a pulled image, in bytes.
pub fn image_size(image: &str) -> u64 {
    8_000_000 + podutil::fnv64a(qualified_image(image).as_bytes()) % 120_000_000
}

/// The runtime's error for a failed pull, as containerd words it.
pub fn pull_error(image: &str) -> String {
    let q = qualified_image(image);
    format!(
        "rpc error: code = NotFound desc = failed to pull and unpack image \"{q}\": failed to resolve reference \"{q}\": {q}: not found"
    )
}

/// The log lines a container instance writes.
pub fn instance_log(pod: &Value, container: &Value, init: bool, inst: &Instance) -> Vec<LogLine> {
    let name = container.get("name").and_then(Value::as_str).unwrap_or("");
    let image = container.get("image").and_then(Value::as_str).unwrap_or("");
    let node = podutil::str_at(pod, "/spec/nodeName");
    let ip = podutil::str_at(pod, "/status/podIP");
    let at = |ms: u64| podutil::after(inst.started_at, Duration::from_millis(ms));
    let mut lines = vec![
        LogLine {
            time: at(0),
            text: format!("starting container {name} from image {image}"),
        },
        LogLine {
            time: at(1),
            text: if ip.is_empty() {
                format!("container {name} is running on node {node}")
            } else {
                format!("container {name} is running on node {node} (pod IP {ip})")
            },
        },
    ];
    let behavior = behavior(pod, container, init);
    if let Behavior::Exit { .. } = behavior {
        lines.push(LogLine {
            time: at(2),
            text: format!("container {name} is working"),
        });
    }
    if let Some((finished_at, code)) = inst.finished {
        let text = match behavior {
            Behavior::Exit { code: c, .. } if i64::from(c) == code && code == 0 => {
                format!("container {name} finished its work")
            }
            Behavior::Exit { code: c, .. } if i64::from(c) == code => format!(
                "container {name} failed: simulated error (image tag :{})",
                image_tag(image).unwrap_or("")
            ),
            _ if code == 137 => format!("container {name} ignored SIGTERM and was killed"),
            _ => format!("container {name} received SIGTERM, shutting down"),
        };
        lines.push(LogLine {
            time: finished_at,
            text,
        });
        lines.push(LogLine {
            time: finished_at,
            text: format!("container {name} exited with code {code}"),
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn image_references() {
        assert_eq!(with_default_tag("nginx"), "nginx:latest");
        assert_eq!(with_default_tag("nginx:1.27"), "nginx:1.27");
        assert_eq!(qualified_image("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(
            qualified_image("bitnami/redis:7"),
            "docker.io/bitnami/redis:7"
        );
        assert_eq!(qualified_image("ghcr.io/a/b:c"), "ghcr.io/a/b:c");
        assert_eq!(
            qualified_image("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert!(image_id("nginx:1.27").starts_with("docker.io/library/nginx@sha256:"));
        assert_eq!(image_tag("localhost:5000/app"), None);
        assert!(image_missing("nginx:missing"));
    }

    #[test]
    fn behaviours() {
        let pod = json!({"spec": {"restartPolicy": "Always"}});
        let job = json!({"spec": {"restartPolicy": "Never"}});
        let c = json!({"name": "c", "image": "nginx"});
        assert_eq!(behavior(&pod, &c, false), Behavior::Serve);
        assert!(matches!(
            behavior(&job, &c, false),
            Behavior::Exit { code: 0, .. }
        ));
        let crash = json!({"name": "c", "image": "nginx:crash"});
        assert!(matches!(
            behavior(&pod, &crash, false),
            Behavior::Exit { code: 1, .. }
        ));
        assert!(ignores_sigterm(&json!({"command": ["sleep", "3600"]})));
        assert!(ignores_sigterm(
            &json!({"command": ["sh", "-c", "sleep 10"]})
        ));
        assert!(!ignores_sigterm(&json!({"command": ["nginx"]})));
    }
}
