//! Objects every cluster starts with: the system namespaces, a `default`
//! ServiceAccount in each namespace, the `kubernetes` Service, the
//! APIServices of the served group versions ([`api_services`]) and the
//! bootstrap RBAC policy ([`rbac`]).

pub mod api_services;
pub mod rbac;

use serde_json::json;

use crate::registry::{Api, Target, WriteOptions};
use crate::resources::kind::Known;
use crate::status::ApiError;

/// Field manager of objects the server creates itself.
pub const SYSTEM_MANAGER: &str = "kopr-apiserver";

/// The options of writes the server makes itself.
pub fn system_options() -> WriteOptions {
    WriteOptions {
        field_manager: SYSTEM_MANAGER.to_string(),
        ..WriteOptions::default()
    }
}

/// Creates the system namespaces and their default ServiceAccounts if missing.
pub async fn ensure_system_objects(api: &Api) -> Result<(), ApiError> {
    let Some(ns_rt) = api.catalog.known(Known::Namespaces) else {
        return Ok(());
    };
    for ns in crate::kinds::SYSTEM_NAMESPACES {
        let t = Target {
            rt: ns_rt.clone(),
            namespace: None,
            name: Some(ns.to_string()),
        };
        match api.get(&t).await {
            Ok(_) => {}
            Err(e) if e.code == 404 => {
                let obj =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                match api.create(&ns_rt, None, obj, &system_options()).await {
                    Ok(_) => {}
                    Err(e) if e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
        ensure_default_service_account(api, ns).await?;
    }
    ensure_kubernetes_service(api).await?;
    api_services::resync(api).await;
    rbac::ensure_policy(api).await
}

/// The `kubernetes` Service in `default`, at the first address of the range.
async fn ensure_kubernetes_service(api: &Api) -> Result<(), ApiError> {
    let Some(rt) = api.catalog.known(Known::Services) else {
        return Ok(());
    };
    let t = Target {
        rt: rt.clone(),
        namespace: Some("default".into()),
        name: Some("kubernetes".into()),
    };
    match api.get(&t).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => {
            let svc = json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "namespace": "default",
                             "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                         "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                         "sessionAffinity": "None"}
            });
            match api
                .create(&rt, Some("default"), svc, &system_options())
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if e.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Creates the `default` ServiceAccount of a namespace if missing.
pub async fn ensure_default_service_account(api: &Api, namespace: &str) -> Result<(), ApiError> {
    let Some(sa_rt) = api.catalog.known(Known::ServiceAccounts) else {
        return Ok(());
    };
    let t = Target {
        rt: sa_rt.clone(),
        namespace: Some(namespace.to_string()),
        name: Some("default".into()),
    };
    match api.get(&t).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => {
            let obj = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}});
            match api
                .create(&sa_rt, Some(namespace), obj, &system_options())
                .await
            {
                Ok(_) => Ok(()),
                // Already there, or the namespace is going away.
                Err(e) if matches!(e.code, 403 | 404 | 409) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
