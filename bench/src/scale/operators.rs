//! The operator side of `kopr-bench scale`: kopr's operator and the kube-rs Controller of the
//! comparison (`kopr-operator`, `kube-rs-operator`), each run at each size on a fresh namespace
//! of that many `BenchItem`s. An operator is started once its items exist, and is at rest when
//! every item has its `status.result` and its resident set has stopped moving. Recorded per
//! operator and size: the RSS at rest and its peak, the RSS per object above the process's RSS
//! with no objects, the time and the CPU from start to rest, per object.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;
use kopr_bench::workload::{BenchItem, BenchItemSpec, result_of};
use kube::api::{Api, ListParams, PostParams};
use serde::Serialize;

use crate::apiserver::{concurrent, cpu_seconds, memory_mib};
use crate::compare::cluster::{create_namespace, install_crd};
use crate::compare::operators::{Kind, Operator, Programs};

/// The operators measured, in order.
pub(super) const MEASURED: [Kind; 2] = [Kind::Kopr, Kind::KubeRs];

/// One operator at one size.
#[derive(Debug, Clone, Serialize)]
pub(super) struct OperatorStep {
    pub operator: &'static str,
    pub objects: usize,
    /// Resident set once every item is handled and it has settled, MiB.
    pub rss_at_rest_mib: f64,
    /// The highest resident set seen, MiB.
    pub peak_rss_mib: f64,
    /// `rss_at_rest_mib` above the same operator's at rest with no objects, per object.
    pub rss_bytes_per_object: f64,
    /// From the operator's start until every item was handled.
    pub handled_in_s: f64,
    /// The operator's CPU time (user + system) from its start until at rest, per object.
    pub cpu_us_per_object: f64,
}

/// The operator programs (next to `kopr-bench`) and where their logs go.
pub(super) struct Setup {
    pub programs: Programs,
    pub logs: PathBuf,
    pub clients: usize,
}

impl Setup {
    /// The programs built beside the running `kopr-bench`.
    pub fn beside_this_binary(logs: PathBuf, clients: usize) -> anyhow::Result<Setup> {
        let exe = std::env::current_exe()?;
        let bin_dir = exe
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        for program in ["kopr-operator", "kube-rs-operator"] {
            if !bin_dir.join(program).exists() {
                bail!(
                    "{} not found (`cargo build --release -p kopr-bench` builds it)",
                    bin_dir.join(program).display()
                );
            }
        }
        std::fs::create_dir_all(&logs)?;
        Ok(Setup {
            programs: Programs {
                bin_dir,
                venv: PathBuf::new(),
                kopf_script: PathBuf::new(),
            },
            logs,
            clients,
        })
    }
}

/// Measures each operator of [`MEASURED`] at each size; the first figures are at no objects.
pub(super) async fn measure(
    setup: &Setup,
    client: &kube::Client,
    kubeconfig: &Path,
    sizes: &[usize],
) -> anyhow::Result<Vec<OperatorStep>> {
    install_crd(client).await?;
    let mut steps = Vec::new();
    for kind in MEASURED {
        let empty = run_one(setup, client, kubeconfig, kind, 0).await?;
        eprintln!("{empty:?}");
        let base = empty.rss_at_rest_mib;
        steps.push(empty);
        for &size in sizes {
            let mut step = run_one(setup, client, kubeconfig, kind, size).await?;
            step.rss_bytes_per_object =
                (step.rss_at_rest_mib - base) * 1024.0 * 1024.0 / size as f64;
            eprintln!("{step:?}");
            steps.push(step);
        }
    }
    Ok(steps)
}

