//! Workloads on the embedded cluster through kube-rs: Deployments,
//! ReplicaSets, StatefulSets and Jobs run by the in-process controllers, pods
//! scheduled onto the simulated nodes and run by the simulated kubelet.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use serde_json::json;

/// Polls until `check` yields a value, failing after `secs` seconds.
async fn wait_for<T, F, Fut>(what: &str, secs: u64, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("{what}: not reached in {secs} s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]}
            }
        }
    }))
    .unwrap()
}

fn pod(name: &str, image: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": image}]}
    }))
    .unwrap()
}

fn condition<'a>(conds: &'a [serde_json::Value], ty: &str) -> Option<&'a serde_json::Value> {
    conds.iter().find(|c| c["type"] == ty)
}

fn json_of<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

/// Waits until a Deployment's rollout is complete, as `kubectl rollout status` decides.
async fn rolled_out(deps: &Api<Deployment>, name: &str, replicas: i64) -> serde_json::Value {
    wait_for(&format!("deployment {name} rolled out"), 90, || async {
        let d = json_of(&deps.get(name).await.unwrap());
        let s = &d["status"];
        let done = s["observedGeneration"] == d["metadata"]["generation"]
            && s["updatedReplicas"].as_i64() == Some(replicas)
            && s["replicas"].as_i64() == Some(replicas)
            && s["availableReplicas"].as_i64() == Some(replicas);
        done.then_some(d)
    })
    .await
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[tokio::test]
async fn nodes_are_created_ready() {
    let f = common::start().await;
    let nodes: Api<Node> = Api::all(f.client.clone());
    let list = wait_for("three nodes", 30, || async {
        let l = nodes.list(&ListParams::default()).await.unwrap();
        let posted = l
            .items
            .iter()
            .all(|n| n.status.as_ref().is_some_and(|s| s.conditions.is_some()));
        (l.items.len() == 3 && posted).then_some(l)
    })
    .await;
    let names: Vec<String> = list
        .items
        .iter()
        .map(|n| n.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["kopr-node-0", "kopr-node-1", "kopr-node-2"]);
    for n in &list.items {
        let s = json_of(n)["status"].clone();
        assert_eq!(s["allocatable"]["cpu"], "4");
        assert_eq!(s["capacity"]["memory"], "16Gi");
        assert_eq!(s["capacity"]["pods"], "110");
        let ready = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(ready["status"], "True");
        assert_eq!(ready["reason"], "KubeletReady");
        assert_eq!(ready["message"], "kubelet is posting ready status");
        assert_eq!(s["nodeInfo"]["operatingSystem"], "linux");
        assert!(
            s["addresses"][0]["address"]
                .as_str()
                .unwrap()
                .starts_with("172.18.0.")
        );
    }
}

#[tokio::test]
async fn deployment_becomes_available_with_kube_status() {
    let f = common::start().await;
    let deps: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let rss: Api<ReplicaSet> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    deps.create(&PostParams::default(), &deployment("web", 3, "nginx:1.27"))
        .await
        .unwrap();
    let d = rolled_out(&deps, "web", 3).await;
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    let s = &d["status"];
    assert_eq!(s["readyReplicas"], 3);
    assert!(s.get("unavailableReplicas").is_none(), "{s}");

    // One ReplicaSet, <deployment>-<pod-template-hash>, owned by the Deployment.
    let rs_list = rss
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(rs_list.items.len(), 1);
    let rs = json_of(&rs_list.items[0]);
    let hash = rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(rs["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(
        rs["spec"]["selector"]["matchLabels"]["pod-template-hash"],
        hash
    );
    let owner = &rs["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Deployment");
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"],
        "3"
    );
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"],
        "4"
    );
    let rs_status = wait_for("replica set status", 30, || async {
        let rs = json_of(&rss.get(&format!("web-{hash}")).await.unwrap());
        (rs["status"]["availableReplicas"] == 3).then(|| rs["status"].clone())
    })
    .await;
    assert_eq!(rs_status["replicas"], 3);
    assert_eq!(rs_status["fullyLabeledReplicas"], 3);
    assert_eq!(rs_status["readyReplicas"], 3);
    assert_eq!(rs_status["observedGeneration"], 1);

    // Conditions, with kube's reasons and messages.
    let d = wait_for("conditions settle", 30, || async {
        let d = json_of(&deps.get("web").await.unwrap());
        let conds = d["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let progressing = condition(&conds, "Progressing")?;
        (progressing["reason"] == "NewReplicaSetAvailable").then_some(d)
    })
    .await;
    let conds = d["status"]["conditions"].as_array().unwrap();
    let available = condition(conds, "Available").unwrap();
    assert_eq!(available["status"], "True");
    assert_eq!(available["reason"], "MinimumReplicasAvailable");
    assert_eq!(available["message"], "Deployment has minimum availability.");
    let progressing = condition(conds, "Progressing").unwrap();
    assert_eq!(progressing["status"], "True");
    assert_eq!(
        progressing["message"],
        format!("ReplicaSet \"web-{hash}\" has successfully progressed.")
    );

    // Pods: <rs>-<5 random>, scheduled, running, with unique pod IPs.
    let list = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 3);
    let mut ips = HashSet::new();
    for p in &list.items {
        let p = json_of(p);
        let name = p["metadata"]["name"].as_str().unwrap();
        let suffix = name
            .strip_prefix(&format!("web-{hash}-"))
            .expect("pod named after its rs");
        assert_eq!(suffix.len(), 5, "{name}");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
        assert_eq!(
            p["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        assert!(
            p["spec"]["nodeName"]
                .as_str()
                .unwrap()
                .starts_with("kopr-node-")
        );
        let st = &p["status"];
        assert_eq!(st["phase"], "Running");
        let ip = st["podIP"].as_str().unwrap().to_string();
        assert!(ip.starts_with("10.244."), "{ip}");
        assert_eq!(st["podIPs"][0]["ip"], ip);
        assert!(ips.insert(ip));
        assert!(st["hostIP"].as_str().unwrap().starts_with("172.18.0."));
        assert!(st["startTime"].is_string());
        assert_eq!(st["qosClass"], "BestEffort");
        let types: Vec<&str> = st["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "True")
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        for t in [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ] {
            assert!(types.contains(&t), "{t} in {types:?}");
        }
        let cs = &st["containerStatuses"][0];
        assert_eq!(cs["ready"], true);
        assert_eq!(cs["started"], true);
        assert_eq!(cs["restartCount"], 0);
        assert!(cs["state"]["running"]["startedAt"].is_string());
        assert_eq!(cs["image"], "docker.io/library/nginx:1.27");
        assert!(
            cs["imageID"]
                .as_str()
                .unwrap()
                .starts_with("docker.io/library/nginx@sha256:")
        );
        assert!(
            cs["containerID"]
                .as_str()
                .unwrap()
                .starts_with("containerd://")
        );
    }

    // Events of the scheduler and the kubelet.
    let events: Api<Event> = Api::namespaced(f.client.clone(), "default");
    let first = list.items[0].metadata.name.clone().unwrap();
    let reasons = wait_for("pod events", 30, || async {
        let evs = events.list(&ListParams::default()).await.unwrap();
        let reasons: HashSet<String> = evs
            .items
            .iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(first.as_str()))
            .filter_map(|e| e.reason.clone())
            .collect();
        (reasons.contains("Started") && reasons.contains("Scheduled")).then_some(reasons)
    })
    .await;
    assert!(reasons.contains("Created"), "{reasons:?}");
    assert!(reasons.contains("Pulled"), "{reasons:?}");
    let evs = events.list(&ListParams::default()).await.unwrap();
    let scaled = format!("Scaled up replica set web-{hash} from 0 to 3");
    assert!(
        evs.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("ScalingReplicaSet")
                && e.message.as_deref() == Some(scaled.as_str()))
    );
}

