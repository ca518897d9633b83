//! Running an operator as its own ServiceAccount, as it runs on a real
//! cluster: the Namespace, ServiceAccount, ClusterRole and
//! ClusterRoleBinding that [`Manifests`] generates are applied with an
//! admin client, and the operator gets a client presenting a token of that
//! ServiceAccount (a TokenRequest). A rule the manifests forgot is then the
//! 403 it would be in production.
//!
//! `dev` does this unless told `--admin`; [`TestCluster::run_as_service_account`]
//! does it in tests.
//!
//! [`TestCluster::run_as_service_account`]: crate::testing::TestCluster::run_as_service_account
//!
//! ```no_run
//! # async fn run(admin: kube::Client, config: kube::Config, operator: kopr::Operator) -> Result<(), kopr::Error> {
//! use kopr::manifests::Manifests;
//! let manifests = Manifests::new("greeting");
//! let account = kopr::service_account::apply_rbac(&admin, &manifests, &operator).await?;
//! let token = account.token(&admin, 3600).await?;
//! let client = kube::Client::try_from(kopr::service_account::with_token(&config, &token))?;
//! # let _ = client; Ok(()) }
//! ```

use std::path::PathBuf;

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::handling::errors::Error;
use crate::kits::apply::{Document, Source, apply};
use crate::kits::manifests::Manifests;
use crate::operator::Operator;

/// The kinds of the manifests that give the operator its identity.
const IDENTITY_KINDS: &[&str] = &[
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
];

/// The operator's ServiceAccount, once its RBAC is applied ([`apply_rbac`]).
///
/// ```no_run
/// # async fn run(admin: kube::Client, operator: kopr::Operator) -> Result<(), kopr::Error> {
/// use kopr::manifests::Manifests;
/// use kopr::service_account::{apply_rbac, with_token};
///
/// let account = apply_rbac(&admin, &Manifests::new("greeting"), &operator).await?;
/// assert_eq!(account.user_name(), "system:serviceaccount:default:greeting");
/// let token = account.token(&admin, 3600).await?;
/// let config = with_token(&kube::Config::infer().await.unwrap(), &token);
/// let _as_operator = kopr::client::build(config)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorAccount {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl OperatorAccount {
    /// The user name the API server knows it by.
    pub fn user_name(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// A token of the account valid for `seconds` (at least 600), asked of
    /// the API server with `admin`.
    ///
    /// # Errors
    /// The API server's refusal, or no token in its answer.
    pub async fn token(&self, admin: &kube::Client, seconds: i64) -> Result<String, Error> {
        let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), &self.namespace);
        let request: TokenRequest =
            serde_json::from_value(json!({"spec": {"expirationSeconds": seconds}}))?;
        let answer = accounts
            .create_token_request(&self.name, &PostParams::default(), &request)
            .await?;
        let answer = serde_json::to_value(answer)?;
        match answer["status"]["token"].as_str() {
            Some(token) if !token.is_empty() => Ok(token.to_string()),
            _ => Err(Error::Config(format!(
                "the API server issued no token for {}",
                self.user_name()
            ))),
        }
    }
}

/// Applies the Namespace, ServiceAccount, ClusterRole and ClusterRoleBinding
/// that `manifests` generates for `operator`, with `admin`.
///
/// # Errors
/// The first object the API server refuses.
pub async fn apply_rbac(
    admin: &kube::Client,
    manifests: &Manifests,
    operator: &Operator,
) -> Result<OperatorAccount, Error> {
    let documents: Vec<Document> = manifests
        .objects(operator)?
        .into_iter()
        .filter(|o| {
            o["kind"]
                .as_str()
                .is_some_and(|k| IDENTITY_KINDS.contains(&k))
        })
        .enumerate()
        .map(|(i, object)| Document {
            source: Source {
                path: PathBuf::from(format!("{} manifests", manifests.name())),
                line: i + 1,
            },
            object,
        })
        .collect();
    let mut account = None;
    for outcome in apply(admin, &documents).await {
        if let Err(e) = &outcome.result {
            return Err(Error::Config(format!("applying the operator's RBAC: {e}")));
        }
    }
    for d in &documents {
        if d.object["kind"] == "ServiceAccount" {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            account = Some(OperatorAccount {
                namespace: text(&d.object["metadata"]["namespace"]),
                name: text(&d.object["metadata"]["name"]),
            });
        }
    }
    account.ok_or_else(|| Error::Config("the manifests have no ServiceAccount".into()))
}

/// `config` with its credentials replaced by `token`.
pub fn with_token(config: &kube::Config, token: &str) -> kube::Config {
    let mut config = config.clone();
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.to_string().into()),
        ..kube::config::AuthInfo::default()
    };
    config
}
