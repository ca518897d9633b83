//! Workload history and the DaemonSet and ReplicationController
//! controllers through kube-rs: DaemonSets running one pod per simulated
//! node, following node selectors and taints, and rolling through
//! ControllerRevisions; StatefulSet ControllerRevisions; a Deployment's
//! `rollout undo` reusing the old ReplicaSet; ReplicationControllers
//! scaling. Undo is done as kubectl does it (the revision's patch, or the
//! old ReplicaSet's template as Go writes it).

use crate::common;

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::core::v1::{Node, Pod, ReplicationController};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Waits (watching the object) until `cond` holds for it; returns it.
async fn until<K>(api: &Api<K>, name: &str, what: &str, cond: impl Fn(&Value) -> bool) -> Value
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + Debug + Send + 'static,
{
    let check = move |o: Option<&K>| {
        o.map(|o| serde_json::to_value(o).unwrap())
            .is_some_and(|v| cond(&v))
    };
    let found = tokio::time::timeout(
        Duration::from_secs(90),
        await_condition(api.clone(), name, check),
    )
    .await
    .unwrap_or_else(|_| panic!("{what}: not reached"))
    .unwrap();
    serde_json::to_value(found).unwrap()
}

fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn observed(v: &Value) -> bool {
    int(v, "/status/observedGeneration") == int(v, "/metadata/generation")
}

/// A DaemonSet rolled out on `nodes` nodes (as `kubectl rollout status` decides).
fn ds_rolled_out(nodes: i64) -> impl Fn(&Value) -> bool {
    move |d| {
        observed(d)
            && int(d, "/status/desiredNumberScheduled") == nodes
            && int(d, "/status/updatedNumberScheduled") == nodes
            && int(d, "/status/numberAvailable") == nodes
            && int(d, "/status/numberReady") == nodes
    }
}

fn daemonset(name: &str, image: &str, spec: Value) -> DaemonSet {
    let mut pod_spec = json!({"containers": [{"name": "agent", "image": image}]});
    if let (Some(p), Some(extra)) = (pod_spec.as_object_mut(), spec.as_object()) {
        p.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        }
    }))
    .unwrap()
}

async fn list<K>(api: &Api<K>, selector: &str) -> Vec<Value>
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + Debug,
{
    let l = api
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap();
    l.items
        .iter()
        .map(|i| serde_json::to_value(i).unwrap())
        .filter(|v| v.pointer("/metadata/deletionTimestamp").is_none())
        .collect()
}

