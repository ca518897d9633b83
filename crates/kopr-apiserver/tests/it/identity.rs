//! Identity and authorization through kube-rs: service-account tokens
//! (TokenRequest, TokenReview, SelfSubjectReview), RBAC enforced with
//! kube's 403s, access reviews, impersonation and escalation prevention.

use crate::common;

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenRequest, TokenReview};
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role, RoleBinding, Subject};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

async fn create<K>(api: &Api<K>, value: serde_json::Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(value).expect("object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("created")
}

/// A namespace `ns` with the service account `name` in it, and a token of it.
async fn service_account_token(client: &kube::Client, ns: &str, name: &str) -> String {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(ns).await.expect("get").is_none() {
        create(&namespaces, json!({"metadata": {"name": ns}})).await;
    }
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    create(&sas, json!({"metadata": {"name": name}})).await;
    let request: TokenRequest = from(json!({"spec": {}}));
    let answer = sas
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("token request");
    let answer = serde_json::to_value(&answer).expect("json");
    let token = answer["status"]["token"].as_str().unwrap_or_default();
    assert!(!token.is_empty(), "{answer}");
    token.to_string()
}

fn from<K: serde::de::DeserializeOwned>(value: serde_json::Value) -> K {
    serde_json::from_value(value).expect("object")
}

fn role_rules(verbs: &[&str], resources: &[&str]) -> Vec<PolicyRule> {
    vec![PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    }]
}

async fn grant(client: &kube::Client, ns: &str, name: &str, rules: Vec<PolicyRule>, sa: &str) {
    let roles: Api<Role> = Api::namespaced(client.clone(), ns);
    let role = Role {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        rules: Some(rules),
    };
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("role");
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), ns);
    let binding = RoleBinding {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        role_ref: from(
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}),
        ),
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: sa.into(),
            namespace: Some(ns.into()),
            ..Subject::default()
        }]),
    };
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding");
}

#[tokio::test]
async fn a_service_account_is_refused_until_a_role_grants_then_its_token_dies_with_it() {
    let f = common::start().await;
    let token = service_account_token(&f.client, "team", "robot").await;
    let robot = common::client_with_token(&f.server, &token).await;

    let me: SelfSubjectReview = Api::all(robot.clone())
        .create(&PostParams::default(), &from(json!({})))
        .await
        .expect("whoami");
    let info = serde_json::to_value(me.status).expect("status")["userInfo"].clone();
    assert_eq!(info["username"], "system:serviceaccount:team:robot");
    assert_eq!(
        info["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ])
    );
    let sa = Api::<ServiceAccount>::namespaced(f.client.clone(), "team")
        .get("robot")
        .await
        .expect("sa");
    assert_eq!(info["uid"].as_str(), sa.metadata.uid.as_deref());

    let secrets: Api<Secret> = Api::namespaced(robot.clone(), "team");
    let denied = common::status_of(secrets.list(&ListParams::default()).await.expect_err("403"));
    assert_eq!(denied.code, 403);
    assert_eq!(denied.reason, "Forbidden");
    assert_eq!(
        denied.message,
        "secrets is forbidden: User \"system:serviceaccount:team:robot\" cannot list resource \"secrets\" in API group \"\" in the namespace \"team\""
    );
    let named = common::status_of(secrets.get("s").await.expect_err("403"));
    assert!(
        named.message.starts_with("secrets \"s\" is forbidden: "),
        "{}",
        named.message
    );
    let details = named.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("s", "secrets")
    );

    grant(
        &f.client,
        "team",
        "reader",
        role_rules(&["get", "list"], &["secrets"]),
        "robot",
    )
    .await;
    assert!(
        secrets.list(&ListParams::default()).await.is_ok(),
        "granted by the role"
    );
    // The binding is in `team`: other namespaces stay closed.
    let elsewhere: Api<Secret> = Api::namespaced(robot.clone(), "default");
    let denied = common::status_of(
        elsewhere
            .list(&ListParams::default())
            .await
            .expect_err("403"),
    );
    assert_eq!(denied.code, 403);
    // Reading is not writing.
    let created = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("s".into()),
            ..Default::default()
        },
        ..Secret::default()
    };
    let denied = common::status_of(
        secrets
            .create(&PostParams::default(), &created)
            .await
            .expect_err("403"),
    );
    assert!(
        denied
            .message
            .contains("cannot create resource \"secrets\""),
        "{}",
        denied.message
    );

    // The token dies with its service account.
    Api::<ServiceAccount>::namespaced(f.client.clone(), "team")
        .delete("robot", &DeleteParams::default())
        .await
        .expect("deleted");
    let (code, _, _) = common::raw(
        &robot,
        "GET",
        "/api/v1/namespaces/team/secrets",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 401);
}

