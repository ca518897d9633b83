//! kubectl end to end with CustomResourceDefinitions: the seeds' CRDs
//! applied, established, used and deleted; validation, defaults, printer
//! columns, CEL rules, scale, selectable fields and two served versions.

use std::path::PathBuf;

use crate::support::{Server, rows};

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    p.to_string_lossy().into_owned()
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn seed_crds_are_served_used_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    assert_eq!(
        server.ok(&["apply", "-f", &fixture("greeting-crd.yaml")]),
        "customresourcedefinition.apiextensions.k8s.io/greetings.example.com created\n"
    );
    assert_eq!(
        server.ok(&[
            "wait",
            "--for",
            "condition=established",
            "crd/greetings.example.com",
            "--timeout=20s"
        ]),
        "customresourcedefinition.apiextensions.k8s.io/greetings.example.com condition met\n"
    );
    assert_eq!(
        server.ok(&["apply", "-f", &fixture("greeting.yaml")]),
        "greeting.example.com/hello-world created\n"
    );
    let table = rows(&server.ok(&["get", "greetings"]));
    assert_eq!(table[0], ["NAME", "AGE"]);
    assert_eq!(table[1][0], "hello-world");
    assert_eq!(
        server.ok(&[
            "get",
            "greeting",
            "hello-world",
            "-o",
            "jsonpath={.spec.message}"
        ]),
        "Hello, World!"
    );
    let explained = server.ok(&["explain", "greetings.spec"]);
    assert!(explained.contains("FIELD: spec <Object>"), "{explained}");
    assert!(explained.contains("message\t<string>"), "{explained}");
    let crds = rows(&server.ok(&["get", "crd"]));
    assert_eq!(crds[0], ["NAME", "CREATED", "AT"]);

    // The ExchangeRate CRD, with a short name.
    server.ok(&["apply", "-f", &fixture("exchangerate-crd.yaml")]);
    server.ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/exchangerates.operators.brennerm.github.io",
    ]);
    server.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: operators.brennerm.github.io/v1\nkind: ExchangeRate\nmetadata:\n  name: usd\nspec:\n  currency: USD\n",
    );
    assert!(server.ok(&["get", "er"]).contains("usd"));

    // Deleting a CRD deletes its objects.
    assert_eq!(
        server.ok(&["delete", "crd", "greetings.example.com"]),
        "customresourcedefinition.apiextensions.k8s.io \"greetings.example.com\" deleted\n"
    );
    let out = server.kubectl(&["get", "greetings"]);
    assert!(!out.status.success());
    let err = stderr_of(&out);
    // kubectl's discovery cache may still list the type: then the list 404s.
    assert!(
        err.contains("the server doesn't have a resource type \"greetings\"")
            || err.contains("the server could not find the requested resource"),
        "{err}"
    );
    let raw = server.kubectl(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/greetings",
    ]);
    assert!(!raw.status.success(), "the API is gone with the CRD");
}

