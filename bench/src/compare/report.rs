//! The comparison's report: medians over runs, the Markdown table, the raw figures (JSON), the
//! plot (matplotlib, from the virtual environment) and the closing ratio lines.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use serde::Serialize;

use super::operators::Kind;
use super::{Args, PhaseFigures, RunResult};

/// Each operator's settings: its defaults plus what its own documentation recommends for
/// throughput.
const SETTINGS: &str = "Settings: each operator's defaults plus what its documentation recommends \
    for throughput. kopr: `run -A` with `Storage::Status` (kopr's documentation recommends it when \
    the status keeps unknown fields, as the `BenchItem`'s does: one `/status` write per handled \
    change). kopr-reconcile: `run -A`, default settings, one reconcile owning the ConfigMap \
    child (`Context::apply`, `status.result` set when it differs). Kopf: `kopf run --standalone -A`, installed with its `uvloop` extra (Kopf's \
    installation guide recommends it for I/O performance). kube-rs: a `Controller` with default \
    settings.\n\n";

/// The workspace's lock file, read when the report is made (a packaged copy of the harness
/// has none: its versions are then "unknown").
fn cargo_lock() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .unwrap_or_default()
}

/// Versions of the three operators' frameworks.
#[derive(Debug, Clone, Serialize)]
pub struct Versions {
    /// The kopr crate.
    pub kopr: String,
    /// The kube crate (kube-rs).
    pub kube: String,
    /// Kopf, from the virtual environment.
    pub kopf: String,
    /// The Python `kubernetes` client Kopf's operator uses.
    pub python_kubernetes: String,
    /// The Python running Kopf.
    pub python: String,
    /// uvloop, Kopf's event loop when installed.
    pub uvloop: String,
    /// The kopr operator binary measured: path, size and kopr's features.
    pub kopr_operator: String,
}

/// What the kopr operator binary at `path` is: its size, and kopr's
/// features in this build (the harness and the operator are binaries of one
/// package, built together, so they link the same kopr).
pub fn describe_operator(path: &Path) -> String {
    let size = std::fs::metadata(path).map_or_else(
        |e| format!("unreadable: {e}"),
        |m| format!("{:.1} MB", m.len() as f64 / 1e6),
    );
    let features = if kopr::FEATURES.is_empty() {
        "none (default features off)".to_owned()
    } else {
        kopr::FEATURES.join(", ")
    };
    format!("{} ({size}; kopr features: {features})", path.display())
}

fn locked_version(package: &str) -> String {
    let wanted = format!("name = \"{package}\"");
    let lock = cargo_lock();
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == wanted
            && let Some(version) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
                .and_then(|v| v.strip_suffix('"'))
        {
            return version.to_owned();
        }
    }
    "unknown".to_owned()
}

impl Versions {
    /// Reads the Rust versions from the lock file and the Python ones from the venv.
    pub fn collect(venv: &Path, kopr_operator: &Path) -> anyhow::Result<Versions> {
        let python = venv.join("bin").join("python");
        let output = Command::new(&python)
            .args([
                "-c",
                "import importlib.metadata as m, platform; \
                 print(m.version('kopf'), m.version('kubernetes'), platform.python_version(), \
                 m.version('uvloop'))",
            ])
            .output()
            .with_context(|| format!("running {}", python.display()))?;
        if !output.status.success() {
            bail!(
                "{} could not report Kopf's version: {}",
                python.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let mut words = text.split_whitespace().map(str::to_owned);
        let mut next = || words.next().unwrap_or_else(|| "unknown".to_owned());
        Ok(Versions {
            kopr: locked_version("kopr"),
            kube: locked_version("kube"),
            kopf: next(),
            python_kubernetes: next(),
            python: next(),
            uvloop: next(),
            kopr_operator: describe_operator(kopr_operator),
        })
    }
}

/// The machine the comparison ran on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs available.
    pub cpus: usize,
    /// The CPU model from /proc/cpuinfo.
    pub cpu_model: String,
    /// Total memory, GiB.
    pub memory_gib: f64,
}

impl Machine {
    fn collect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, model)| model.trim().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_gib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kib| kib.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
        Machine {
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model,
            memory_gib,
        }
    }
}

