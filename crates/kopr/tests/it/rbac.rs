//! An operator run as its own ServiceAccount, under the ClusterRole its manifests generate: what
//! the manifests grant works, and a kind they forgot is kube's 403, reported on the object with a
//! hint naming the missing rule, while other objects are still served.

use crate::common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kopr::kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kopr::manifests::Manifests;
use kopr::{Context, HandlerError, HandlerResult, Operator, Resource};

/// Reads ConfigMaps (declared) and, for widgets saying "secrets", Secrets (not declared).
fn operator() -> Operator {
    let read = kopr::Handler::new(|ctx: Context<Widget>| async move {
        let ns = ctx.namespace().unwrap_or_default();
        let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), ns);
        configmaps.list(&ListParams::default()).await?;
        if ctx.object.spec.message == "secrets" {
            let secrets: Api<Secret> = Api::namespaced(ctx.client().clone(), ns);
            secrets.list(&ListParams::default()).await?;
        }
        HandlerResult::Ok(format!("read {}", ctx.object.spec.message))
    })
    .id("read")
    .backoff(std::time::Duration::from_millis(200));
    Operator::new().resource(Resource::<Widget>::custom().on_create(read))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_the_manifests_forgot_is_a_403_with_a_hint() {
    let cluster = cluster().await;
    namespace(&cluster, "team").await;
    let manifests = Manifests::new("widgets").reads::<ConfigMap>();
    let running = cluster
        .run_as_service_account(operator(), &manifests)
        .await
        .unwrap();
    let api = widgets(&cluster, "team");
    create_widget(&api, "ok", "configmaps").await;
    create_widget(&api, "forgot", "secrets").await;

    let warning = cluster
        .wait_for_warning("team", "forgot", WAIT, |e| {
            e.message
                .as_deref()
                .unwrap_or_default()
                .contains("forbidden")
        })
        .await
        .unwrap();
    let message = warning.message.unwrap_or_default();
    assert!(
        message.contains(
            "secrets is forbidden: User \"system:serviceaccount:default:widgets\" cannot list resource \"secrets\" in API group \"\" in the namespace \"team\""
        ),
        "{message}"
    );
    assert!(
        message.contains(
            "hint: the operator's RBAC lacks {apiGroups: [\"\"], resources: [\"secrets\"], verbs: [\"list\"]}"
        ),
        "{message}"
    );
    // The declared read works: the other widget is handled.
    wait_widget(&api, "ok", |w| w["status"]["read"] == "read configmaps").await;
    // Granting the rule (as the manifests would, with reads::<Secret>()) lets the retry through.
    let granted = Manifests::new("widgets")
        .reads::<ConfigMap>()
        .reads::<Secret>();
    kopr::service_account::apply_rbac(&cluster.client(), &granted, &operator())
        .await
        .unwrap();
    wait_widget(&api, "forgot", |w| w["status"]["read"] == "read secrets").await;
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_account_is_the_one_the_manifests_name() {
    let cluster = cluster().await;
    let manifests = Manifests::new("widgets").namespace("ops");
    let account = kopr::service_account::apply_rbac(&cluster.client(), &manifests, &operator())
        .await
        .unwrap();
    assert_eq!(account.user_name(), "system:serviceaccount:ops:widgets");
    let token = account.token(&cluster.client(), 600).await.unwrap();
    let kubeconfig = cluster.kubeconfig_yaml_with_token(&token);
    let client = kopr::testing::client_from_yaml(&kubeconfig).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(client, "ops");
    let denied = secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("s".into()),
                    ..ObjectMeta::default()
                },
                ..Secret::default()
            },
        )
        .await
        .unwrap_err();
    let message = HandlerError::from(denied).to_message();
    assert!(
        message.contains("(hint: the operator's RBAC lacks {apiGroups: [\"\"], resources: [\"secrets\"], verbs: [\"create\"]}"),
        "{message}"
    );
}
