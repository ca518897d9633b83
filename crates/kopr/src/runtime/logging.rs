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

/// Installs the global subscriber. `RUST_LOG`, when set, overrides `level`. Does nothing if a
/// subscriber is already installed (as in tests).
pub fn init(level: tracing::Level, format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "{},kube=warn,hyper=warn,rustls=warn,kopr_apiserver=warn",
            level.as_str().to_ascii_lowercase()
        ))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Plain => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