#[tokio::test]
async fn token_requests_follow_kubes_limits_and_token_reviews_say_who() {
    let f = common::start().await;
    let token = service_account_token(&f.client, "team", "robot").await;
    let sas: Api<ServiceAccount> = Api::namespaced(f.client.clone(), "team");
    let short: TokenRequest = from(json!({"spec": {"expirationSeconds": 599}}));
    let refused = common::status_of(
        sas.create_token_request("robot", &PostParams::default(), &short)
            .await
            .expect_err("too short"),
    );
    assert_eq!(refused.code, 422);
    assert_eq!(
        refused.message,
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let missing = common::status_of(
        sas.create_token_request("nobody", &PostParams::default(), &from(json!({"spec": {}})))
            .await
            .expect_err("no such account"),
    );
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "serviceaccounts \"nobody\" not found")
    );

    let reviews: Api<TokenReview> = Api::all(f.client.clone());
    let review = |token: &str| -> TokenReview { from(json!({"spec": {"token": token}})) };
    let answer = reviews
        .create(&PostParams::default(), &review(&token))
        .await
        .expect("review");
    let status = serde_json::to_value(answer.status).expect("status");
    assert_eq!(status["authenticated"], true);
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:team:robot"
    );
    assert_eq!(
        status["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let forged = format!("{token}x");
    let answer = reviews
        .create(&PostParams::default(), &review(&forged))
        .await
        .expect("review");
    let status = serde_json::to_value(answer.status).expect("status");
    assert!(status["authenticated"].is_null() || status["authenticated"] == false);
    assert!(
        status["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("[invalid bearer token, "),
        "{status}"
    );
}

#[tokio::test]
async fn access_reviews_answer_for_self_and_others() {
    let f = common::start().await;
    let token = service_account_token(&f.client, "team", "robot").await;
    grant(
        &f.client,
        "team",
        "cm",
        role_rules(&["get"], &["configmaps"]),
        "robot",
    )
    .await;
    let robot = common::client_with_token(&f.server, &token).await;

    let attributes = |verb: &str, resource: &str, ns: &str| json!({"verb": verb, "resource": resource, "namespace": ns});
    let ask = |verb: &str, resource: &str, ns: &str| -> SelfSubjectAccessReview {
        from(json!({"spec": {"resourceAttributes": attributes(verb, resource, ns)}}))
    };
    let own: Api<SelfSubjectAccessReview> = Api::all(robot.clone());
    let yes = own
        .create(&PostParams::default(), &ask("get", "configmaps", "team"))
        .await
        .expect("review");
    let status = serde_json::to_value(yes.status).expect("status");
    assert_eq!(status["allowed"], true);
    assert_eq!(
        status["reason"],
        "RBAC: allowed by RoleBinding \"cm/team\" of Role \"cm\" to ServiceAccount \"robot/team\""
    );
    let no = own
        .create(&PostParams::default(), &ask("delete", "configmaps", "team"))
        .await
        .expect("review");
    assert_eq!(
        serde_json::to_value(no.status).expect("status"),
        json!({"allowed": false})
    );

    let rules: Api<SelfSubjectRulesReview> = Api::all(robot.clone());
    let listed = rules
        .create(
            &PostParams::default(),
            &from(json!({"spec": {"namespace": "team"}})),
        )
        .await
        .expect("rules");
    let status = serde_json::to_value(listed.status).expect("status");
    assert_eq!(status["incomplete"], false);
    let resource_rules = status["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        resource_rules
            .contains(&json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]})),
        "{status}"
    );
    let non_resource = status["nonResourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(non_resource.iter().any(|r| {
        r["nonResourceURLs"]
            .as_array()
            .is_some_and(|u| u.contains(&json!("/api")))
    }));

    // The admin asks about the robot; the robot may not.
    let about: SubjectAccessReview = from(json!({"spec": {
        "user": "system:serviceaccount:team:robot",
        "groups": ["system:serviceaccounts"],
        "resourceAttributes": attributes("get", "configmaps", "team"),
    }}));
    let admin_sar: Api<SubjectAccessReview> = Api::all(f.client.clone());
    let answer = admin_sar
        .create(&PostParams::default(), &about)
        .await
        .expect("sar");
    assert_eq!(
        serde_json::to_value(answer.status).expect("status")["allowed"],
        true
    );
    let robot_sar: Api<SubjectAccessReview> = Api::all(robot.clone());
    let denied = common::status_of(
        robot_sar
            .create(&PostParams::default(), &about)
            .await
            .expect_err("403"),
    );
    assert_eq!(
        denied.message,
        "subjectaccessreviews.authorization.k8s.io is forbidden: User \"system:serviceaccount:team:robot\" cannot create resource \"subjectaccessreviews\" in API group \"authorization.k8s.io\" at the cluster scope"
    );
    let nobody: SubjectAccessReview = from(json!({"spec": {
        "resourceAttributes": attributes("get", "configmaps", "team"),
    }}));
    let invalid = common::status_of(
        admin_sar
            .create(&PostParams::default(), &nobody)
            .await
            .expect_err("422"),
    );
    assert_eq!(invalid.code, 422);
    assert!(
        invalid
            .message
            .ends_with("at least one of user or group must be specified"),
        "{}",
        invalid.message
    );

    // A local review asks about its own namespace only.
    let local: Api<LocalSubjectAccessReview> = Api::namespaced(f.client.clone(), "default");
    let review: LocalSubjectAccessReview = serde_json::from_value(json!({
        "spec": {"user": "jane", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "team"}}
    }))
    .expect("review");
    let mismatch = common::status_of(
        local
            .create(&PostParams::default(), &review)
            .await
            .expect_err("422"),
    );
    assert_eq!(mismatch.code, 422);
    assert!(
        mismatch
            .message
            .ends_with("spec.resourceAttributes.namespace: Invalid value: \"team\": must match metadata.namespace"),
        "{}",
        mismatch.message
    );
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let f = common::start().await;
    let token = service_account_token(&f.client, "team", "robot").await;
    let robot = common::client_with_token(&f.server, &token).await;
    let headers = |user: &str| vec![("impersonate-user", user.to_string())];
    let (code, _, body) = common::raw_with_headers(
        &robot,
        "GET",
        "/api/v1/namespaces/team/configmaps",
        &headers("jane"),
        Vec::new(),
    )
    .await;
    assert_eq!(code, 403);
    let status: serde_json::Value = serde_json::from_str(&body).expect("status");
    assert_eq!(
        status["message"],
        "users \"jane\" is forbidden: User \"system:serviceaccount:team:robot\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    // The admin may act as the robot, and then has only the robot's rights.
    let (code, _, body) = common::raw_with_headers(
        &f.client,
        "GET",
        "/api/v1/namespaces/team/secrets",
        &headers("system:serviceaccount:team:robot"),
        Vec::new(),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("User \\\"system:serviceaccount:team:robot\\\" cannot list"),
        "{body}"
    );
    let (code, _, body) = common::raw_with_headers(
        &f.client,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[
            ("impersonate-user", "jane".into()),
            ("impersonate-group", "devs".into()),
            ("content-type", "application/json".into()),
        ],
        br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let review: serde_json::Value = serde_json::from_str(&body).expect("review");
    assert_eq!(
        review["status"]["userInfo"],
        json!({"username": "jane", "groups": ["devs", "system:authenticated"]})
    );
}

#[tokio::test]
async fn roles_and_bindings_grant_only_what_their_writer_holds() {
    let f = common::start().await;
    let token = service_account_token(&f.client, "team", "robot").await;
    grant(
        &f.client,
        "team",
        "delegate",
        vec![
            PolicyRule {
                api_groups: Some(vec!["rbac.authorization.k8s.io".into()]),
                resources: Some(vec!["roles".into(), "rolebindings".into()]),
                verbs: vec!["create".into()],
                ..PolicyRule::default()
            },
            role_rules(&["get"], &["configmaps"]).remove(0),
        ],
        "robot",
    )
    .await;
    let robot = common::client_with_token(&f.server, &token).await;
    let roles: Api<Role> = Api::namespaced(robot.clone(), "team");
    let wanted = |name: &str, rules| Role {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        rules: Some(rules),
    };
    roles
        .create(
            &PostParams::default(),
            &wanted("held", role_rules(&["get"], &["configmaps"])),
        )
        .await
        .expect("a role within the writer's rights");
    let refused = common::status_of(
        roles
            .create(
                &PostParams::default(),
                &wanted("more", role_rules(&["get", "list"], &["secrets"])),
            )
            .await
            .expect_err("escalation"),
    );
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        "roles.rbac.authorization.k8s.io \"more\" is forbidden: user \"system:serviceaccount:team:robot\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:team\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
    );
    let bindings: Api<RoleBinding> = Api::namespaced(robot.clone(), "team");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "to-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "User", "name": "jane"}],
    }))
    .expect("binding");
    let refused = common::status_of(
        bindings
            .create(&PostParams::default(), &binding)
            .await
            .expect_err("escalation"),
    );
    assert_eq!(refused.code, 403);
    assert!(
        refused.message.starts_with("rolebindings.rbac.authorization.k8s.io \"to-admin\" is forbidden: user \"system:serviceaccount:team:robot\""),
        "{}",
        refused.message
    );
    // The aggregated admin role carries the rules of edit and view.
    let admin = Api::<ClusterRole>::all(f.client.clone())
        .get("admin")
        .await
        .expect("admin");
    let rules = admin.rules.unwrap_or_default();
    assert!(rules.iter().any(|r| {
        r.resources
            .as_deref()
            .is_some_and(|res| res.iter().any(|x| x == "pods"))
    }));
    // The `bind` verb on the role lets the binding through.
    grant(
        &f.client,
        "team",
        "binder",
        vec![PolicyRule {
            api_groups: Some(vec!["rbac.authorization.k8s.io".into()]),
            resources: Some(vec!["clusterroles".into()]),
            resource_names: Some(vec!["admin".into()]),
            verbs: vec!["bind".into()],
            ..PolicyRule::default()
        }],
        "robot",
    )
    .await;
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("bind allows it");
    let cms: Api<ConfigMap> = Api::namespaced(robot, "team");
    assert!(
        cms.list(&ListParams::default()).await.is_err(),
        "binding admin to jane gave the robot nothing"
    );
}