/// Medians over an operator's successful runs, per phase.
#[derive(Debug, Clone, Serialize)]
pub struct Medians {
    /// The operator.
    pub operator: &'static str,
    /// Successful runs / runs.
    pub runs_ok: usize,
    /// All runs.
    pub runs: usize,
    /// The create phase.
    pub create: Option<PhaseFigures>,
    /// The update phase.
    pub update: Option<PhaseFigures>,
}

/// Everything the comparison produced.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// How to reproduce it.
    pub command: String,
    /// Objects per run.
    pub objects: usize,
    /// Runs per operator.
    pub runs: usize,
    /// Concurrent creators.
    pub creators: usize,
    /// Where it ran.
    pub machine: Machine,
    /// What ran.
    pub versions: Versions,
    /// Medians per operator.
    pub medians: Vec<Medians>,
    /// Every run.
    pub results: Vec<RunResult>,
}

/// The `p` quantile of sorted values (nearest rank).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn median_phase(phases: &[&PhaseFigures]) -> Option<PhaseFigures> {
    if phases.is_empty() {
        return None;
    }
    let of = |f: fn(&PhaseFigures) -> f64| median(phases.iter().map(|p| f(p)).collect());
    Some(PhaseFigures {
        wall_s: of(|p| p.wall_s),
        throughput: of(|p| p.throughput),
        p50_ms: of(|p| p.p50_ms),
        p99_ms: of(|p| p.p99_ms),
        peak_rss_mib: of(|p| p.peak_rss_mib),
        cpu_s: of(|p| p.cpu_s),
        server_cpu_s: of(|p| p.server_cpu_s),
        harness_cpu_s: of(|p| p.harness_cpu_s),
        requests: of(|p| p.requests as f64).round() as u64,
        requests_per_object: of(|p| p.requests_per_object),
    })
}

/// A one-line account of a run, for progress output.
pub fn run_line(result: &RunResult) -> String {
    let phase = |name: &str, p: &Option<PhaseFigures>| match p {
        Some(p) => format!(
            " {name}: {:.0}/s, p50 {:.0} ms, p99 {:.0} ms, {:.1} req/obj, cpu {:.1} s, rss {:.0} MiB;",
            p.throughput, p.p50_ms, p.p99_ms, p.requests_per_object, p.cpu_s, p.peak_rss_mib
        ),
        None => String::new(),
    };
    let outcome = match &result.error {
        None => "ok".to_owned(),
        Some(error) => format!("FAILED: {error}"),
    };
    format!(
        "run {} {}:{}{} {outcome}",
        result.run,
        result.operator,
        phase("create", &result.create),
        phase("update", &result.update)
    )
}

fn fmt_ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() && b.is_finite() => format!("{:.2}", a / b),
        _ => "n/a".to_owned(),
    }
}