#[tokio::test]
async fn deployments_scale_up_and_down() {
    let f = common::start().await;
    let deps: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    deps.create(&PostParams::default(), &deployment("scale", 2, "nginx"))
        .await
        .unwrap();
    rolled_out(&deps, "scale", 2).await;
    deps.patch_scale(
        "scale",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await
    .unwrap();
    rolled_out(&deps, "scale", 5).await;
    deps.patch(
        "scale",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    rolled_out(&deps, "scale", 1).await;
    wait_for("extra pods gone", 60, || async {
        let l = pods
            .list(&ListParams::default().labels("app=scale"))
            .await
            .unwrap();
        (l.items.len() == 1).then_some(())
    })
    .await;
}

#[tokio::test]
async fn rolling_update_keeps_minimum_availability() {
    let f = common::start().await;
    let deps: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let rss: Api<ReplicaSet> = Api::namespaced(f.client.clone(), "default");
    let mut d = deployment("roll", 4, "nginx:1.26");
    d.spec.strategy = Some(
        serde_json::from_value(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}),
        )
        .unwrap(),
    );
    deps.create(&PostParams::default(), &d).await.unwrap();
    rolled_out(&deps, "roll", 4).await;

    // Watch pods from now on: at every change, count the available ones.
    let list = pods
        .list(&ListParams::default().labels("app=roll"))
        .await
        .unwrap();
    let rv = list.metadata.resource_version.clone().unwrap();
    let mut available: HashMap<String, bool> = list
        .items
        .iter()
        .map(|p| (p.metadata.name.clone().unwrap(), is_ready(p)))
        .collect();
    assert_eq!(available.values().filter(|a| **a).count(), 4);
    let mut stream = pods
        .watch(&WatchParams::default().labels("app=roll"), &rv)
        .await
        .unwrap()
        .boxed();
    deps.patch(
        "roll",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}})),
    )
    .await
    .unwrap();
    let mut min_available = usize::MAX;
    let mut new_images_ready = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while new_images_ready < 4 || available.len() > 4 {
        let ev = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the rollout finishes in time")
            .expect("stream open")
            .expect("event decodes");
        match ev {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                let ok = is_ready(&p) && p.metadata.deletion_timestamp.is_none();
                available.insert(p.metadata.name.clone().unwrap(), ok);
            }
            WatchEvent::Deleted(p) => {
                available.remove(&p.metadata.name.clone().unwrap());
            }
            _ => continue,
        }
        min_available = min_available.min(available.values().filter(|a| **a).count());
        new_images_ready = pods
            .list(&ListParams::default().labels("app=roll"))
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| is_ready(p) && p.metadata.deletion_timestamp.is_none())
            .filter(|p| {
                p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("nginx:1.27")
            })
            .count();
    }
    assert!(
        min_available >= 3,
        "available pods dropped to {min_available} (replicas 4, maxUnavailable 1)"
    );
    let d = rolled_out(&deps, "roll", 4).await;
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    let all = rss
        .list(&ListParams::default().labels("app=roll"))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 2);
    let revisions: BTreeMap<String, i32> = all
        .items
        .iter()
        .map(|r| {
            (
                r.metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision"]
                    .clone(),
                r.spec.replicas.unwrap(),
            )
        })
        .collect();
    assert_eq!(
        revisions,
        BTreeMap::from([("1".to_string(), 0), ("2".to_string(), 4)])
    );
}