fn revisions_by_number(crs: &[Value]) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = crs
        .iter()
        .map(|c| {
            (
                int(c, "/revision"),
                c["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn images(pods: &[Value]) -> BTreeSet<String> {
    pods.iter()
        .map(|p| {
            p["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn daemonsets_run_one_pod_per_node_and_roll_through_revisions() {
    let f = common::start().await;
    let dss: Api<DaemonSet> = Api::default_namespaced(f.client.clone());
    let pods: Api<Pod> = Api::default_namespaced(f.client.clone());
    let crs: Api<ControllerRevision> = Api::default_namespaced(f.client.clone());
    let pp = PostParams::default();
    dss.create(&pp, &daemonset("agent", "agent:1", json!({})))
        .await
        .unwrap();
    let ds = until(&dss, "agent", "agent runs on 3 nodes", ds_rolled_out(3)).await;
    assert_eq!(ds["status"]["currentNumberScheduled"], 3);
    assert_eq!(ds["status"]["numberMisscheduled"], 0);
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );

    let history = list(&crs, "app=agent").await;
    assert_eq!(history.len(), 1, "{history:?}");
    let first = &history[0];
    let hash = first["metadata"]["labels"]["controller-revision-hash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(first["metadata"]["name"], format!("agent-{hash}"));
    assert_eq!(first["revision"], 1);
    assert_eq!(first["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
    assert_eq!(first["data"]["spec"]["template"]["$patch"], "replace");
    assert_eq!(
        first["data"]["spec"]["template"]["spec"]["containers"][0]["image"],
        "agent:1"
    );

    let running = list(&pods, "app=agent").await;
    let nodes: BTreeSet<&str> = running
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    assert_eq!(
        nodes,
        BTreeSet::from(["kopr-node-0", "kopr-node-1", "kopr-node-2"])
    );
    for p in &running {
        let node = p["spec"]["nodeName"].as_str().unwrap();
        assert!(
            p["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("agent-")
        );
        assert_eq!(p["metadata"]["labels"]["controller-revision-hash"], hash);
        assert_eq!(p["metadata"]["labels"]["pod-template-generation"], "1");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert_eq!(
            p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
            json!({"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}
            ]}]})
        );
        let tolerations: BTreeSet<(String, String)> = p["spec"]["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["key"].as_str().unwrap().to_string(),
                    t["effect"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for (key, effect) in [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ] {
            assert!(
                tolerations.contains(&(key.to_string(), effect.to_string())),
                "{key}"
            );
        }
    }

    // A new template: a second revision, pods replaced one node at a time.
    let update = json!({"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}}});
    dss.patch("agent", &PatchParams::default(), &Patch::Strategic(update))
        .await
        .unwrap();
    let ds = until(&dss, "agent", "agent:2 rolled out", ds_rolled_out(3)).await;
    assert_eq!(ds["metadata"]["generation"], 2);
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "2"
    );
    let history = list(&crs, "app=agent").await;
    let numbered = revisions_by_number(&history);
    assert_eq!(numbered.len(), 2, "{numbered:?}");
    assert_eq!(numbered[0], (1, format!("agent-{hash}")));
    assert_eq!(numbered[1].0, 2);
    let running = list(&pods, "app=agent").await;
    assert_eq!(images(&running), BTreeSet::from(["agent:2".to_string()]));
    assert!(
        running
            .iter()
            .all(|p| p["metadata"]["labels"]["pod-template-generation"] == "2")
    );

    // `kubectl rollout undo`: revision 1's patch, which comes back as revision 3.
    let cr1 = crs.get(&format!("agent-{hash}")).await.unwrap();
    let data = serde_json::to_value(&cr1.data).unwrap();
    dss.patch("agent", &PatchParams::default(), &Patch::Strategic(data))
        .await
        .unwrap();
    until(&dss, "agent", "agent:1 rolled back", |d| {
        ds_rolled_out(3)(d) && int(d, "/metadata/generation") == 3
    })
    .await;
    let numbered = revisions_by_number(&list(&crs, "app=agent").await);
    assert_eq!(numbered.len(), 2, "{numbered:?}");
    assert_eq!(numbered[1], (3, format!("agent-{hash}")));
    let running = list(&pods, "app=agent").await;
    assert_eq!(images(&running), BTreeSet::from(["agent:1".to_string()]));
    assert!(
        running
            .iter()
            .all(|p| p["metadata"]["labels"]["controller-revision-hash"] == hash)
    );
}

#[tokio::test]
async fn daemonsets_follow_node_selectors_and_taints() {
    let f = common::start().await;
    let dss: Api<DaemonSet> = Api::default_namespaced(f.client.clone());
    let pods: Api<Pod> = Api::default_namespaced(f.client.clone());
    let nodes: Api<Node> = Api::all(f.client.clone());
    let pp = PostParams::default();
    let pinned = json!({"nodeSelector": {"kubernetes.io/hostname": "kopr-node-1"}});
    dss.create(&pp, &daemonset("one", "one:1", pinned))
        .await
        .unwrap();
    let tolerant = json!({"tolerations": [{"key": "maintenance", "operator": "Exists"}]});
    dss.create(&pp, &daemonset("tolerant", "t:1", tolerant))
        .await
        .unwrap();
    dss.create(&pp, &daemonset("plain", "p:1", json!({})))
        .await
        .unwrap();
    until(&dss, "one", "one runs on one node", ds_rolled_out(1)).await;
    let one = list(&pods, "app=one").await;
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["spec"]["nodeName"], "kopr-node-1");
    until(&dss, "plain", "plain runs everywhere", ds_rolled_out(3)).await;
    until(
        &dss,
        "tolerant",
        "tolerant runs everywhere",
        ds_rolled_out(3),
    )
    .await;

    // A NoExecute taint evicts the daemon pods that do not tolerate it.
    let taint = json!({"spec": {"taints": [{"key": "maintenance", "effect": "NoExecute"}]}});
    nodes
        .patch("kopr-node-2", &PatchParams::default(), &Patch::Merge(taint))
        .await
        .unwrap();
    let plain = until(&dss, "plain", "plain leaves the tainted node", |d| {
        int(d, "/status/desiredNumberScheduled") == 2
            && int(d, "/status/currentNumberScheduled") == 2
            && int(d, "/status/numberMisscheduled") == 0
    })
    .await;
    assert_eq!(plain["status"]["numberAvailable"], 2);
    let tolerant = until(&dss, "tolerant", "tolerant stays", ds_rolled_out(3)).await;
    assert_eq!(tolerant["status"]["numberMisscheduled"], 0);

    // A NoSchedule taint keeps running pods (misscheduled) but places no new ones.
    let taint = json!({"spec": {"taints": [{"key": "maintenance", "effect": "NoSchedule"}]}});
    nodes
        .patch("kopr-node-1", &PatchParams::default(), &Patch::Merge(taint))
        .await
        .unwrap();
    let one = until(&dss, "one", "one is misscheduled", |d| {
        int(d, "/status/desiredNumberScheduled") == 0 && int(d, "/status/numberMisscheduled") == 1
    })
    .await;
    assert_eq!(one["status"]["currentNumberScheduled"], 0);
    assert_eq!(list(&pods, "app=one").await.len(), 1);
}

#[tokio::test]
async fn statefulsets_keep_controller_revisions() {
    let f = common::start().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(f.client.clone());
    let pods: Api<Pod> = Api::default_namespaced(f.client.clone());
    let crs: Api<ControllerRevision> = Api::default_namespaced(f.client.clone());
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db", "annotations": {"kubernetes.io/change-cause": "first"}},
        "spec": {
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "db:1"}]}
            }
        }
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    let settled = |image_rev: Option<String>| {
        move |s: &Value| {
            observed(s)
                && int(s, "/status/readyReplicas") == 2
                && int(s, "/status/updatedReplicas") == 2
                && s["status"]["currentRevision"] == s["status"]["updateRevision"]
                && image_rev
                    .as_ref()
                    .is_none_or(|r| s["status"]["updateRevision"] == *r)
        }
    };
    let s = until(&sets, "db", "db ready", settled(None)).await;
    let rev1 = s["status"]["updateRevision"].as_str().unwrap().to_string();
    assert!(rev1.starts_with("db-"), "{rev1}");
    assert_eq!(s["status"]["collisionCount"], 0);
    let history = list(&crs, "app=db").await;
    assert_eq!(revisions_by_number(&history), [(1, rev1.clone())]);
    assert_eq!(
        history[0]["metadata"]["annotations"]["kubernetes.io/change-cause"],
        "first"
    );
    assert_eq!(
        history[0]["metadata"]["ownerReferences"][0]["kind"],
        "StatefulSet"
    );
    for p in list(&pods, "app=db").await {
        assert_eq!(p["metadata"]["labels"]["controller-revision-hash"], rev1);
    }

    let update =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "db", "image": "db:2"}]}}}});
    sets.patch("db", &PatchParams::default(), &Patch::Strategic(update))
        .await
        .unwrap();
    let s = until(&sets, "db", "db:2 rolled out", |s| {
        settled(None)(s) && s["status"]["updateRevision"] != rev1.as_str()
    })
    .await;
    let rev2 = s["status"]["updateRevision"].as_str().unwrap().to_string();
    assert_eq!(
        revisions_by_number(&list(&crs, "app=db").await),
        [(1, rev1.clone()), (2, rev2.clone())]
    );
    assert_eq!(
        images(&list(&pods, "app=db").await),
        BTreeSet::from(["db:2".to_string()])
    );

    // `kubectl rollout undo`: revision 1's patch; revision 1 becomes 3.
    let data = serde_json::to_value(crs.get(&rev1).await.unwrap().data).unwrap();
    sets.patch("db", &PatchParams::default(), &Patch::Strategic(data))
        .await
        .unwrap();
    until(&sets, "db", "db:1 rolled back", settled(Some(rev1.clone()))).await;
    assert_eq!(
        revisions_by_number(&list(&crs, "app=db").await),
        [(2, rev2), (3, rev1.clone())]
    );
    let running = list(&pods, "app=db").await;
    assert_eq!(images(&running), BTreeSet::from(["db:1".to_string()]));
}