#[test]
fn book_crd_validation_matches_a_real_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // apiextensions.k8s.io/v1beta1 is not served.
    let out = server.kubectl(&["apply", "-f", &fixture("book-crd-v1beta1.yaml")]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("no matches for kind \"CustomResourceDefinition\" in version \"apiextensions.k8s.io/v1beta1\""),
        "{}",
        stderr_of(&out)
    );

    server.ok(&["apply", "-f", &fixture("book-crd.yaml")]);
    server.ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/books.christianb93.github.com",
    ]);
    // kubectl validates strictly by default: the server rejects the
    // unknown field while decoding, before schema validation.
    let out = server.kubectl(&["apply", "-f", &fixture("books.yaml")]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "book.christianb93.github.com/david-copperfield created\n"
    );
    assert!(
        stderr_of(&out).contains("Book in version \"v1\" cannot be handled as a Book: strict decoding error: unknown field \"spec.foo\""),
        "{}",
        stderr_of(&out)
    );
    // Without strict validation the unknown field is pruned with a warning,
    // and schema validation reports both required fields.
    let out = server.kubectl(&["apply", "--validate=warn", "-f", &fixture("books.yaml")]);
    let err = stderr_of(&out);
    assert!(err.contains("Warning: unknown field \"spec.foo\""), "{err}");
    assert!(err.contains("The Book \"moby-dick\" is invalid: "), "{err}");
    assert!(err.contains("* spec.author: Required value"), "{err}");
    assert!(err.contains("* spec.title: Required value"), "{err}");
    assert!(server.kubectl(&["get", "book", "moby-dick"]).status.code() != Some(0));

    // The status subresource: the main resource ignores status changes.
    server.ok(&[
        "patch",
        "book",
        "david-copperfield",
        "--type=merge",
        "-p",
        r#"{"status":{"read":true}}"#,
    ]);
    assert_eq!(
        server.ok(&[
            "get",
            "book",
            "david-copperfield",
            "-o",
            "jsonpath={.status}"
        ]),
        ""
    );
    server.ok(&[
        "patch",
        "book",
        "david-copperfield",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"read":true}}"#,
    ]);
    assert_eq!(
        server.ok(&[
            "get",
            "book",
            "david-copperfield",
            "-o",
            "jsonpath={.status.read}"
        ]),
        "true"
    );
    // Strategic merge patch is refused for custom resources.
    let out = server.kubectl(&[
        "patch",
        "book",
        "david-copperfield",
        "--type=strategic",
        "-p",
        r#"{"spec":{"title":"x"}}"#,
    ]);
    assert!(
        stderr_of(&out).contains("UnsupportedMediaType")
            || stderr_of(&out).contains("unknown format"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn schema_features_printer_columns_cel_and_scale() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.ok(&["apply", "-f", &fixture("widget-crd.yaml")]);
    server.ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/widgets.kopr.dev",
    ]);

    let widget = |name: &str, spec: &str| {
        format!("apiVersion: kopr.dev/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}")
    };
    // Defaults apply; int-or-string accepts both.
    server.ok_stdin(
        &["apply", "-f", "-"],
        &widget("a", "  replicas: 2\n  port: 8080\n  owner: me\n"),
    );
    server.ok_stdin(
        &["apply", "-f", "-"],
        &widget("b", "  size: large\n  port: http\n"),
    );
    assert_eq!(
        server.ok(&["get", "widget", "a", "-o", "jsonpath={.spec.size}"]),
        "medium"
    );
    let table = rows(&server.ok(&["get", "widgets"]));
    assert_eq!(table[0], ["NAME", "SIZE", "REPLICAS", "PORT", "AGE"]);
    assert_eq!(&table[1][..4], ["a", "medium", "2", "8080"]);
    assert_eq!(&table[2][..4], ["b", "large", "1", "http"]);
    // Short names and categories.
    assert!(server.ok(&["get", "wd"]).contains("medium"));
    assert!(
        server
            .ok(&["get", "kopr", "-o", "name"])
            .contains("widget.kopr.dev/a")
    );
    // Selectable fields.
    let selected = server.ok(&[
        "get",
        "widgets",
        "--field-selector",
        "spec.size=large",
        "-o",
        "name",
    ]);
    assert_eq!(selected, "widget.kopr.dev/b\n");

    // Enum, pattern, minimum, CEL and a transition rule, each rejected.
    for (spec, expected) in [
        (
            "  size: huge\n",
            "spec.size: Unsupported value: \"huge\": supported values: \"small\", \"medium\", \"large\"",
        ),
        (
            "  code: abc\n",
            "spec.code: Invalid value: \"abc\": spec.code in body should match '^[A-Z]{3}$'",
        ),
        (
            "  replicas: -1\n",
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (
            "  replicas: 1\n  minReplicas: 3\n",
            "replicas must be at least minReplicas",
        ),
    ] {
        let out = server.kubectl_stdin(&["apply", "-f", "-"], &widget("bad", spec));
        assert!(!out.status.success(), "{spec} must be rejected");
        assert!(
            stderr_of(&out).contains(expected),
            "{spec}: {}",
            stderr_of(&out)
        );
    }
    let out = server.kubectl(&[
        "patch",
        "widget",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"owner":"you"}}"#,
    ]);
    assert!(
        stderr_of(&out).contains("owner is immutable"),
        "{}",
        stderr_of(&out)
    );
    server.ok(&[
        "patch",
        "widget",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"code":"ABC"}}"#,
    ]);

    // Scale through the subresource.
    assert_eq!(
        server.ok(&["scale", "widget", "a", "--replicas=5"]),
        "widget.kopr.dev/a scaled\n"
    );
    assert_eq!(
        server.ok(&["get", "widget", "a", "-o", "jsonpath={.spec.replicas}"]),
        "5"
    );
    let scale = server.ok(&[
        "get",
        "--raw",
        "/apis/kopr.dev/v1/namespaces/default/widgets/a/scale",
    ]);
    let scale: serde_json::Value = serde_json::from_str(&scale).unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);
}

