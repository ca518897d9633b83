//! The Greeting operator: the first operator of the Kopf walkthrough, in kopr.
//!
//! A `Greeting` (`greetings.example.com/v1`) carries one field, `spec.message`. The operator
//! logs one line per event: `Greeting: <message>` when one is created (and records what it
//! said in `status.greet`), `Update: <message>` when the message changes, `Delete: <message>`
//! when it is deleted (a finalizer holds the object until then), and `Timer: <message>` every
//! `--timer-interval` seconds. It counts its greetings in a metric of its own,
//! `greeting_greetings_total`, served on `/metrics` beside kopr's.

#![warn(missing_docs)]

use std::time::Duration;

use kopr::metrics::prometheus_client::metrics::counter::Counter;
use kopr::{Context, Handler, HandlerResult, Operator, Resource, Timer};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a Greeting: what to say.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Greeting",
    namespaced,
    doc = "A greeting: a message the operator says when the Greeting comes, changes and goes",
    status = "GreetingStatus",
    printcolumn(name = "Message", type_ = "string", json_path = ".spec.message"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct GreetingSpec {
    /// The message to greet with.
    pub message: String,
}

/// What the operator recorded about a Greeting. kopr keeps handler results and its own
/// bookkeeping beside these fields, so the schema keeps unknown fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct GreetingStatus {
    /// The create handler's result: what it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greet: Option<String>,
}

/// The operator's options.
#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    /// Seconds between two runs of the timer for each Greeting.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timer_interval: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { timer_interval: 60 }
    }
}

/// The id of the create handler: its result lands in `status.greet`.
pub const CREATE_HANDLER: &str = "greet";

/// The name of the operator's own metric: Greetings greeted (served as
/// `greeting_greetings_total`).
pub const GREETINGS_METRIC: &str = "greeting_greetings";

/// The greetings counter, shared with the handlers through the memo.
#[derive(Clone, Debug, Default)]
struct Greetings(Counter);

fn greetings_counter() -> Greetings {
    let counter =
        kopr::metrics::register(GREETINGS_METRIC, "Greetings greeted", Counter::default());
    Greetings(counter.unwrap_or_else(|error| {
        tracing::warn!(%error, "the greetings metric is not served");
        Counter::default()
    }))
}

// ANCHOR: handlers
async fn created(ctx: Context<Greeting>) -> HandlerResult<String> {
    let message = &ctx.object.spec.message;
    tracing::info!("Greeting: {message}");
    if let Some(greetings) = ctx.memo::<Greetings>() {
        greetings.0.inc();
    }
    Ok(format!("greeted with '{message}'"))
}

async fn updated(ctx: Context<Greeting>) -> HandlerResult {
    tracing::info!("Update: {}", ctx.object.spec.message);
    Ok(())
}

async fn deleted(ctx: Context<Greeting>) -> HandlerResult {
    tracing::info!("Delete: {}", ctx.object.spec.message);
    Ok(())
}

async fn timer(ctx: Context<Greeting>) -> HandlerResult {
    tracing::info!("Timer: {}", ctx.object.spec.message);
    Ok(())
}
// ANCHOR_END: handlers

// ANCHOR: operator
/// The Greeting operator.
pub fn operator(config: &Config) -> Operator {
    let interval = Duration::from_secs(config.timer_interval.max(1));
    Operator::new()
        .name("greeting")
        .memo(greetings_counter())
        .resource(
            Resource::<Greeting>::custom()
                .on_create(Handler::new(created).id(CREATE_HANDLER))
                .on_update(Handler::new(updated).id("update"))
                .on_delete(Handler::new(deleted).id("delete"))
                .timer(Timer::every(interval, timer).id("timer")),
        )
}
// ANCHOR_END: operator
