//! `kopr-bench admission`: what one validating admission webhook costs a write. A `kopr
//! apiserver` child process, and in this process a kopr operator whose `on_validate` handler
//! admits every ConfigMap, served over HTTPS and registered as a ValidatingWebhookConfiguration.
//! Rounds alternate: the configuration deleted (no webhook), then created again (every create
//! calls the webhook). The figures are creates/s for each, their ratio (median of the rounds'
//! ratios) and the create latency p50/p99 with and without the call.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kopr::webhooks::{Webhooks, configuration_resource};
use kopr::{Denial, Operator, Resource, Review};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::json;

use crate::apiserver::{client, concurrent, kopr_binary, percentile, start_server};

/// Options of `kopr-bench admission`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<std::path::PathBuf>,
    /// ConfigMaps created per round and setting.
    #[arg(long, default_value_t = 2000)]
    creates: usize,
    /// Rounds (each: without, then with the webhook).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    clients: usize,
}

async fn admit(_review: Review<ConfigMap>) -> Result<(), Denial> {
    Ok(())
}

/// Creates `n` ConfigMaps over `clients` tasks; returns creates/s and each create's latency (ms).
async fn creates(
    api: &Api<ConfigMap>,
    clients: usize,
    prefix: String,
    n: usize,
) -> anyhow::Result<(f64, Vec<f64>)> {
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let (api, seen) = (api.clone(), latencies.clone());
    let rate = concurrent(clients, n, move |i| {
        let (api, seen, name) = (api.clone(), seen.clone(), format!("{prefix}-{i}"));
        async move {
            let body: ConfigMap =
                serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}))?;
            let started = Instant::now();
            api.create(&PostParams::default(), &body).await?;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            if let Ok(mut seen) = seen.lock() {
                seen.push(ms);
            }
            Ok(())
        }
    })
    .await?;
    let mut latencies = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    latencies.sort_by(f64::total_cmp);
    Ok((rate, latencies))
}

/// Runs the comparison and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let (server, _) = start_server(&kopr_binary(args.kopr.as_deref())?, &[])?;
    let admin = client(&server).await?;
    Api::<Namespace>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "bench"}}))?,
        )
        .await?;
    let operator = Operator::new()
        .resource(Resource::<ConfigMap>::new().on_validate("allow", admit))
        .webhooks(Webhooks::local().name("bench"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(operator.run_until(admin.clone(), async move {
        let _ = stopped.await;
    }));
    let configurations: Api<DynamicObject> =
        Api::all_with(admin.clone(), &configuration_resource(false));
    let registered = loop {
        if let Some(found) = configurations.get_opt("bench").await? {
            break found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut template = serde_json::to_value(&registered)?;
    template["metadata"] = json!({"name": "bench"});
    let template: DynamicObject = serde_json::from_value(template)?;
    let api: Api<ConfigMap> = Api::namespaced(admin.clone(), "bench");
    let (mut plain, mut hooked, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut plain_ms, mut hooked_ms) = (Vec::new(), Vec::new());
    for round in 0..args.rounds {
        configurations
            .delete("bench", &DeleteParams::default())
            .await?;
        let (rate, ms) =
            creates(&api, args.clients, format!("plain-{round}"), args.creates).await?;
        plain.push(rate);
        plain_ms.extend(ms);
        configurations
            .create(&PostParams::default(), &template)
            .await?;
        let (with, ms) =
            creates(&api, args.clients, format!("hooked-{round}"), args.creates).await?;
        hooked.push(with);
        hooked_ms.extend(ms);
        ratios.push(with / rate);
    }
    let _ = stop.send(());
    let _ = running.await;
    for list in [
        &mut plain,
        &mut hooked,
        &mut ratios,
        &mut plain_ms,
        &mut hooked_ms,
    ] {
        list.sort_by(f64::total_cmp);
    }
    println!(
        "| figure | result |\n|---|---|\n\
         | ConfigMap creates/s, no webhook ({} clients, median of {} rounds of {}) | {:.0} |\n\
         | ConfigMap creates/s, one validating webhook (a kopr `on_validate` handler) | {:.0} |\n\
         | ratio webhook / none (median of rounds) | {:.2} |\n\
         | create latency p50 / p99, no webhook | {:.2} ms / {:.2} ms |\n\
         | create latency p50 / p99, one webhook | {:.2} ms / {:.2} ms |",
        args.clients,
        args.rounds,
        args.creates,
        percentile(&plain, 0.5),
        percentile(&hooked, 0.5),
        percentile(&ratios, 0.5),
        percentile(&plain_ms, 0.5),
        percentile(&plain_ms, 0.99),
        percentile(&hooked_ms, 0.5),
        percentile(&hooked_ms, 0.99),
    );
    Ok(())
}
