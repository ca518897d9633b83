//! HorizontalPodAutoscalers through real kubectl against a `kopr apiserver`
//! child process: `kubectl autoscale` on a Deployment below its minimum,
//! the autoscaler scaling it up, and `kubectl get hpa` / `describe hpa`
//! showing what kube shows on a cluster without a metrics server.

use crate::support::{Server, eventually, rows};

const NO_METRICS: &str = "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";

#[test]
fn kubectl_autoscale_scales_to_the_minimum_and_describes_missing_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    assert_eq!(
        server.ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=1"
        ]),
        "deployment.apps/web created\n"
    );
    assert_eq!(
        server.ok(&[
            "autoscale",
            "deployment",
            "web",
            "--min=2",
            "--max=5",
            "--cpu-percent=50"
        ]),
        "horizontalpodautoscaler.autoscaling/web autoscaled\n"
    );
    eventually(
        &server,
        &[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        30,
        |t| t == "2",
    );
    let table = eventually(&server, &["get", "hpa", "web"], 30, |t| {
        rows(t)
            .get(1)
            .is_some_and(|r| r.get(6) == Some(&"2".to_string()))
    });
    let rows = rows(&table);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    // TARGETS is "cpu: <unknown>/50%": two cells once split on spaces.
    assert_eq!(
        rows[1][..7],
        [
            "web",
            "Deployment/web",
            "cpu:",
            "<unknown>/50%",
            "2",
            "5",
            "2"
        ]
    );

    let described = eventually(&server, &["describe", "hpa", "web"], 30, |t| {
        t.contains("FailedComputeMetricsReplicas") && t.contains("FailedGetResourceMetric")
    });
    let has_line = |words: &[&str]| {
        described
            .lines()
            .any(|l| words.iter().all(|w| l.contains(w)))
    };
    assert!(has_line(&["Reference:", "Deployment/web"]), "{described}");
    assert!(
        has_line(&["Min replicas:", "2"]) && has_line(&["Max replicas:", "5"]),
        "{described}"
    );
    assert!(
        has_line(&["Deployment pods:", "2 current / 2 desired"]),
        "{described}"
    );
    assert!(has_line(&["Conditions:"]), "{described}");
    assert!(
        has_line(&[
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale"
        ]),
        "{described}"
    );
    assert!(
        has_line(&[
            "ScalingActive",
            "False",
            "FailedGetResourceMetric",
            &format!("the HPA was unable to compute the replica count: {NO_METRICS}")
        ]),
        "{described}"
    );
    assert!(
        has_line(&[
            "Normal",
            "SuccessfulRescale",
            "horizontal-pod-autoscaler",
            "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
        ]),
        "{described}"
    );
    assert!(
        has_line(&[
            "Warning",
            "FailedGetResourceMetric",
            "horizontal-pod-autoscaler",
            NO_METRICS
        ]),
        "{described}"
    );
    assert!(
        has_line(&[
            "Warning",
            "FailedComputeMetricsReplicas",
            "horizontal-pod-autoscaler",
            "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value:"
        ]),
        "{described}"
    );
}