impl Summary {
    /// Collects the medians of `results`.
    pub fn new(
        args: &Args,
        operators: &[Kind],
        versions: Versions,
        results: Vec<RunResult>,
    ) -> Summary {
        let medians = operators
            .iter()
            .map(|kind| {
                let runs: Vec<&RunResult> = results
                    .iter()
                    .filter(|r| r.operator == kind.name())
                    .collect();
                let ok: Vec<&RunResult> = runs.iter().copied().filter(|r| r.ok).collect();
                Medians {
                    operator: kind.name(),
                    runs_ok: ok.len(),
                    runs: runs.len(),
                    create: median_phase(
                        &ok.iter()
                            .filter_map(|r| r.create.as_ref())
                            .collect::<Vec<_>>(),
                    ),
                    update: median_phase(
                        &ok.iter()
                            .filter_map(|r| r.update.as_ref())
                            .collect::<Vec<_>>(),
                    ),
                }
            })
            .collect();
        let mut command = format!(
            "bench/compare-operators --objects {} --runs {}",
            args.objects, args.runs
        );
        if args.operators.join(",") != super::DEFAULT_OPERATORS {
            let _ = write!(command, " --operators {}", args.operators.join(","));
        }
        if let Some(kopr) = &args.kopr {
            let _ = write!(command, " --kopr {}", kopr.display());
        }
        if args.creators != 16 {
            let _ = write!(command, " --creators {}", args.creators);
        }
        Summary {
            command,
            objects: args.objects,
            runs: args.runs,
            creators: args.creators,
            machine: Machine::collect(),
            versions,
            medians,
            results,
        }
    }

    fn create_median(&self, operator: &str, figure: fn(&PhaseFigures) -> f64) -> Option<f64> {
        self.medians
            .iter()
            .find(|m| m.operator == operator)
            .and_then(|m| m.create.as_ref())
            .map(figure)
    }

    /// The closing ratio lines (of create-phase medians).
    pub fn ratio_lines(&self) -> Vec<String> {
        let throughput = |op| self.create_median(op, |p| p.throughput);
        let rss = |op| self.create_median(op, |p| p.peak_rss_mib);
        let requests = |op| self.create_median(op, |p| p.requests_per_object);
        vec![
            format!(
                "kopr/kopf throughput ratio: {}",
                fmt_ratio(throughput("kopr"), throughput("kopf"))
            ),
            format!(
                "kopr/kube-rs throughput ratio: {}",
                fmt_ratio(throughput("kopr"), throughput("kube-rs"))
            ),
            format!(
                "kopr/kopf peak RSS ratio: {}",
                fmt_ratio(rss("kopr"), rss("kopf"))
            ),
            format!(
                "kopr-reconcile/kube-rs throughput ratio: {}",
                fmt_ratio(throughput("kopr-reconcile"), throughput("kube-rs"))
            ),
            format!(
                "kopr-reconcile/kube-rs API requests per object ratio: {}",
                fmt_ratio(requests("kopr-reconcile"), requests("kube-rs"))
            ),
            format!(
                "kopr/ceiling throughput ratio (the server's own, no operator): {}",
                fmt_ratio(throughput("kopr"), throughput("ceiling"))
            ),
        ]
    }

    /// The versions line.
    pub fn versions_line(&self) -> String {
        let v = &self.versions;
        format!(
            "versions: kopr {} (crate; operator binary {}), Kopf {} (kubernetes client {}, uvloop {}, CPython {}), kube-rs {} (kube crate)",
            v.kopr, v.kopr_operator, v.kopf, v.python_kubernetes, v.uvloop, v.python, v.kube
        )
    }