#[tokio::test]
async fn recreate_stops_old_pods_before_starting_new_ones() {
    let f = common::start().await;
    let deps: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let mut d = deployment("rec", 2, "nginx:1.26");
    d.spec.strategy = Some(serde_json::from_value(json!({"type": "Recreate"})).unwrap());
    deps.create(&PostParams::default(), &d).await.unwrap();
    rolled_out(&deps, "rec", 2).await;
    let list = pods
        .list(&ListParams::default().labels("app=rec"))
        .await
        .unwrap();
    let rv = list.metadata.resource_version.clone().unwrap();
    let mut live: HashMap<String, String> = list
        .items
        .iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap(),
                p.spec.as_ref().unwrap().containers[0]
                    .image
                    .clone()
                    .unwrap(),
            )
        })
        .collect();
    let mut stream = pods
        .watch(&WatchParams::default().labels("app=rec"), &rv)
        .await
        .unwrap()
        .boxed();
    deps.patch(
        "rec",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}})),
    )
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let ev = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the rollout finishes in time")
            .expect("stream open")
            .expect("event decodes");
        match ev {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                let image = p.spec.as_ref().unwrap().containers[0]
                    .image
                    .clone()
                    .unwrap();
                live.insert(p.metadata.name.clone().unwrap(), image);
            }
            WatchEvent::Deleted(p) => {
                live.remove(&p.metadata.name.clone().unwrap());
            }
            _ => continue,
        }
        let images: HashSet<&String> = live.values().collect();
        assert!(images.len() <= 1, "old and new pods together: {live:?}");
        if live.len() == 2 && images.contains(&"nginx:1.27".to_string()) {
            break;
        }
    }
    rolled_out(&deps, "rec", 2).await;
}