#[tokio::test]
async fn pods_get_their_service_account_token_volume_as_kube_admits_them() {
    let f = common::start().await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(f.client.clone(), "default");
    let pod = |name: &str, account: Option<&str>| -> k8s_openapi::api::core::v1::Pod {
        let mut spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
        if let Some(a) = account {
            spec["serviceAccountName"] = json!(a);
        }
        from(json!({"metadata": {"name": name}, "spec": spec}))
    };
    let created = pods
        .create(&PostParams::default(), &pod("p", None))
        .await
        .expect("created");
    let created = serde_json::to_value(created).expect("json");
    assert_eq!(created["spec"]["serviceAccountName"], "default");
    let volume = &created["spec"]["volumes"][0];
    let name = volume["name"].as_str().unwrap_or_default();
    assert!(
        name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5,
        "{name}"
    );
    assert_eq!(
        volume["projected"]["sources"][1]["configMap"]["name"],
        "kube-root-ca.crt"
    );
    assert_eq!(
        created["spec"]["containers"][0]["volumeMounts"],
        json!([{"name": name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
    );
    let root_ca = Api::<ConfigMap>::namespaced(f.client.clone(), "default")
        .get("kube-root-ca.crt")
        .await
        .expect("the CA is published");
    assert_eq!(
        root_ca
            .data
            .and_then(|d| d.get("ca.crt").cloned())
            .as_deref(),
        Some(f.server.ca_pem())
    );
    let refused = common::status_of(
        pods.create(&PostParams::default(), &pod("q", Some("nobody")))
            .await
            .expect_err("no such account"),
    );
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        "pods \"q\" is forbidden: error looking up service account default/nobody: serviceaccount \"nobody\" not found"
    );
    let opted_out: k8s_openapi::api::core::v1::Pod = from(json!({"metadata": {"name": "r"},
        "spec": {"automountServiceAccountToken": false, "containers": [{"name": "c", "image": "nginx"}]}}));
    let created = pods
        .create(&PostParams::default(), &opted_out)
        .await
        .expect("created");
    assert!(
        created
            .spec
            .and_then(|s| s.volumes)
            .unwrap_or_default()
            .is_empty()
    );
}
