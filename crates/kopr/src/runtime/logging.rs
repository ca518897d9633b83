//! Log output for operator binaries: `tracing` to stderr, plain or JSON, at the verbosity the
//! command line asks for.

use tracing_subscriber::EnvFilter;

/// The log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Plain,
    /// One JSON object per line.
    Json,
}

/// How much an operator logs, from its command line (`-q`, none, `-v`, `-vv`, `-d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verbosity {
    /// Warnings and errors only.
    Quiet,
    /// Info lines of the operator and kopr; the client libraries and the embedded API server
    /// only warn.
    #[default]
    Normal,
    /// Debug lines of the operator and kopr.
    Verbose,
    /// Trace lines of the operator and kopr.
    Trace,
    /// Debug lines of everything, the Kubernetes client and HTTP stack included.
    Debug,
}

/// Libraries whose lines stay at warnings unless `-d` asks for everything. kube-rs's line
/// for each failed request (`failed with error client error (Connect)`) is left out: it
/// names neither the server nor the request, and kopr reports the same failure with both.
const QUIET_LIBRARIES: &str = "kube=warn,kube_runtime=warn,kube_client=warn,kube_client::client::builder=off,hyper=warn,hyper_util=warn,h2=warn,tower=warn,rustls=warn,kopr_apiserver=warn,kopr_apiserver_core=warn,kopr_controllers=warn,kopr_kubelet=warn";

impl Verbosity {
    /// The `tracing` filter directives of this verbosity.
    pub fn directives(self) -> String {
        match self {
            Verbosity::Quiet => "warn,kube_client::client::builder=off".into(),
            Verbosity::Normal => format!("info,{QUIET_LIBRARIES}"),
            Verbosity::Verbose => format!("debug,{QUIET_LIBRARIES}"),
            Verbosity::Trace => format!("trace,{QUIET_LIBRARIES}"),
            Verbosity::Debug => "debug".into(),
        }
    }
}

/// Installs the global subscriber. `RUST_LOG`, when set, overrides `verbosity`. Does nothing
/// if a subscriber is already installed (as in tests). The command line calls it; programs
/// that use [`Operator::run_until`](crate::Operator::run_until) directly may too.
///
/// ```
/// use kopr::logging::{LogFormat, Verbosity};
/// kopr::logging::init(Verbosity::Quiet, LogFormat::Json);
/// assert!(Verbosity::Normal.directives().starts_with("info,"));
/// ```
pub fn init(verbosity: Verbosity, format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(verbosity.directives()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Plain => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_sets_the_filter() {
        assert_eq!(
            Verbosity::Quiet.directives(),
            "warn,kube_client::client::builder=off"
        );
        assert!(
            Verbosity::Normal
                .directives()
                .starts_with("info,kube=warn,")
        );
        assert!(
            Verbosity::Verbose
                .directives()
                .starts_with("debug,kube=warn,")
        );
        assert!(
            Verbosity::Trace
                .directives()
                .starts_with("trace,kube=warn,")
        );
        assert!(
            Verbosity::Normal
                .directives()
                .contains(",kube_client::client::builder=off,")
        );
        assert_eq!(Verbosity::Debug.directives(), "debug");
        for v in [
            Verbosity::Quiet,
            Verbosity::Normal,
            Verbosity::Verbose,
            Verbosity::Trace,
            Verbosity::Debug,
        ] {
            assert!(EnvFilter::try_new(v.directives()).is_ok(), "{v:?}");
        }
    }
}
