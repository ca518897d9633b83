//! The three operators as child processes, and what `/proc` says about a process.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};

/// One of the compared operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// kopr, `kopr-operator run -A --standalone`.
    Kopr,
    /// kopr's reconcile model, `kopr-reconcile-operator run -A --standalone`.
    KoprReconcile,
    /// Kopf, `kopf run --standalone -A kopf_operator.py`.
    Kopf,
    /// A hand-written kube-rs Controller, `kube-rs-operator`.
    KubeRs,
    /// No operator: the harness makes the writes an operator would (the child, the status)
    /// itself, right after each request, to measure what the API server allows.
    Ceiling,
}

impl Kind {
    /// Every operator, in the order of the first run.
    pub const ALL: [Kind; 5] = [
        Kind::Kopr,
        Kind::KoprReconcile,
        Kind::Kopf,
        Kind::KubeRs,
        Kind::Ceiling,
    ];

    /// The short name used in names, tables and the results file.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Kopr => "kopr",
            Kind::KoprReconcile => "kopr-reconcile",
            Kind::Kopf => "kopf",
            Kind::KubeRs => "kube-rs",
            Kind::Ceiling => "ceiling",
        }
    }

    /// Parses a short name.
    pub fn parse(name: &str) -> anyhow::Result<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .with_context(|| {
                format!(
                    "unknown operator {name:?} (kopr, kopr-reconcile, kopf, kube-rs or ceiling)"
                )
            })
    }
}

/// Where the operators' programs are.
#[derive(Debug, Clone)]
pub struct Programs {
    /// The directory holding `kopr-operator` and `kube-rs-operator`.
    pub bin_dir: PathBuf,
    /// The virtual environment with Kopf.
    pub venv: PathBuf,
    /// Kopf's operator script.
    pub kopf_script: PathBuf,
}

impl Programs {
    /// The command running `kind` on all namespaces, or on `namespace` alone.
    fn command(&self, kind: Kind, namespace: Option<&str>) -> anyhow::Result<Command> {
        let scope = match namespace {
            Some(namespace) => vec!["--namespace", namespace],
            None => vec!["-A"],
        };
        Ok(match kind {
            Kind::Ceiling => bail!("the ceiling runs no operator"),
            Kind::Kopr | Kind::KoprReconcile => {
                let program = match kind {
                    Kind::Kopr => "kopr-operator",
                    _ => "kopr-reconcile-operator",
                };
                let mut command = Command::new(self.bin_dir.join(program));
                // One replica, as Kopf (--standalone) and the kube-rs controller run.
                command.arg("run").args(&scope).arg("--standalone");
                command
            }
            Kind::Kopf => {
                let mut command = Command::new(self.venv.join("bin").join("kopf"));
                command
                    .args(["run", "--standalone"])
                    .args(&scope)
                    .arg(&self.kopf_script);
                command
            }
            Kind::KubeRs => {
                let mut command = Command::new(self.bin_dir.join("kube-rs-operator"));
                if let Some(namespace) = namespace {
                    command.args(["--namespace", namespace]);
                }
                command
            }
        })
    }

    /// Checks that every program exists.
    pub fn check(&self) -> anyhow::Result<()> {
        for path in [
            self.bin_dir.join("kopr-operator"),
            self.bin_dir.join("kube-rs-operator"),
            self.bin_dir.join("kopr-reconcile-operator"),
            self.venv.join("bin").join("kopf"),
            self.kopf_script.clone(),
        ] {
            if !path.exists() {
                bail!(
                    "{} not found (bench/compare-operators builds and installs it)",
                    path.display()
                );
            }
        }
        Ok(())
    }
}

/// A running operator process; killed when dropped.
pub struct Operator {
    child: Child,
    log: PathBuf,
    rss: RssSampler,
}

impl Operator {
    /// Starts `kind` on all namespaces of the cluster of `kubeconfig`, logging to `log`.
    pub fn start(
        programs: &Programs,
        kind: Kind,
        kubeconfig: &Path,
        log: &Path,
    ) -> anyhow::Result<Operator> {
        Operator::start_in(programs, kind, None, kubeconfig, log)
    }

