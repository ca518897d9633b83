//! `exchange-rate run | dev | crd | manifests | serve-rates`: the ExchangeRate operator's
//! command line, with a stand-in rates API for working offline.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context as _;
use exchange_rate::server::{RateArg, RateTable, default_rates};
use kopr::cli::App;

/// Commands beyond the operator's own.
#[derive(clap::Subcommand)]
enum Extra {
    /// Serve fixed exchange rates in the rates API's format (an offline stand-in for
    /// --rates-url).
    ServeRates(ServeRates),
}

#[derive(clap::Args)]
struct ServeRates {
    /// The address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// A rate against EUR, as CUR=RATE (repeatable; default: USD, GBP, CHF and JPY).
    #[arg(long = "rate", value_name = "CUR=RATE")]
    rates: Vec<RateArg>,
}

async fn serve_rates(args: ServeRates) -> anyhow::Result<()> {
    let rates = if args.rates.is_empty() {
        default_rates()
    } else {
        args.rates
    };
    let table = RateTable::new(rates);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr().context("reading the bound address")?;
    // Losing stdout (a closed pipe) must not stop the server.
    let mut stdout = std::io::stdout();
    let _ = writeln!(
        stdout,
        "serving {} against EUR at http://{address}/latest",
        table.currencies().join(", ")
    );
    let _ = writeln!(
        stdout,
        "use: exchange-rate dev --rates-url http://{address}/latest"
    );
    let _ = stdout.flush();
    exchange_rate::server::serve(listener, table, kopr::cli::shutdown_signal())
        .await
        .context("serving rates")
}

#[tokio::main]
async fn main() -> ExitCode {
    App::new(exchange_rate::operator)
        .name("exchange-rate")
        .about("The ExchangeRate operator: keeps exchange rates in ConfigMaps")
        .version(env!("CARGO_PKG_VERSION"))
        .manifests(exchange_rate::manifests())
        .commands(|Extra::ServeRates(args)| serve_rates(args))
        .main()
        .await
}
