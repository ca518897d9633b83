//! `kopr-bench authz`: the cost of authentication and RBAC per request. The same ConfigMap
//! creates run as the admin (`system:masters`, allowed before RBAC is asked) and as a service
//! account whose permission comes from a RoleBinding, found among `--bindings` other role
//! bindings and cluster role bindings, with a bearer JWT verified on every request. Rounds
//! alternate so that noise on a shared machine falls on both; the figure is the median ratio.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::apiserver::{client, concurrent, cpu_seconds, kopr_binary, percentile, start_server};

/// Options of `kopr-bench authz`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<std::path::PathBuf>,
    /// ConfigMaps created per round and identity.
    #[arg(long, default_value_t = 2000)]
    creates: usize,
    /// Rounds (each: admin, then service account).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Unrelated role bindings and cluster role bindings made first, so that RBAC has bindings
    /// to look through as on a busy cluster.
    #[arg(long, default_value_t = 200)]
    bindings: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    clients: usize,
}

fn from<K: serde::de::DeserializeOwned>(value: serde_json::Value) -> anyhow::Result<K> {
    Ok(serde_json::from_value(value)?)
}

/// The namespace, the service account allowed to create ConfigMaps there, and `bindings`
/// others; returns a client presenting the account's token.
async fn service_account_client(
    admin: &kube::Client,
    kubeconfig: &std::path::Path,
    bindings: usize,
) -> anyhow::Result<kube::Client> {
    let pp = PostParams::default();
    Api::<Namespace>::all(admin.clone())
        .create(&pp, &from(json!({"metadata": {"name": "bench"}}))?)
        .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "bench");
    accounts
        .create(&pp, &from(json!({"metadata": {"name": "writer"}}))?)
        .await?;
    let roles: Api<Role> = Api::namespaced(admin.clone(), "bench");
    roles
        .create(
            &pp,
            &from(json!({"metadata": {"name": "writer"}, "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}
            ]}))?,
        )
        .await?;
    let role_bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), "bench");
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    for i in 0..bindings {
        let binding = json!({"metadata": {"name": format!("other-{i}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": format!("user-{i}")}]});
        if i % 2 == 0 {
            role_bindings.create(&pp, &from(binding)?).await?;
        } else {
            cluster_bindings.create(&pp, &from(binding)?).await?;
        }
    }
    role_bindings
        .create(
            &pp,
            &from(json!({"metadata": {"name": "writer"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "writer"},
                "subjects": [{"kind": "ServiceAccount", "name": "writer", "namespace": "bench"}]}))?,
        )
        .await?;
    let request = from(json!({"spec": {"expirationSeconds": 3600}}))?;
    let answer = accounts
        .create_token_request("writer", &pp, &request)
        .await?;
    let answer = serde_json::to_value(answer)?;
    let token = answer["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    anyhow::ensure!(!token.is_empty(), "no token issued");
    let yaml = std::fs::read_to_string(kubeconfig)?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml)?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.into()),
        ..Default::default()
    };
    Ok(kube::Client::try_from(config)?)
}

fn config_map(name: String) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    }
}

async fn creates(
    api: Api<ConfigMap>,
    clients: usize,
    prefix: &'static str,
    round: usize,
    n: usize,
) -> anyhow::Result<f64> {
    let api = Arc::new(api);
    concurrent(clients, n, move |i| {
        let api = api.clone();
        async move {
            api.create(
                &PostParams::default(),
                &config_map(format!("{prefix}-{round}-{i}")),
            )
            .await?;
            Ok(())
        }
    })
    .await
}

/// Runs the comparison and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let (server, _) = start_server(&kopr_binary(args.kopr.as_deref())?, &[])?;
    let admin = client(&server).await?;
    let robot = service_account_client(&admin, &server.kubeconfig, args.bindings).await?;
    let pid = server.child.id();
    let (mut admin_rates, mut robot_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut admin_cpu, mut robot_cpu) = (0.0, 0.0);
    for round in 0..args.rounds {
        let mut rates = [0.0; 2];
        for (i, (client, prefix)) in [(&admin, "admin"), (&robot, "robot")]
            .into_iter()
            .enumerate()
        {
            let before = cpu_seconds(pid);
            let api = Api::namespaced(client.clone(), "bench");
            rates[i] = creates(api, args.clients, prefix, round, args.creates).await?;
            let spent = cpu_seconds(pid) - before;
            if i == 0 {
                admin_cpu += spent;
            } else {
                robot_cpu += spent;
            }
        }
        admin_rates.push(rates[0]);
        robot_rates.push(rates[1]);
        ratios.push(rates[1] / rates[0]);
    }
    for list in [&mut admin_rates, &mut robot_rates, &mut ratios] {
        list.sort_by(f64::total_cmp);
    }
    let total = (args.creates * args.rounds) as f64;
    println!(
        "| figure | result |\n|---|---|\n\
         | ConfigMap creates/s as admin ({} clients, median of {} rounds of {}) | {:.0} |\n\
         | ConfigMap creates/s as a service account, RBAC among {} other bindings | {:.0} |\n\
         | ratio service account / admin (median of rounds) | {:.2} |\n\
         | server CPU per create, admin / service account | {:.0} µs / {:.0} µs |",
        args.clients,
        args.rounds,
        args.creates,
        percentile(&admin_rates, 0.5),
        args.bindings,
        percentile(&robot_rates, 0.5),
        percentile(&ratios, 0.5),
        admin_cpu / total * 1e6,
        robot_cpu / total * 1e6,
    );
    Ok(())
}
