//! The ExchangeRate operator of the Kopf walkthrough, in kopr.
//!
//! An `ExchangeRate` (`exchangerates.operators.brennerm.github.io/v1`) names a currency in
//! `spec.currency`. The operator registers that CRD itself at startup when it is missing. For
//! each ExchangeRate it fetches the currency's rate from the rates API (`--rates-url`) and keeps
//! it in a ConfigMap (`data.rate`) adopted by the ExchangeRate, so that deleting the
//! ExchangeRate garbage-collects the ConfigMap. The ConfigMap's name is the create handler's
//! result, in `status.configmap`. A changed currency updates the same ConfigMap, and a timer
//! refreshes the rate every `--refresh-interval` seconds. A currency that is not an ISO 4217
//! code is refused when it is written (a validating admission handler, [`check_currency`]); one
//! the rates API does not quote fails the handler for good (a Warning event and
//! `status.message` say why); an unreachable API is retried.

#![warn(missing_docs)]

pub mod currencies;
pub mod rates;
pub mod server;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kopr::manifests::Manifests;
use kopr::{
    Context, Denial, Handler, HandlerError, HandlerResult, Lifecycle, Operator, Reason, Resource,
    Review, Timer,
};
use kube::CustomResource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::rates::{Quote, RatesClient, RatesError};

/// The desired state of an ExchangeRate: which currency.
// clippy takes the repeated `type_ = ...` of the printcolumn(...) arguments for duplicated
// attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "operators.brennerm.github.io",
    version = "v1",
    kind = "ExchangeRate",
    namespaced,
    shortname = "er",
    doc = "An exchange rate: the rate of a currency against the euro, kept in a ConfigMap",
    status = "ExchangeRateStatus",
    printcolumn(name = "Currency", type_ = "string", json_path = ".spec.currency"),
    printcolumn(name = "Rate", type_ = "string", json_path = ".status.rate"),
    printcolumn(name = "ConfigMap", type_ = "string", json_path = ".status.configmap"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct ExchangeRateSpec {
    /// The currency, a three-letter code such as USD.
    pub currency: String,
}

/// What the operator keeps about an ExchangeRate. kopr keeps its own bookkeeping beside these
/// fields, so the schema keeps unknown fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct ExchangeRateStatus {
    /// The ConfigMap holding the rate (the create handler's result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configmap: Option<String>,
    /// The latest rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// The date of the latest rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// What happened last, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The rates API of the walkthrough.
pub const DEFAULT_RATES_URL: &str = "https://api.exchangeratesapi.io/latest";

/// How long to wait before asking an unreachable or failing rates API again.
pub const RETRY_DELAY: Duration = Duration::from_secs(30);

/// The id of the create handler: its result, the ConfigMap's name, lands in `status.configmap`.
pub const CREATE_HANDLER: &str = "configmap";

/// The operator's options.
#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    /// The rates API: `<URL>?symbols=USD` must answer `{"rates": {"USD": 1.19}, ...}`.
    #[arg(long, value_name = "URL", default_value = DEFAULT_RATES_URL)]
    pub rates_url: String,
    /// Seconds between two refreshes of each rate.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub refresh_interval: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rates_url: DEFAULT_RATES_URL.to_owned(),
            refresh_interval: 3600,
        }
    }
}

/// How the operator is deployed: it manages ConfigMaps and registers its own CRD.
pub fn manifests() -> Manifests {
    Manifests::new("exchange-rate")
        .child::<ConfigMap>()
        .installs_crds()
}

/// Registers the ExchangeRate CRD unless the cluster has it, and waits until it is established.
pub async fn register_crd(lifecycle: Lifecycle) -> HandlerResult {
    lifecycle.install_crds().await.map_err(|error| {
        HandlerError::temporary(
            format!("registering the CRD: {error}"),
            Duration::from_secs(5),
        )
    })
}

/// Turns a rates failure into the handler error kopr acts on, and reports it in status.
fn failed(ctx: &Context<ExchangeRate>, error: RatesError) -> HandlerError {
    let message = error.to_string();
    ctx.patch().status("message", &message);
    tracing::warn!("{message}");
    if error.is_permanent() {
        HandlerError::permanent(message)
    } else {
        HandlerError::temporary(message, RETRY_DELAY)
    }
}

fn configmaps(ctx: &Context<ExchangeRate>) -> Api<ConfigMap> {
    Api::namespaced(ctx.client().clone(), ctx.namespace().unwrap_or("default"))
}

fn record(ctx: &Context<ExchangeRate>, quote: &Quote, configmap: &str) {
    let message = format!(
        "{} is {} per {} on {}, in ConfigMap {configmap}",
        quote.currency, quote.rate, quote.base, quote.date
    );
    ctx.patch()
        .status("rate", &quote.rate)
        .status("date", &quote.date)
        .status("message", message);
}

