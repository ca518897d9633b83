//! `kopr`: the kopr command line.

mod apiserver;
mod new;

/// mimalloc instead of the system allocator: the API server allocates many small JSON values
/// per request, and glibc's malloc was a quarter of its CPU time under load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

/// kopr: Kubernetes operators in Rust, and the embedded cluster to run them on.
#[derive(Parser, Debug)]
#[command(name = "kopr", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the embedded Kubernetes API server in the foreground.
    Apiserver(apiserver::ApiserverArgs),
    /// Scaffold a new operator crate: CRD type, handlers, test, Dockerfile, README.
    New(new::NewArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell), e.g.
    /// `source <(kopr completions bash)`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Runs the command; errors are printed as one plain `error:` line (with
/// their causes), never as a backtrace, as the operator binaries do.
fn main() -> std::process::ExitCode {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Completions { shell } = cli.command {
        use clap::CommandFactory;
        use std::io::Write;
        // Generated into memory first: clap_complete panics when its writer fails.
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "kopr", &mut script);
        std::io::stdout().write_all(&script)?;
        return Ok(());
    }
    if let Command::New(args) = cli.command {
        let dir = new::run(args)?;
        println!(
            "created {}; next: cd {} && cargo test",
            dir.display(),
            dir.display()
        );
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.command {
            Command::Apiserver(args) => apiserver::run(args).await,
            Command::New(_) | Command::Completions { .. } => Ok(()),
        }
    })
}