#[test]
fn two_served_versions_read_and_write_both() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.ok(&["apply", "-f", &fixture("tool-crd-two-versions.yaml")]);
    server.ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/tools.kopr.dev",
    ]);
    server.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: kopr.dev/v1beta1\nkind: Tool\nmetadata:\n  name: hammer\nspec:\n  name: old\n",
    );
    server.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: kopr.dev/v1\nkind: Tool\nmetadata:\n  name: saw\nspec:\n  name: new\n",
    );
    for (version, name) in [
        ("v1", "hammer"),
        ("v1beta1", "saw"),
        ("v1", "saw"),
        ("v1beta1", "hammer"),
    ] {
        let raw = server.ok(&[
            "get",
            "--raw",
            &format!("/apis/kopr.dev/{version}/namespaces/default/tools/{name}"),
        ]);
        let obj: serde_json::Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(obj["apiVersion"], format!("kopr.dev/{version}"));
    }
    let stored = server.ok(&[
        "get",
        "crd",
        "tools.kopr.dev",
        "-o",
        "jsonpath={.status.storedVersions}",
    ]);
    assert_eq!(stored, "[\"v1\"]");
}

/// The most common edit loop: a custom resource changed and applied again, client-side (kubectl
/// must choose a JSON merge patch, which it does when the OpenAPI document offers no strategic
/// merge patch for custom resources), then server-side (taking over the fields client-side
/// apply set), and the OpenAPI v3 document as kube's apiextensions builder writes it.
#[test]
fn changed_custom_resources_apply_again_client_and_server_side() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.ok(&["apply", "-f", &fixture("widget-crd.yaml")]);
    server.ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/widgets.kopr.dev",
    ]);
    let widget = |spec: &str| {
        format!("apiVersion: kopr.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n{spec}")
    };
    let get = |path: &str| server.ok(&["get", "widget", "w", "-o", &format!("jsonpath={path}")]);
    assert_eq!(
        server.ok_stdin(
            &["apply", "-f", "-"],
            &widget("  size: small\n  replicas: 2\n  port: 80\n")
        ),
        "widget.kopr.dev/w created\n"
    );
    assert_eq!(
        server.ok_stdin(
            &["apply", "-f", "-"],
            &widget("  size: large\n  replicas: 3\n  port: http\n")
        ),
        "widget.kopr.dev/w configured\n"
    );
    assert_eq!(
        get("{.spec.size} {.spec.replicas} {.spec.port}"),
        "large 3 http"
    );
    // A field dropped from the manifest is removed (three-way merge with last-applied).
    assert_eq!(
        server.ok_stdin(
            &["apply", "-f", "-"],
            &widget("  size: large\n  replicas: 3\n")
        ),
        "widget.kopr.dev/w configured\n"
    );
    assert_eq!(get("{.spec.port}"), "");
    // Server-side apply takes over what client-side apply set, then owns it.
    for (size, replicas) in [("medium", 4), ("small", 5)] {
        assert_eq!(
            server.ok_stdin(
                &["apply", "--server-side", "-f", "-"],
                &widget(&format!("  size: {size}\n  replicas: {replicas}\n"))
            ),
            "widget.kopr.dev/w serverside-applied\n"
        );
        assert_eq!(
            get("{.spec.size} {.spec.replicas}"),
            format!("{size} {replicas}")
        );
    }
    // Another manager still conflicts.
    let out = server.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "other",
            "-f",
            "-",
        ],
        &widget("  size: large\n  replicas: 5\n"),
    );
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("conflict with \"kubectl\""),
        "{}",
        stderr_of(&out)
    );

    // The OpenAPI v3 document of the group-version.
    let doc: serde_json::Value =
        serde_json::from_str(&server.ok(&["get", "--raw", "/openapi/v3/apis/kopr.dev/v1"]))
            .expect("JSON");
    let paths = doc["paths"].as_object().expect("paths");
    let item = "/apis/kopr.dev/v1/namespaces/{namespace}/widgets/{name}";
    let mut keys: Vec<&str> = paths.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "/apis/kopr.dev/v1/namespaces/{namespace}/widgets",
            item,
            "/apis/kopr.dev/v1/namespaces/{namespace}/widgets/{name}/scale",
            "/apis/kopr.dev/v1/namespaces/{namespace}/widgets/{name}/status",
            "/apis/kopr.dev/v1/widgets",
        ]
    );
    let content_types = |op: &serde_json::Value| -> Vec<String> {
        let mut types: Vec<String> = op["requestBody"]["content"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        types.sort();
        types
    };
    for sub in ["", "/status", "/scale"] {
        let patch = &paths[&format!("{item}{sub}")]["patch"];
        assert_eq!(
            content_types(patch),
            [
                "application/apply-patch+yaml",
                "application/json-patch+json",
                "application/merge-patch+json"
            ],
            "PATCH {sub}"
        );
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            serde_json::json!({"group": "kopr.dev", "version": "v1", "kind": "Widget"})
        );
    }
    let patch = &paths[item]["patch"];
    assert_eq!(patch["operationId"], "patchKoprDevV1NamespacedWidget");
    assert!(
        patch["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .any(|p| p["name"] == "fieldValidation"),
        "kubectl looks for fieldValidation to validate on the server"
    );
    assert_eq!(
        content_types(&paths[item]["put"]),
        ["application/json", "application/yaml"]
    );
    assert_eq!(
        paths["/apis/kopr.dev/v1/widgets"]["get"]["operationId"],
        "listKoprDevV1WidgetForAllNamespaces"
    );
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    assert_eq!(
        schemas["dev.kopr.v1.WidgetList"]["x-kubernetes-group-version-kind"],
        serde_json::json!([{"group": "kopr.dev", "version": "v1", "kind": "WidgetList"}])
    );
    // The structural schema unfolded, as apiextensions-apiserver publishes it.
    assert_eq!(
        schemas["dev.kopr.v1.Widget"]["properties"]["spec"]["properties"]["port"]["anyOf"],
        serde_json::json!([{"type": "integer"}, {"type": "string"}])
    );
    let explained = server.ok(&["explain", "widgets.spec.port"]);
    assert!(explained.contains("port"), "{explained}");
    for referenced in [
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "io.k8s.api.autoscaling.v1.Scale",
    ] {
        assert!(schemas.contains_key(referenced), "{referenced}");
    }

    // Built-in kinds keep strategic merge patch.
    let core: serde_json::Value =
        serde_json::from_str(&server.ok(&["get", "--raw", "/openapi/v3/api/v1"])).expect("JSON");
    assert_eq!(
        content_types(&core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]),
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json"
        ]
    );
}
