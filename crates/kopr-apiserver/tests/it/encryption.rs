//! Encryption at rest: Secrets written under an EncryptionConfiguration are stored encrypted
//! (kube's `k8s:enc:aescbc:v1:<key>:` values), read back after a restart, and unreadable
//! without the key; other resources are stored as they are.

use crate::common;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use serde_json::json;

const CONFIG: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/Pz8/Pz8=
  - identity: {}
";

/// Every byte the database files hold.
fn stored_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).expect("data dir") {
        let path = entry.expect("entry").path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("state.db"))
        {
            all.extend(std::fs::read(&path).expect("readable"));
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn secrets_are_encrypted_at_rest_and_read_back_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let config_file = dir.path().join("encryption.yaml");
    std::fs::write(&config_file, CONFIG).expect("config written");
    let config = || {
        let mut c = kopr_apiserver::Config::ephemeral();
        c.data_dir = Some(data.clone());
        c.in_memory = false;
        c.encryption_provider_config = Some(config_file.clone());
        c
    };
    let f = common::start_with(config()).await;
    let secrets: Api<Secret> = Api::namespaced(f.client.clone(), "default");
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2-at-rest"}}),
    )
    .expect("secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("created");
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "c"}, "data": {"visible": "plain-config-value"}}),
    )
    .expect("cm");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("created");
    f.server.shutdown().await;

    let bytes = stored_bytes(&data);
    assert!(
        contains(&bytes, b"k8s:enc:aescbc:v1:key1:"),
        "the Secret is stored encrypted"
    );
    assert!(
        !contains(&bytes, b"aHVudGVyMi1hdC1yZXN0"),
        "the Secret's data is not stored in the clear"
    );
    assert!(!contains(&bytes, b"hunter2-at-rest"));
    assert!(
        contains(&bytes, b"plain-config-value"),
        "ConfigMaps are stored as they are"
    );

    // After a restart with the key, the Secret reads back.
    let f = common::start_with(config()).await;
    let secrets: Api<Secret> = Api::namespaced(f.client.clone(), "default");
    let back = secrets.get("s").await.expect("read back");
    let password = back
        .data
        .and_then(|d| d.get("password").cloned())
        .expect("password");
    assert_eq!(password.0, b"hunter2-at-rest");
    f.server.shutdown().await;

    // Without the key, the server refuses to start rather than serve garbage.
    let mut keyless = config();
    keyless.encryption_provider_config = None;
    let refused = kopr_apiserver::ApiServer::start(keyless)
        .await
        .expect_err("no key, no start");
    assert!(
        refused.to_string().contains("no matching prefix found")
            || refused.to_string().contains("corrupt"),
        "{refused}"
    );
}