/// Creates the adopted ConfigMap holding `quote`; returns its generated name.
async fn create_configmap(ctx: &Context<ExchangeRate>, quote: &Quote) -> HandlerResult<String> {
    let mut configmap = ConfigMap {
        data: Some(BTreeMap::from([("rate".to_owned(), quote.rate.clone())])),
        ..ConfigMap::default()
    };
    kopr::adopt(&mut configmap, &*ctx.object)?;
    let created = configmaps(ctx)
        .create(&PostParams::default(), &configmap)
        .await?;
    let name = created.metadata.name.unwrap_or_default();
    tracing::info!(
        "ConfigMap {name} created: {} = {}",
        quote.currency,
        quote.rate
    );
    Ok(name)
}

/// Writes `quote` into the ConfigMap `name`, or into a new one if it is gone; returns the
/// ConfigMap's name.
async fn update_configmap(
    ctx: &Context<ExchangeRate>,
    name: &str,
    quote: &Quote,
) -> HandlerResult<String> {
    let patch = Patch::Merge(json!({"data": {"rate": quote.rate}}));
    match configmaps(ctx)
        .patch(name, &PatchParams::default(), &patch)
        .await
    {
        Ok(_) => {
            tracing::info!(
                "ConfigMap {name} updated: {} = {}",
                quote.currency,
                quote.rate
            );
            Ok(name.to_owned())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => {
            let created = create_configmap(ctx, quote).await?;
            ctx.patch().status(CREATE_HANDLER, &created);
            Ok(created)
        }
        Err(error) => Err(error.into()),
    }
}

fn known_configmap(ctx: &Context<ExchangeRate>) -> Option<String> {
    ctx.object
        .status
        .as_ref()
        .and_then(|s| s.configmap.clone())
        .filter(|n| !n.is_empty())
}

async fn created(rates: Arc<RatesClient>, ctx: Context<ExchangeRate>) -> HandlerResult<String> {
    let currency = &ctx.object.spec.currency;
    tracing::info!("ExchangeRate for {currency} created");
    let quote = rates.fetch(currency).await.map_err(|e| failed(&ctx, e))?;
    let name = create_configmap(&ctx, &quote).await?;
    record(&ctx, &quote, &name);
    Ok(name)
}

async fn currency_changed(rates: Arc<RatesClient>, ctx: Context<ExchangeRate>) -> HandlerResult {
    if ctx.reason() == Reason::Create {
        // The create handler fetches the first rate.
        return Ok(());
    }
    let currency = &ctx.object.spec.currency;
    tracing::info!("Currency changed to {currency}");
    let quote = rates.fetch(currency).await.map_err(|e| failed(&ctx, e))?;
    let name = match known_configmap(&ctx) {
        Some(name) => update_configmap(&ctx, &name, &quote).await?,
        None => {
            let name = create_configmap(&ctx, &quote).await?;
            ctx.patch().status(CREATE_HANDLER, &name);
            name
        }
    };
    record(&ctx, &quote, &name);
    Ok(())
}

async fn refresh(rates: Arc<RatesClient>, ctx: Context<ExchangeRate>) -> HandlerResult {
    let Some(name) = known_configmap(&ctx) else {
        // Nothing to refresh before the create handler succeeded.
        return Ok(());
    };
    let quote = rates
        .fetch(&ctx.object.spec.currency)
        .await
        .map_err(|e| failed(&ctx, e))?;
    let current = ctx.object.status.as_ref().and_then(|s| s.rate.as_deref());
    if current != Some(quote.rate.as_str()) {
        update_configmap(&ctx, &name, &quote).await?;
    }
    record(&ctx, &quote, &name);
    Ok(())
}

/// Refuses an ExchangeRate whose currency is not an ISO 4217 code, when it is written.
pub async fn check_currency(review: Review<ExchangeRate>) -> Result<(), Denial> {
    let Some(rate) = &review.object else {
        return Ok(());
    };
    let code = &rate.spec.currency;
    if currencies::is_iso_4217(code) {
        return Ok(());
    }
    Err(Denial::new(format!(
        "spec.currency: {code:?} is not an ISO 4217 currency code"
    )))
}

/// The ExchangeRate operator.
pub fn operator(config: &Config) -> Operator {
    let rates = Arc::new(RatesClient::new(&config.rates_url));
    let interval = Duration::from_secs(config.refresh_interval.max(1));
    let (on_create, on_change, on_timer) = (rates.clone(), rates.clone(), rates);
    Operator::new().on_startup(register_crd).resource(
        Resource::<ExchangeRate>::custom()
            .on_validate("currency", check_currency)
            .on_create(Handler::new(move |ctx| created(on_create.clone(), ctx)).id(CREATE_HANDLER))
            .on_field(
                "spec.currency",
                Handler::new(move |ctx| currency_changed(on_change.clone(), ctx)).id("currency"),
            )
            .timer(Timer::every(interval, move |ctx| refresh(on_timer.clone(), ctx)).id("refresh")),
    )
}