#[tokio::test]
async fn statefulset_pods_start_in_order_and_scale_down_from_the_top() {
    let f = common::start().await;
    let sets: Api<StatefulSet> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let rv = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = pods
        .watch(&WatchParams::default().labels("app=db"), &rv)
        .await
        .unwrap()
        .boxed();
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db-headless",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "postgres:16"}]}}
        }
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    // Each pod is created only after the previous one is Running and Ready.
    let mut ready: HashSet<String> = HashSet::new();
    let mut created = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while ready.len() < 3 {
        let ev = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match ev {
            WatchEvent::Added(p) => {
                let name = p.metadata.name.clone().unwrap();
                let ordinal: usize = name.trim_start_matches("db-").parse().unwrap();
                for before in 0..ordinal {
                    assert!(
                        ready.contains(&format!("db-{before}")),
                        "{name} created before db-{before} was ready"
                    );
                }
                created.push(name);
            }
            WatchEvent::Modified(p)
                if is_ready(&p)
                    && p.status.as_ref().unwrap().phase.as_deref() == Some("Running") =>
            {
                ready.insert(p.metadata.name.clone().unwrap());
            }
            _ => {}
        }
    }
    assert_eq!(created, ["db-0", "db-1", "db-2"]);
    let p = json_of(&pods.get("db-1").await.unwrap());
    assert_eq!(p["spec"]["hostname"], "db-1");
    assert_eq!(p["spec"]["subdomain"], "db-headless");
    assert_eq!(
        p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
        "db-1"
    );
    assert_eq!(p["metadata"]["labels"]["apps.kubernetes.io/pod-index"], "1");
    assert!(
        p["metadata"]["labels"]["controller-revision-hash"]
            .as_str()
            .unwrap()
            .starts_with("db-")
    );
    let s = wait_for("statefulset status", 30, || async {
        let s = json_of(&sets.get("db").await.unwrap())["status"].clone();
        (s["readyReplicas"] == 3 && s["availableReplicas"] == 3 && s["currentReplicas"] == 3)
            .then_some(s)
    })
    .await;
    assert_eq!(s["replicas"], 3);
    assert_eq!(s["updatedReplicas"], 3);
    assert_eq!(s["observedGeneration"], 1);
    assert_eq!(s["currentRevision"], s["updateRevision"]);

    // Scale down: the highest ordinal goes first.
    sets.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    let mut deleted = Vec::new();
    while deleted.len() < 2 {
        let ev = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let WatchEvent::Deleted(p) = ev {
            deleted.push(p.metadata.name.clone().unwrap());
        }
    }
    assert_eq!(deleted, ["db-2", "db-1"]);
}