#[tokio::test]
async fn deployment_undo_reuses_the_old_replicaset() {
    let f = common::start().await;
    let deps: Api<Deployment> = Api::default_namespaced(f.client.clone());
    let rss: Api<ReplicaSet> = Api::default_namespaced(f.client.clone());
    let dep: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "web:1"}]}
            }
        }
    }))
    .unwrap();
    deps.create(&PostParams::default(), &dep).await.unwrap();
    let rolled_out = |generation: i64| {
        move |d: &Value| {
            observed(d)
                && int(d, "/metadata/generation") == generation
                && int(d, "/status/updatedReplicas") == 2
                && int(d, "/status/replicas") == 2
                && int(d, "/status/availableReplicas") == 2
        }
    };
    until(&deps, "web", "web:1 rolled out", rolled_out(1)).await;
    let update = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:2"}]}}}});
    deps.patch("web", &PatchParams::default(), &Patch::Strategic(update))
        .await
        .unwrap();
    until(&deps, "web", "web:2 rolled out", rolled_out(2)).await;
    let sets = list(&rss, "app=web").await;
    assert_eq!(sets.len(), 2);
    let first = sets
        .iter()
        .find(|r| r["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1")
        .unwrap()
        .clone();

    // What `kubectl rollout undo` sends: the old ReplicaSet's template as
    // Go encodes it (with `resources: {}`), without the hash label.
    let mut template = first["spec"]["template"].clone();
    template["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("pod-template-hash");
    for c in template["spec"]["containers"].as_array_mut().unwrap() {
        c["resources"] = json!({});
    }
    let patch = json!([{"op": "replace", "path": "/spec/template", "value": template}]);
    let (code, _, body) = common::raw(
        &f.client,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web",
        Some("application/json-patch+json"),
        serde_json::to_vec(&patch).unwrap(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let d = until(&deps, "web", "web:1 rolled back", rolled_out(3)).await;
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    let sets = list(&rss, "app=web").await;
    assert_eq!(sets.len(), 2, "no third ReplicaSet");
    let reused = sets
        .iter()
        .find(|r| r["metadata"]["name"] == first["metadata"]["name"])
        .unwrap();
    assert_eq!(
        reused["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    assert_eq!(reused["spec"]["replicas"], 2);
}

#[tokio::test]
async fn replication_controllers_scale_up_and_down() {
    let f = common::start().await;
    let rcs: Api<ReplicationController> = Api::default_namespaced(f.client.clone());
    let pods: Api<Pod> = Api::default_namespaced(f.client.clone());
    let rc: ReplicationController = serde_json::from_value(json!({
        "metadata": {"name": "legacy"},
        "spec": {
            "replicas": 3,
            "selector": {"app": "legacy"},
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "c", "image": "legacy:1"}]}
            }
        }
    }))
    .unwrap();
    rcs.create(&PostParams::default(), &rc).await.unwrap();
    let at = |n: i64| {
        move |r: &Value| {
            observed(r)
                && int(r, "/spec/replicas") == n
                && int(r, "/status/replicas") == n
                && int(r, "/status/readyReplicas") == n
                && int(r, "/status/availableReplicas") == n
                && int(r, "/status/fullyLabeledReplicas") == n
        }
    };
    until(&rcs, "legacy", "3 replicas", at(3)).await;
    let running = list(&pods, "app=legacy").await;
    assert_eq!(running.len(), 3);
    for p in &running {
        let owner = &p["metadata"]["ownerReferences"][0];
        assert_eq!(owner["apiVersion"], "v1");
        assert_eq!(owner["kind"], "ReplicationController");
        assert_eq!(owner["controller"], true);
        assert!(
            p["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("legacy-")
        );
    }

    let scale = |n: i64| Patch::Merge(json!({"spec": {"replicas": n}}));
    rcs.patch_scale("legacy", &PatchParams::default(), &scale(1))
        .await
        .unwrap();
    until(&rcs, "legacy", "scaled down to 1", at(1)).await;
    assert_eq!(list(&pods, "app=legacy").await.len(), 1);
    rcs.patch_scale("legacy", &PatchParams::default(), &scale(2))
        .await
        .unwrap();
    until(&rcs, "legacy", "scaled up to 2", at(2)).await;
    assert_eq!(list(&pods, "app=legacy").await.len(), 2);
}
