//! Service endpoints through real kubectl against a `kopr apiserver` child
//! process: `kubectl get endpoints` and `kubectl get endpointslices` show the
//! addresses of a Deployment's pods behind a Service (its named target port
//! resolved), and the `kubernetes` Service's endpoint is the server itself.

use crate::support::{Server, eventually, rows};

const WEB: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - {name: http, containerPort: 8080}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
";

#[test]
fn kubectl_shows_the_addresses_of_a_services_pods() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    let applied = server.ok_stdin(&["apply", "-f", "-"], WEB);
    assert_eq!(
        applied,
        "deployment.apps/web created\nservice/web created\n"
    );
    let ips = eventually(
        &server,
        &[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].status.podIP}",
        ],
        60,
        |t| t.split_whitespace().count() == 2,
    );
    let mut ips: Vec<&str> = ips.split_whitespace().collect();
    ips.sort();

    let table = eventually(&server, &["get", "endpoints", "web"], 60, |t| {
        rows(t)
            .get(1)
            .is_some_and(|r| ips.iter().all(|ip| r[1].contains(&format!("{ip}:8080"))))
    });
    let table = rows(&table);
    assert_eq!(table[0], ["NAME", "ENDPOINTS", "AGE"]);
    assert_eq!(table[1][0], "web");
    let mut listed: Vec<&str> = table[1][1].split(',').collect();
    listed.sort();
    let wanted: Vec<String> = ips.iter().map(|ip| format!("{ip}:8080")).collect();
    assert_eq!(listed, wanted);

    let slices = eventually(
        &server,
        &[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
        ],
        60,
        |t| {
            rows(t)
                .get(1)
                .is_some_and(|r| ips.iter().all(|ip| r[3].contains(ip)))
        },
    );
    let table = rows(&slices);
    assert_eq!(
        table[0],
        ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    );
    assert_eq!(table.len(), 2, "one slice:\n{slices}");
    assert!(table[1][0].starts_with("web-"), "{slices}");
    assert_eq!(table[1][1], "IPv4");
    assert_eq!(table[1][2], "8080");
    let mut listed: Vec<&str> = table[1][3].split(',').collect();
    listed.sort();
    assert_eq!(listed, ips);

    // The kubernetes Service: the server's own address.
    let port = server.url.rsplit(':').next().expect("port");
    let own = server.ok(&["get", "endpoints", "kubernetes", "--no-headers"]);
    assert_eq!(rows(&own)[0][1], format!("127.0.0.1:{port}"), "{own}");
    let own = server.ok(&["get", "endpointslice", "kubernetes", "--no-headers"]);
    let row = &rows(&own)[0];
    assert_eq!(row[..4], ["kubernetes", "IPv4", port, "127.0.0.1"], "{own}");
}