fn job(name: &str, image: &str, completions: i32, parallelism: i32, backoff_limit: i32) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimit": backoff_limit,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": image}]}}
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn jobs_complete_or_hit_their_backoff_limit() {
    let f = common::start().await;
    let jobs: Api<Job> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    jobs.create(&PostParams::default(), &job("work", "busybox", 3, 2, 6))
        .await
        .unwrap();
    jobs.create(
        &PostParams::default(),
        &job("broken", "busybox:fail", 1, 1, 0),
    )
    .await
    .unwrap();
    let mut indexed = job("indexed", "busybox", 2, 2, 6);
    indexed.spec.as_mut().unwrap().completion_mode = Some("Indexed".into());
    jobs.create(&PostParams::default(), &indexed).await.unwrap();
    let done = wait_for("job complete", 90, || async {
        let j = json_of(&jobs.get("work").await.unwrap());
        let conds = j["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        condition(&conds, "Complete").is_some().then_some(j)
    })
    .await;
    let s = &done["status"];
    assert_eq!(s["succeeded"], 3);
    assert!(s.get("active").is_none(), "{s}");
    assert!(s["startTime"].is_string() && s["completionTime"].is_string());
    let conds = s["conditions"].as_array().unwrap();
    let types: Vec<&str> = conds.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    for c in conds {
        assert_eq!(c["reason"], "CompletionsReached");
        assert_eq!(c["message"], "Reached expected number of succeeded pods");
    }
    let list = pods
        .list(&ListParams::default().labels("job-name=work"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 3);
    for p in &list.items {
        assert_eq!(
            p.status.as_ref().unwrap().phase.as_deref(),
            Some("Succeeded")
        );
        assert!(p.metadata.name.as_deref().unwrap().starts_with("work-"));
        assert!(
            p.metadata.finalizers.clone().unwrap_or_default().is_empty(),
            "tracking finalizer removed once counted"
        );
    }

    let failed = wait_for("job failed", 90, || async {
        let j = json_of(&jobs.get("broken").await.unwrap());
        let conds = j["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        condition(&conds, "Failed").is_some().then_some(j)
    })
    .await;
    let conds = failed["status"]["conditions"].as_array().unwrap();
    let types: Vec<&str> = conds.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["FailureTarget", "Failed"]);
    for c in conds {
        assert_eq!(c["reason"], "BackoffLimitExceeded");
        assert_eq!(c["message"], "Job has reached the specified backoff limit");
    }
    assert_eq!(failed["status"]["failed"], 1);
    let indexed = wait_for("indexed job complete", 90, || async {
        let j = json_of(&jobs.get("indexed").await.unwrap());
        let conds = j["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        condition(&conds, "Complete").is_some().then_some(j)
    })
    .await;
    assert_eq!(indexed["status"]["completedIndexes"], "0-1");
    let mut hostnames: Vec<String> = pods
        .list(&ListParams::default().labels("job-name=indexed"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| p.spec.as_ref().unwrap().hostname.clone().unwrap())
        .collect();
    hostnames.sort();
    assert_eq!(hostnames, ["indexed-0", "indexed-1"]);
    let list = pods
        .list(&ListParams::default().labels("job-name=broken"))
        .await
        .unwrap();
    let cs = json_of(&list.items[0])["status"]["containerStatuses"][0].clone();
    assert_eq!(cs["state"]["terminated"]["exitCode"], 1);
    assert_eq!(cs["state"]["terminated"]["reason"], "Error");
}

#[tokio::test]
async fn missing_images_back_off() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    pods.create(&PostParams::default(), &pod("nopull", "nginx:missing"))
        .await
        .unwrap();
    let waiting = |reason: &'static str| {
        let pods = pods.clone();
        async move {
            wait_for(reason, 60, || async {
                let p = json_of(&pods.get("nopull").await.unwrap());
                let w = p["status"]["containerStatuses"][0]["state"]["waiting"].clone();
                (w["reason"] == reason).then_some(w)
            })
            .await
        }
    };
    let err = waiting("ErrImagePull").await;
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("docker.io/library/nginx:missing: not found"),
        "{err}"
    );
    let backoff = waiting("ImagePullBackOff").await;
    assert_eq!(
        backoff["message"],
        "Back-off pulling image \"nginx:missing\""
    );
    let p = pods.get("nopull").await.unwrap();
    assert_eq!(p.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
    let logs = pods
        .logs("nopull", &LogParams::default())
        .await
        .unwrap_err();
    let status = common::status_of(logs);
    assert_eq!(status.code, 400);
    assert_eq!(
        status.message,
        "container \"c\" in pod \"nopull\" is waiting to start: trying and failing to pull image"
    );
}

#[tokio::test]
async fn crashing_containers_loop_with_backoff() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("crasher", "busybox:crash"))
        .await
        .unwrap();
    let uid = created.metadata.uid.unwrap();
    let cs = wait_for("crash loop", 60, || async {
        let p = json_of(&pods.get("crasher").await.unwrap());
        let cs = p["status"]["containerStatuses"][0].clone();
        (cs["state"]["waiting"]["reason"] == "CrashLoopBackOff").then_some(cs)
    })
    .await;
    assert_eq!(
        cs["state"]["waiting"]["message"],
        format!("back-off 10s restarting failed container=c pod=crasher_default({uid})")
    );
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(cs["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(cs["ready"], false);
    let first = cs["restartCount"].as_i64().unwrap();
    assert!(first >= 1);
    wait_for("restart count rises", 60, || async {
        let p = json_of(&pods.get("crasher").await.unwrap());
        (p["status"]["containerStatuses"][0]["restartCount"]
            .as_i64()
            .unwrap()
            > first)
            .then_some(())
    })
    .await;
    // The log of the running instance, and of the one that crashed before it.
    let logs = pods.logs("crasher", &LogParams::default()).await.unwrap();
    assert!(
        logs.starts_with("starting container c from image busybox:crash\n"),
        "{logs}"
    );
    let previous = pods
        .logs(
            "crasher",
            &LogParams {
                previous: true,
                ..LogParams::default()
            },
        )
        .await
        .unwrap();
    assert!(
        previous.contains("container c failed: simulated error (image tag :crash)"),
        "{previous}"
    );
    assert!(
        previous.ends_with("container c exited with code 1\n"),
        "{previous}"
    );
}

#[tokio::test]
async fn graceful_deletion_honours_the_grace_period() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let stubborn: Pod = serde_json::from_value(json!({
        "metadata": {"name": "stubborn"},
        "spec": {
            "terminationGracePeriodSeconds": 3,
            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &stubborn)
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("polite", "nginx"))
        .await
        .unwrap();
    for name in ["stubborn", "polite"] {
        wait_for("pod ready", 60, || async {
            is_ready(&pods.get(name).await.unwrap()).then_some(())
        })
        .await;
    }
    // nginx stops on SIGTERM: gone long before its 30 s grace period.
    let started = tokio::time::Instant::now();
    pods.delete("polite", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("polite pod gone", 20, || async {
        pods.get_opt("polite")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(20));
    // `sleep` ignores SIGTERM: killed when the grace period ends.
    let started = tokio::time::Instant::now();
    pods.delete("stubborn", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let terminating = pods.get("stubborn").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(3));
    wait_for("stubborn pod gone", 30, || async {
        pods.get_opt("stubborn")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(started.elapsed() >= Duration::from_secs(3));
}

#[tokio::test]
async fn oversized_pods_are_unschedulable() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let big: Pod = serde_json::from_value(json!({
        "metadata": {"name": "big"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100"}}}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &big).await.unwrap();
    let cond = wait_for("unschedulable", 30, || async {
        let p = json_of(&pods.get("big").await.unwrap());
        let conds = p["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        condition(&conds, "PodScheduled")
            .filter(|c| c["status"] == "False")
            .cloned()
    })
    .await;
    assert_eq!(cond["reason"], "Unschedulable");
    let message = cond["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
        ),
        "{message}"
    );
    let p = pods.get("big").await.unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
    assert!(p.spec.unwrap().node_name.is_none());
}

#[tokio::test]
async fn pod_logs_follow_tail_and_container() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    pods.create(&PostParams::default(), &pod("talker", "nginx:1.27"))
        .await
        .unwrap();
    wait_for("pod running", 60, || async {
        let p = pods.get("talker").await.unwrap();
        is_ready(&p).then_some(())
    })
    .await;
    let logs = pods.logs("talker", &LogParams::default()).await.unwrap();
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines[0], "starting container c from image nginx:1.27");
    assert!(
        lines[1].starts_with("container c is running on node kopr-node-"),
        "{logs}"
    );
    let tail = pods
        .logs(
            "talker",
            &LogParams {
                tail_lines: Some(1),
                container: Some("c".into()),
                ..LogParams::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(tail.lines().count(), 1);
    let stamped = pods
        .logs(
            "talker",
            &LogParams {
                timestamps: true,
                ..LogParams::default()
            },
        )
        .await
        .unwrap();
    assert!(
        stamped
            .lines()
            .all(|l| l.contains("Z starting") || l.contains("Z container")),
        "{stamped}"
    );
    // Follow: the lines so far, then the shutdown lines when the pod is deleted.
    let stream = pods
        .log_stream(
            "talker",
            &LogParams {
                follow: true,
                ..LogParams::default()
            },
        )
        .await
        .unwrap();
    let mut lines = stream.lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first, "starting container c from image nginx:1.27");
    lines.next().await.unwrap().unwrap();
    pods.delete("talker", &DeleteParams::default())
        .await
        .unwrap();
    let rest: Vec<String> =
        tokio::time::timeout(Duration::from_secs(30), lines.collect::<Vec<_>>())
            .await
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
    assert!(
        rest.iter()
            .any(|l| l == "container c received SIGTERM, shutting down"),
        "{rest:?}"
    );
    let bad = pods
        .logs(
            "talker",
            &LogParams {
                container: Some("nope".into()),
                ..LogParams::default()
            },
        )
        .await;
    assert!(bad.is_err());
}

#[tokio::test]
async fn deleting_a_deployment_collects_its_replicasets_and_pods() {
    let f = common::start().await;
    let deps: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let rss: Api<ReplicaSet> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    deps.create(&PostParams::default(), &deployment("gone", 2, "nginx"))
        .await
        .unwrap();
    rolled_out(&deps, "gone", 2).await;
    deps.delete("gone", &DeleteParams::default()).await.unwrap();
    wait_for("replica sets and pods collected", 60, || async {
        let r = rss
            .list(&ListParams::default().labels("app=gone"))
            .await
            .unwrap();
        let p = pods
            .list(&ListParams::default().labels("app=gone"))
            .await
            .unwrap();
        (r.items.is_empty() && p.items.is_empty()).then_some(())
    })
    .await;
    assert!(deps.get_opt("gone").await.unwrap().is_none());
}

#[tokio::test]
async fn controllers_can_be_turned_off() {
    let mut config = kopr_apiserver::Config::ephemeral();
    config.controllers = false;
    let f = common::start_with(config).await;
    let deps: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let nodes: Api<Node> = Api::all(f.client.clone());
    deps.create(&PostParams::default(), &deployment("idle", 1, "nginx"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let d = deps.get("idle").await.unwrap();
    assert!(d.status.is_none_or(|s| s.observed_generation.is_none()));
}
