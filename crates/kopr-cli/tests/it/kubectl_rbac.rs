//! Identity and RBAC through real kubectl against a `kopr apiserver` child
//! process: `create token`, `auth whoami`, `auth can-i` (with `--list` and
//! `--as`), kube's 403s, a Role and RoleBinding granting access in one
//! namespace only, a deleted service account's token, escalation and
//! impersonation refused, and a token file's users.

use crate::support::Server;

/// kubectl's stderr for a failing run.
fn fails(server: &Server, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(!out.status.success(), "kubectl {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// kubectl's stdout whether it succeeds or not (`auth can-i` exits 1 on no).
fn says(server: &Server, args: &[&str]) -> String {
    String::from_utf8_lossy(&server.kubectl(args).stdout).into_owned()
}

#[test]
fn kubectl_tokens_whoami_can_i_and_rbac_denials_match_kube() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.ok(&["create", "namespace", "team"]);
    server.ok(&["create", "serviceaccount", "robot", "-n", "team"]);
    let token = server.ok(&[
        "create",
        "token",
        "robot",
        "-n",
        "team",
        "--duration",
        "20m",
    ]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let as_robot = |args: &[&str]| {
        let mut all = vec!["--token", token];
        all.extend_from_slice(args);
        all.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        server.kubectl(&refs)
    };

    let whoami = run(as_robot(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]));
    assert_eq!(
        String::from_utf8_lossy(&whoami.stdout),
        "system:serviceaccount:team:robot"
    );
    let admin = server.ok(&["auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"]);
    assert!(admin.contains("system:masters"), "{admin}");

    let denied = run(as_robot(&["get", "secrets", "-n", "team"]));
    assert_eq!(
        String::from_utf8_lossy(&denied.stderr),
        "Error from server (Forbidden): secrets is forbidden: User \"system:serviceaccount:team:robot\" cannot list resource \"secrets\" in API group \"\" in the namespace \"team\"\n"
    );
    assert_eq!(
        String::from_utf8_lossy(
            &run(as_robot(&[
                "auth", "can-i", "list", "secrets", "-n", "team"
            ]))
            .stdout
        ),
        "no\n"
    );
    assert_eq!(
        says(
            &server,
            &[
                "auth",
                "can-i",
                "list",
                "secrets",
                "-n",
                "team",
                "--as",
                "system:serviceaccount:team:robot"
            ]
        ),
        "no\n"
    );
    assert_eq!(
        says(&server, &["auth", "can-i", "list", "secrets", "-n", "team"]),
        "yes\n"
    );

    server.ok(&[
        "create",
        "role",
        "reader",
        "-n",
        "team",
        "--verb=get,list",
        "--resource=secrets",
    ]);
    server.ok(&[
        "create",
        "rolebinding",
        "reader",
        "-n",
        "team",
        "--role=reader",
        "--serviceaccount=team:robot",
    ]);
    let listed = run(as_robot(&["get", "secrets", "-n", "team"]));
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(
            &run(as_robot(&[
                "auth", "can-i", "list", "secrets", "-n", "team"
            ]))
            .stdout
        ),
        "yes\n"
    );
    // The binding applies in `team` only.
    assert_eq!(
        String::from_utf8_lossy(
            &run(as_robot(&[
                "auth", "can-i", "list", "secrets", "-n", "default"
            ]))
            .stdout
        ),
        "no\n"
    );
    let list =
        String::from_utf8_lossy(&run(as_robot(&["auth", "can-i", "--list", "-n", "team"])).stdout)
            .into_owned();
    assert!(
        list.lines()
            .any(|l| l.starts_with("secrets ") && l.contains("[get list]")),
        "{list}"
    );
    assert!(
        list.lines()
            .any(|l| l.contains("selfsubjectaccessreviews.authorization.k8s.io")),
        "{list}"
    );

    // Escalation: the robot may create roles, but not ones granting more than it holds.
    server.ok(&[
        "create",
        "role",
        "role-maker",
        "-n",
        "team",
        "--verb=create",
        "--resource=roles.rbac.authorization.k8s.io",
    ]);
    server.ok(&[
        "create",
        "rolebinding",
        "role-maker",
        "-n",
        "team",
        "--role=role-maker",
        "--serviceaccount=team:robot",
    ]);
    let ok = run(as_robot(&[
        "create",
        "role",
        "narrow",
        "-n",
        "team",
        "--verb=get",
        "--resource=secrets",
    ]));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let escalation = String::from_utf8_lossy(
        &run(as_robot(&[
            "create",
            "role",
            "wide",
            "-n",
            "team",
            "--verb=delete",
            "--resource=secrets",
        ]))
        .stderr,
    )
    .into_owned();
    assert_eq!(
        escalation,
        "Error from server (Forbidden): roles.rbac.authorization.k8s.io \"wide\" is forbidden: user \"system:serviceaccount:team:robot\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:team\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"delete\"]}\n"
    );

    // Impersonation needs the impersonate verb.
    let impersonating = String::from_utf8_lossy(
        &run(as_robot(&["get", "pods", "-n", "team", "--as", "jane"])).stderr,
    )
    .into_owned();
    assert_eq!(
        impersonating,
        "Error from server (Forbidden): users \"jane\" is forbidden: User \"system:serviceaccount:team:robot\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope\n"
    );

    // The token dies with its service account.
    server.ok(&["delete", "serviceaccount", "robot", "-n", "team"]);
    let gone = String::from_utf8_lossy(&run(as_robot(&["get", "secrets", "-n", "team"])).stderr)
        .into_owned();
    assert_eq!(
        gone,
        "error: You must be logged in to the server (Unauthorized)\n"
    );

    // The bootstrap policy is there, as kubectl shows it.
    let roles = server.ok(&["get", "clusterroles", "-o", "name"]);
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
    ] {
        assert!(
            roles.contains(&format!("clusterrole.rbac.authorization.k8s.io/{role}\n")),
            "{role}: {roles}"
        );
    }
    let short = fails(&server, &["create", "token", "default", "--duration", "5m"]);
    assert!(
        short.contains("may not specify a duration less than 10 minutes"),
        "{short}"
    );
}

#[test]
fn a_token_files_users_are_who_it_says() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "jane-token,jane,1001,\"devs,ops\"\n").unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--token-auth-file", file.to_str().unwrap()]);
    let who = server.ok(&[
        "--token",
        "jane-token",
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo}",
    ]);
    let info: serde_json::Value = serde_json::from_str(&who).unwrap();
    assert_eq!(
        info,
        serde_json::json!({"username": "jane", "uid": "1001", "groups": ["devs", "ops", "system:authenticated"]})
    );
    server.ok(&[
        "create",
        "clusterrolebinding",
        "devs-view",
        "--clusterrole=view",
        "--group=devs",
    ]);
    let pods = server.kubectl(&["--token", "jane-token", "get", "pods", "-A"]);
    assert!(
        pods.status.success(),
        "{}",
        String::from_utf8_lossy(&pods.stderr)
    );
    let secrets = String::from_utf8_lossy(
        &server
            .kubectl(&["--token", "jane-token", "get", "secrets"])
            .stderr,
    )
    .into_owned();
    assert!(
        secrets.starts_with("Error from server (Forbidden): secrets is forbidden: User \"jane\""),
        "{secrets}"
    );
}