    /// The Markdown table of medians.
    pub fn table(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "| operator | phase | throughput (objects/s) | latency p50 (ms) | latency p99 (ms) | peak RSS (MiB) | CPU (s) | API requests/object | runs ok |\n",
        );
        out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for m in &self.medians {
            for (phase, figures) in [("create", &m.create), ("update", &m.update)] {
                match figures {
                    Some(p) => {
                        let _ = writeln!(
                            out,
                            "| {} | {phase} | {:.0} | {:.0} | {:.0} | {:.1} | {:.2} | {:.2} | {}/{} |",
                            m.operator,
                            p.throughput,
                            p.p50_ms,
                            p.p99_ms,
                            p.peak_rss_mib,
                            p.cpu_s,
                            p.requests_per_object,
                            m.runs_ok,
                            m.runs
                        );
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "| {} | {phase} | – | – | – | – | – | – | {}/{} |",
                            m.operator, m.runs_ok, m.runs
                        );
                    }
                }
            }
        }
        out
    }

    fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "# Operator comparison: kopr (cause handlers and reconcile), Kopf, kube-rs\n\n",
        );
        let _ = writeln!(out, "Command: `{}`\n", self.command);
        let _ = writeln!(
            out,
            "Machine: {} CPUs ({}), {:.0} GiB; one `kopr apiserver --in-memory` on the same machine.\n",
            self.machine.cpus, self.machine.cpu_model, self.machine.memory_gib
        );
        let _ = writeln!(
            out,
            "{}.\n",
            self.versions_line().replacen("versions", "Versions", 1)
        );
        let _ = writeln!(
            out,
            "Workload: {} `BenchItem`s per run created by {} concurrent clients, then each one's spec \
             updated (merge patch); handled = `status.result` and the owned ConfigMap child's \
             `data.result` both equal `2 * spec.value`. Medians over {} run(s) per operator \
             (orders rotated); throughput = objects / (first request → last object handled); \
             latency = request → handled; RSS = the operator's peak resident set (the larger of VmHWM and 20 ms samples of VmRSS); CPU = the operator's \
             user + system time in the phase; API requests counted by the server, the harness's \
             own excluded.\n",
            self.objects, self.creators, self.runs
        );
        out.push_str(SETTINGS);
        out.push_str(&self.table());
        out.push('\n');
        for line in self.ratio_lines() {
            let _ = writeln!(out, "    {line}");
        }
        out.push_str("\n![throughput, latency, memory and API requests per operator](compare-operators.png)\n");
        let failed: Vec<&RunResult> = self.results.iter().filter(|r| !r.ok).collect();
        if !failed.is_empty() {
            out.push_str("\nFailed runs:\n\n");
            for r in failed {
                let _ = writeln!(
                    out,
                    "- run {} {}: {}",
                    r.run,
                    r.operator,
                    r.error.as_deref().unwrap_or("unknown")
                );
            }
        }
        out
    }

    /// Writes `compare-operators.{md,json,png}` into `dir`.
    pub fn write(&self, dir: &Path, venv: &Path, plot_script: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        let json = dir.join("compare-operators.json");
        std::fs::write(&json, serde_json::to_string_pretty(self)? + "\n")?;
        std::fs::write(dir.join("compare-operators.md"), self.markdown())?;
        let png = dir.join("compare-operators.png");
        let status = Command::new(venv.join("bin").join("python"))
            .arg(plot_script)
            .arg(&json)
            .arg(&png)
            .status()
            .context("running the plotting script")?;
        if !status.success() {
            bail!("the plotting script failed ({status})");
        }
        Ok(())
    }

    /// Prints the table, the versions, failures and, last, the ratio lines.
    pub fn print(&self) {
        println!();
        print!("{}", self.table());
        println!();
        println!("{}", self.versions_line());
        for r in self.results.iter().filter(|r| !r.ok) {
            println!(
                "FAILED: run {} {}: {}",
                r.run,
                r.operator,
                r.error.as_deref().unwrap_or("unknown")
            );
        }
        for line in self.ratio_lines() {
            println!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_medians() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&sorted, 0.5), 51.0);
        assert_eq!(percentile(&sorted, 0.99), 99.0);
        assert!(percentile(&[], 0.5).is_nan());
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn the_operator_binary_is_described_with_size_and_features() {
        let dir = std::env::temp_dir().join(format!("kopr-bench-describe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("kopr-operator");
        std::fs::write(&bin, vec![0u8; 2_500_000]).unwrap();
        let text = describe_operator(&bin);
        assert!(
            text.starts_with(&format!("{} (2.5 MB; kopr features: ", bin.display())),
            "{text}"
        );
        assert!(describe_operator(&dir.join("missing")).contains("unreadable"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn versions_come_from_the_lock_file() {
        assert_ne!(locked_version("kube"), "unknown");
        assert_eq!(locked_version("no-such-package"), "unknown");
    }
}