/// Creates `size` items in a fresh namespace, runs `kind` on it until at rest, and stops it.
async fn run_one(
    setup: &Setup,
    client: &kube::Client,
    kubeconfig: &Path,
    kind: Kind,
    size: usize,
) -> anyhow::Result<OperatorStep> {
    let namespace = format!("{}-{size}", kind.name());
    create_namespace(client, &namespace).await?;
    let items: Api<BenchItem> = Api::namespaced(client.clone(), &namespace);
    let creator = items.clone();
    concurrent(setup.clients, size, move |i| {
        let items = creator.clone();
        async move {
            let item = BenchItem::new(&format!("i-{i:06}"), BenchItemSpec { value: i as i64 });
            items.create(&PostParams::default(), &item).await?;
            Ok(())
        }
    })
    .await?;

    let log = setup.logs.join(format!("{namespace}.log"));
    let mut operator =
        Operator::start_in(&setup.programs, kind, Some(&namespace), kubeconfig, &log)?;
    let started = Instant::now();
    let pid = operator.pid();
    let deadline = started + Duration::from_secs(600);
    loop {
        operator.check_alive()?;
        if handled(&items).await? == size {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "{namespace}: not every item was handled within 600 s; see {}",
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(if size > 10_000 {
            1000
        } else {
            100
        }))
        .await;
    }
    let handled_in_s = started.elapsed().as_secs_f64();
    let rss_at_rest_mib = settled_rss_mib(pid).await;
    let cpu = cpu_seconds(pid);
    let peak_rss_mib = operator.peak_rss_mib()?;
    operator.kill();
    Ok(OperatorStep {
        operator: kind.name(),
        objects: size,
        rss_at_rest_mib,
        peak_rss_mib,
        rss_bytes_per_object: 0.0,
        handled_in_s,
        cpu_us_per_object: if size == 0 {
            0.0
        } else {
            cpu / size as f64 * 1e6
        },
    })
}

/// How many items have the result of their spec in their status.
async fn handled(items: &Api<BenchItem>) -> anyhow::Result<usize> {
    let mut count = 0;
    let mut params = ListParams::default().limit(5000);
    loop {
        let page = items.list(&params).await?;
        count += page
            .items
            .iter()
            .filter(|item| {
                item.status.as_ref().and_then(|s| s.result.as_deref())
                    == Some(result_of(item.spec.value).as_str())
            })
            .count();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(count),
        }
    }
}

/// The resident set once it has stopped moving: four samples 250 ms apart within 1% (at most
/// 20 s of sampling), MiB.
async fn settled_rss_mib(pid: u32) -> f64 {
    let mut samples: Vec<f64> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        samples.push(memory_mib(pid, "VmRSS:"));
        if let [.., a, b, c, d] = samples[..] {
            let (low, high) = (a.min(b).min(c).min(d), a.max(b).max(c).max(d));
            if high - low <= high * 0.01 || Instant::now() > deadline {
                return d;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The Markdown table of the operator figures.
pub(super) fn markdown(steps: &[OperatorStep]) -> String {
    let mut out = String::from(
        "\n## The operators at scale\n\nEach operator is started on a fresh namespace holding that many `BenchItem`s, handles every one (a ConfigMap child and `status.result`, as in compare-operators) and is measured at rest.\n\n",
    );
    out.push_str("| operator | objects | RSS at rest (MiB) | peak RSS (MiB) | RSS/object above empty (bytes) | all handled in (s) | CPU/object (µs) |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for s in steps {
        out.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.0} | {:.1} | {:.0} |\n",
            s.operator,
            s.objects,
            s.rss_at_rest_mib,
            s.peak_rss_mib,
            s.rss_bytes_per_object,
            s.handled_in_s,
            s.cpu_us_per_object,
        ));
    }
    let at = |operator: &str| {
        steps
            .iter()
            .filter(|s| s.operator == operator)
            .max_by_key(|s| s.objects)
    };
    if let (Some(kopr), Some(kube_rs)) = (at(Kind::Kopr.name()), at(Kind::KubeRs.name())) {
        out.push_str(&format!(
            "\nkopr/kube-rs RSS at rest with {} objects: {:.2}.\n",
            kopr.objects,
            kopr.rss_at_rest_mib / kube_rs.rss_at_rest_mib
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_the_ratio_at_the_largest_size() {
        let step = |operator, objects, rss| OperatorStep {
            operator,
            objects,
            rss_at_rest_mib: rss,
            peak_rss_mib: rss + 1.0,
            rss_bytes_per_object: 100.0,
            handled_in_s: 2.0,
            cpu_us_per_object: 30.0,
        };
        let md = markdown(&[
            step("kopr", 0, 10.0),
            step("kopr", 1000, 20.0),
            step("kube-rs", 0, 20.0),
            step("kube-rs", 1000, 80.0),
        ]);
        assert!(
            md.contains("| kopr | 1000 | 20.0 | 21.0 | 100 | 2.0 | 30 |"),
            "{md}"
        );
        assert!(md.contains("with 1000 objects: 0.25."), "{md}");
    }
}
