//! Request metrics: requests served per client, exposed at `/metrics` in the
//! Prometheus text format.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClientLabels {
    /// The client: the User-Agent up to its first `/`.
    pub client: String,
}

/// Counters of served requests.
pub struct RequestMetrics {
    registry: Registry,
    requests: Family<ClientLabels, Counter>,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<ClientLabels, Counter>::default();
        registry.register(
            "kopr_apiserver_requests",
            "API requests served, by client (User-Agent product)",
            requests.clone(),
        );
        RequestMetrics { registry, requests }
    }
}

impl RequestMetrics {
    /// Counts one request from a client identified by its User-Agent.
    pub fn record(&self, user_agent: &str) {
        let client: String = user_agent
            .split('/')
            .next()
            .unwrap_or("")
            .chars()
            .take(64)
            .collect();
        self.requests.get_or_create(&ClientLabels { client }).inc();
    }

    /// The requests counted so far for one client.
    pub fn requests_from(&self, client: &str) -> u64 {
        self.requests
            .get_or_create(&ClientLabels {
                client: client.to_string(),
            })
            .get()
    }

    /// The metrics in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