    /// Starts `kind` on `namespace` (all namespaces: None) of the cluster of `kubeconfig`,
    /// logging to `log`.
    pub fn start_in(
        programs: &Programs,
        kind: Kind,
        namespace: Option<&str>,
        kubeconfig: &Path,
        log: &Path,
    ) -> anyhow::Result<Operator> {
        let out = File::create(log)?;
        let child = programs
            .command(kind, namespace)?
            .env("KUBECONFIG", kubeconfig)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting the {} operator", kind.name()))?;
        let rss = RssSampler::start(child.id());
        Ok(Operator {
            child,
            log: log.to_owned(),
            rss,
        })
    }

    /// The highest resident set size seen so far, MiB: the larger of the kernel's VmHWM and
    /// the harness's own samples (VmHWM is only brought up to date at some kernel events, so
    /// it can miss a peak that was given back).
    pub fn peak_rss_mib(&self) -> anyhow::Result<f64> {
        let sampled = self.rss.peak_kib() as f64 / 1024.0;
        Ok(peak_rss_mib(self.pid())?.max(sampled))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails if the process has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("the operator exited ({status}); see {}", self.log.display());
        }
        Ok(())
    }

    /// Kills the process and reaps it.
    pub fn kill(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.rss.stop();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Clock ticks per second of `/proc/<pid>/stat` times.
pub fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

/// CPU seconds (user + system) the process has used, all threads.
pub fn cpu_seconds(pid: u32, ticks: f64) -> anyhow::Result<f64> {
    cpu_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat"))?).map(|t| t / ticks)
}

/// utime + stime of a `/proc/<pid>/stat` line, in clock ticks.
fn cpu_ticks(stat: &str) -> anyhow::Result<f64> {
    // The command name is in parentheses and may contain anything; fields follow the last ')'.
    let (_, rest) = stat
        .rsplit_once(')')
        .context("unexpected /proc/<pid>/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) of proc(5); `rest` starts at field 3.
    let field = |n: usize| -> anyhow::Result<f64> {
        Ok(fields
            .get(n - 3)
            .context("short /proc/<pid>/stat")?
            .parse::<f64>()?)
    };
    Ok(field(14)? + field(15)?)
}

/// Samples a process's resident set size every 20 ms on a thread of its own, keeping the peak.
struct RssSampler {
    peak_kib: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
}

impl RssSampler {
    fn start(pid: u32) -> RssSampler {
        let peak_kib = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (peak, finished) = (peak_kib.clone(), done.clone());
        std::thread::spawn(move || {
            while !finished.load(Ordering::Relaxed) {
                match rss_kib(pid) {
                    Some(kib) => {
                        peak.fetch_max(kib, Ordering::Relaxed);
                    }
                    None => break,
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        RssSampler { peak_kib, done }
    }

    fn peak_kib(&self) -> u64 {
        self.peak_kib.load(Ordering::Relaxed)
    }

    fn stop(&self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// The process's current resident set size (VmRSS), KiB; None once it is gone.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The process's peak resident set size (VmHWM), in MiB.
pub fn peak_rss_mib(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .context("no VmHWM in /proc/<pid>/status")?
        .parse::<f64>()?;
    Ok(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_survive_odd_command_names() -> anyhow::Result<()> {
        let stat = "4242 (kopf (run) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0";
        assert_eq!(cpu_ticks(stat)?, 300.0);
        assert!(cpu_ticks("4242 (short) S 1").is_err());
        Ok(())
    }

    #[test]
    fn the_sampler_sees_this_process_and_stops_with_it() {
        let sampler = RssSampler::start(std::process::id());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while sampler.peak_kib() == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(sampler.peak_kib() > 0);
        sampler.stop();
        assert_eq!(rss_kib(u32::MAX), None, "no such process");
    }

    #[test]
    fn this_process_has_a_peak_rss() -> anyhow::Result<()> {
        assert!(peak_rss_mib(std::process::id())? > 0.0);
        Ok(())
    }
}
