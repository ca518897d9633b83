//! The cluster of the comparison: one `kopr apiserver --in-memory` child process, the
//! harness's client (with its own User-Agent, so that its requests can be told apart), and the
//! server's per-client request counters.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopr_bench::workload::BenchItem;
use kube::CustomResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

/// The User-Agent product of the harness's requests, as the server's counters key it.
pub const HARNESS_AGENT: &str = "kopr-bench-harness";

/// A running `kopr apiserver`.
pub struct ApiServer {
    child: Child,
    /// The kubeconfig the server wrote.
    pub kubeconfig: PathBuf,
    /// The server's URL.
    pub url: String,
}

impl ApiServer {
    /// Starts `kopr apiserver --in-memory` on a free loopback port with its data (credentials,
    /// kubeconfig) in `data_dir`, which must be empty or absent.
    pub fn start(kopr: &Path, data_dir: &Path, log: &Path) -> anyhow::Result<ApiServer> {
        std::fs::create_dir_all(data_dir)?;
        let mut child = Command::new(kopr)
            .args([
                "apiserver",
                "--in-memory",
                "--listen",
                "127.0.0.1:0",
                "--data-dir",
            ])
            .arg(data_dir)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(File::create(log)?)
            .spawn()
            .with_context(|| format!("starting {}", kopr.display()))?;
        let stdout = child.stdout.take().context("the server's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let first = match lines.next() {
            Some(line) => line?,
            None => bail!(
                "the API server exited before it was ready; see {}",
                log.display()
            ),
        };
        let url = first
            .strip_prefix("kopr apiserver listening on ")
            .with_context(|| format!("unexpected first line from the API server: {first}"))?
            .trim()
            .to_owned();
        std::thread::spawn(move || for _ in lines.by_ref() {});
        Ok(ApiServer {
            child,
            kubeconfig: data_dir.join("kubeconfig"),
            url,
        })
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client for the server that identifies itself as the harness.
pub async fn harness_client(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    client_as(kubeconfig, HARNESS_AGENT).await
}

/// A client for the server that identifies itself with the User-Agent `agent`.
pub async fn client_as(kubeconfig: &Path, agent: &'static str) -> anyhow::Result<kube::Client> {
    let mut config = config(kubeconfig).await?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(agent),
    ));
    Ok(kube::Client::try_from(config)?)
}

/// The client configuration of the kubeconfig file written by the server.
pub async fn config(kubeconfig: &Path) -> anyhow::Result<kube::Config> {
    let yaml = std::fs::read_to_string(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml)?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)
}

/// Requests served so far, per client (User-Agent product), from `/metrics`.
pub async fn request_counts(client: &kube::Client) -> anyhow::Result<HashMap<String, u64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    parse_request_counts(&client.request_text(request).await?)
}

/// The `kopr_apiserver_requests_total` counters of a `/metrics` text, by client.
fn parse_request_counts(text: &str) -> anyhow::Result<HashMap<String, u64>> {
    let mut counts = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("kopr_apiserver_requests_total{client=\"") else {
            continue;
        };
        let Some((client, value)) = rest.split_once("\"}") else {
            continue;
        };
        let value: f64 = value
            .trim()
            .parse()
            .with_context(|| format!("bad counter line in /metrics: {line}"))?;
        counts.insert(client.to_owned(), value as u64);
    }
    if counts.is_empty() {
        bail!("/metrics has no kopr_apiserver_requests_total counters");
    }
    Ok(counts)
}

/// Requests from every client but the harness, given two snapshots of the counters.
pub fn requests_between(before: &HashMap<String, u64>, after: &HashMap<String, u64>) -> u64 {
    after
        .iter()
        .filter(|(client, _)| client.as_str() != HARNESS_AGENT)
        .map(|(client, n)| n.saturating_sub(before.get(client).copied().unwrap_or(0)))
        .sum()
}

/// Installs the BenchItem CRD and waits until the API serves it.
pub async fn install_crd(client: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = BenchItem::crd();
    let name = crd.metadata.name.clone().unwrap_or_default();
    crds.patch(
        &name,
        &PatchParams::apply(HARNESS_AGENT).force(),
        &Patch::Apply(&crd),
    )
    .await?;
    let items: Api<BenchItem> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    while items.list(&ListParams::default().limit(1)).await.is_err() {
        if Instant::now() > deadline {
            bail!("the BenchItem CRD was not served within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Creates the namespace `name`.
pub async fn create_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;
    Ok(())
}

/// Deletes the namespace `name` and waits until it is gone (with everything in it).
pub async fn delete_namespace(
    client: &kube::Client,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    match namespaces.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(()),
        Err(error) => return Err(error.into()),
    }
    let deadline = Instant::now() + timeout;
    loop {
        match namespaces.get_opt(name).await? {
            None => return Ok(()),
            Some(_) if Instant::now() > deadline => {
                bail!(
                    "namespace {name} was not gone within {} s",
                    timeout.as_secs()
                )
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_per_client_and_the_harness_is_left_out() -> anyhow::Result<()> {
        let before = parse_request_counts(
            "# HELP kopr_apiserver_requests API requests served, by client.\n\
             # TYPE kopr_apiserver_requests counter\n\
             kopr_apiserver_requests_total{client=\"kopf\"} 10\n\
             kopr_apiserver_requests_total{client=\"kopr-bench-harness\"} 100\n\
             # EOF\n",
        )?;
        assert_eq!(before.get("kopf"), Some(&10));
        let after = parse_request_counts(
            "kopr_apiserver_requests_total{client=\"kopf\"} 25\n\
             kopr_apiserver_requests_total{client=\"\"} 7\n\
             kopr_apiserver_requests_total{client=\"kopr-bench-harness\"} 900\n",
        )?;
        assert_eq!(requests_between(&before, &after), 15 + 7);
        assert!(parse_request_counts("# nothing\n").is_err());
        Ok(())
    }
}
