//! `exchange-rate serve-rates`: an offline stand-in for the exchange rates API, serving fixed
//! (and, from tests, changeable) rates against EUR in the API's format.
//!
//! `GET /latest?symbols=USD,GBP` (or `GET /?...`) answers
//! `{"base": "EUR", "date": "<today>", "rates": {"USD": 1.1901, "GBP": 0.8602}}`; without
//! `symbols` every rate is served. An unknown symbol is refused with `400` and
//! `{"error": "Symbols 'XYZ' are invalid for date <today>."}`.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::{Arc, RwLock};

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// One `CUR=RATE` pair, as given to `--rate`.
#[derive(Debug, Clone, PartialEq)]
pub struct RateArg {
    /// The currency, uppercase.
    pub currency: String,
    /// Units of the currency per euro.
    pub rate: f64,
}

impl FromStr for RateArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (currency, rate) = text
            .split_once('=')
            .ok_or_else(|| format!("'{text}' is not CUR=RATE (like USD=1.1901)"))?;
        let currency = crate::rates::currency_code(currency).map_err(|e| e.to_string())?;
        let rate: f64 = rate
            .trim()
            .parse()
            .map_err(|_| format!("'{rate}' is not a number"))?;
        if !(rate.is_finite() && rate > 0.0) {
            return Err(format!("the rate of {currency} must be a positive number"));
        }
        Ok(RateArg { currency, rate })
    }
}

/// The rates served; clones share one table, so a test can change a rate while serving.
#[derive(Debug, Clone, Default)]
pub struct RateTable {
    rates: Arc<RwLock<BTreeMap<String, f64>>>,
}

impl RateTable {
    /// A table with these rates.
    pub fn new(rates: impl IntoIterator<Item = RateArg>) -> Self {
        let table = RateTable::default();
        for RateArg { currency, rate } in rates {
            table.set(&currency, rate);
        }
        table
    }

    /// Sets (or adds) the rate of `currency`.
    pub fn set(&self, currency: &str, rate: f64) {
        let mut rates = self.rates.write().unwrap_or_else(|p| p.into_inner());
        rates.insert(currency.to_ascii_uppercase(), rate);
    }

    /// The currencies served.
    pub fn currencies(&self) -> Vec<String> {
        self.rates
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    fn snapshot(&self) -> BTreeMap<String, f64> {
        self.rates.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The rates `serve-rates` serves when given no `--rate`.
pub fn default_rates() -> Vec<RateArg> {
    [
        ("USD", 1.1901),
        ("GBP", 0.8602),
        ("CHF", 1.0812),
        ("JPY", 126.04),
    ]
    .into_iter()
    .map(|(currency, rate)| RateArg {
        currency: currency.to_owned(),
        rate,
    })
    .collect()
}

#[derive(Debug, Deserialize)]
struct LatestQuery {
    symbols: Option<String>,
    base: Option<String>,
}

async fn latest(State(table): State<RateTable>, Query(query): Query<LatestQuery>) -> Response {
    let today = jiff::Zoned::now().date().to_string();
    if let Some(base) = query.base.filter(|b| !b.eq_ignore_ascii_case("EUR")) {
        let error = json!({"error": format!("Base '{base}' is not supported.")});
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    }
    let rates = table.snapshot();
    let mut answer = Map::new();
    match query.symbols.as_deref().filter(|s| !s.trim().is_empty()) {
        None => {
            for (currency, rate) in &rates {
                answer.insert(currency.clone(), json!(rate));
            }
        }
        Some(symbols) => {
            let mut unknown = Vec::new();
            for symbol in symbols.split(',').map(|s| s.trim().to_ascii_uppercase()) {
                match rates.get(&symbol) {
                    Some(rate) => {
                        answer.insert(symbol, json!(rate));
                    }
                    None => unknown.push(symbol),
                }
            }
            if !unknown.is_empty() {
                let error = json!({"error": format!("Symbols '{}' are invalid for date {today}.", unknown.join(","))});
                return (StatusCode::BAD_REQUEST, Json(error)).into_response();
            }
        }
    }
    Json(json!({"base": "EUR", "date": today, "rates": Value::Object(answer)})).into_response()
}

/// The API's routes over `table`.
pub fn router(table: RateTable) -> axum::Router {
    axum::Router::new()
        .route("/", get(latest))
        .route("/latest", get(latest))
        .with_state(table)
}

/// Serves `table` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    table: RateTable,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(table))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_arguments() {
        assert_eq!(
            "usd=1.1901".parse(),
            Ok(RateArg {
                currency: "USD".into(),
                rate: 1.1901
            })
        );
        assert!("USD".parse::<RateArg>().is_err());
        assert!("USD=abc".parse::<RateArg>().is_err());
        assert!("USD=-1".parse::<RateArg>().is_err());
        assert!("DOLLAR=1".parse::<RateArg>().is_err());
    }
}
