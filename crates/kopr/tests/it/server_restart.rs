//! Watching survives an API-server restart: the operator keeps serving objects created after
//! the server came back, without being restarted itself.

use crate::common::*;
use kopr::testing::client_from_yaml;
use kopr::{Operator, Resource};
use kopr_apiserver::{ApiServer, Config};
use kube::api::{Api, PostParams};
use std::net::TcpListener;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_survives_an_api_server_restart() {
    kopr::testing::capture_logs();
    let dir = tempfile::tempdir().unwrap();
    // A fixed port, so the operator's client finds the server again.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = || Config {
        data_dir: Some(dir.path().to_path_buf()),
        listen: ([127, 0, 0, 1], port).into(),
        in_memory: false,
        ..Config::ephemeral()
    };
    let server = ApiServer::start(config()).await.unwrap();
    let kubeconfig = server.kubeconfig_yaml();
    let client = client_from_yaml(&kubeconfig).await.unwrap();
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    kopr::testing::wait_for(&crds, "widgets.kopr.test", WAIT, |c: Option<&_>| {
        kube::runtime::wait::Condition::matches_object(
            &kube::runtime::conditions::is_crd_established(),
            c,
        )
    })
    .await
    .unwrap();

    let calls = Calls::default();
    let operator = Operator::new()
        .watch_timeout(std::time::Duration::from_secs(2))
        .resource(Resource::<Widget>::custom().on_create(recording(&calls, "seen")));
    // Run the operator on its own runtime, as a separate process would.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let operator_kubeconfig = kubeconfig.clone();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let client = client_from_yaml(&operator_kubeconfig).await.unwrap();
            operator
                .run_until(client, async {
                    let _ = stopped.await;
                })
                .await
        })
    });
    let api: Api<Widget> = Api::namespaced(client.clone(), "default");
    create_widget(&api, "before", "x").await;
    wait_widget(&api, "before", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;

    server.shutdown().await;
    let server = ApiServer::start(config()).await.unwrap();
    let client = client_from_yaml(&server.kubeconfig_yaml()).await.unwrap();
    let api: Api<Widget> = Api::namespaced(client, "default");
    create_widget(&api, "after", "y").await;
    wait_widget(&api, "after", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    assert_eq!(calls.all(), vec!["before", "after"]);
    let _ = stop.send(());
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    server.shutdown().await;
}
