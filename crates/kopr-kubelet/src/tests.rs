//! Tests of the simulated kubelet.

use super::*;

fn ctr(image: &str, restart_policy: &str) -> Ctr {
    let pod = json!({"spec": {"restartPolicy": restart_policy}});
    let spec = json!({"name": "c", "image": image, "imagePullPolicy": "IfNotPresent"});
    Ctr::from_spec(&pod, &spec, false)
}

fn secs(t: jiff::Timestamp, s: u64) -> jiff::Timestamp {
    after(t, Duration::from_secs(s))
}

fn waiting(c: &Ctr) -> (String, String) {
    let s = c.status(false);
    let w = &s["state"]["waiting"];
    (
        w["reason"].as_str().unwrap_or("").to_string(),
        w["message"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn crash_loops_restart_at_once_then_back_off_10s_then_20s() {
    let mut c = ctr("busybox:crash", "Always");
    let mut images = HashSet::from([simulation::qualified_image("busybox:crash")]);
    let mut evs = Vec::new();
    let t0 = podutil::parse_time("2025-01-01T00:00:00Z").unwrap_or_else(podutil::now);
    let pod = "p_default(u1)";
    assert_eq!(
        c.step("Always", &mut images, t0, pod, &mut evs),
        Some(secs(t0, 1))
    );
    // The first exit restarts at once.
    c.step("Always", &mut images, secs(t0, 1), pod, &mut evs);
    assert!(c.is_running());
    assert_eq!(c.restart_count, 1);
    // The second waits 10 s.
    assert_eq!(
        c.step("Always", &mut images, secs(t0, 2), pod, &mut evs),
        Some(secs(t0, 12))
    );
    assert_eq!(
        waiting(&c),
        (
            "CrashLoopBackOff".to_string(),
            "back-off 10s restarting failed container=c pod=p_default(u1)".to_string()
        )
    );
    assert_eq!(c.status(false)["lastState"]["terminated"]["exitCode"], 1);
    c.step("Always", &mut images, secs(t0, 12), pod, &mut evs);
    assert_eq!(c.restart_count, 2);
    // The third waits 20 s.
    c.step("Always", &mut images, secs(t0, 13), pod, &mut evs);
    assert_eq!(
        waiting(&c).1,
        "back-off 20s restarting failed container=c pod=p_default(u1)"
    );
    let reasons: Vec<&str> = evs.iter().map(|e| e.reason).collect();
    assert_eq!(reasons.iter().filter(|r| **r == "BackOff").count(), 2);
    assert_eq!(reasons.iter().filter(|r| **r == "Started").count(), 3);
}

#[test]
fn missing_images_back_off_between_pulls() {
    let mut c = ctr("nginx:missing", "Always");
    let mut images = HashSet::new();
    let mut evs = Vec::new();
    let t0 = podutil::parse_time("2025-01-01T00:00:00Z").unwrap_or_else(podutil::now);
    let pulled = after(t0, simulation::PULL_TIME);
    assert_eq!(
        c.step("Always", &mut images, t0, "p", &mut evs),
        Some(pulled)
    );
    assert_eq!(waiting(&c).0, "ContainerCreating");
    c.step("Always", &mut images, pulled, "p", &mut evs);
    assert_eq!(waiting(&c).0, "ErrImagePull");
    c.step(
        "Always",
        &mut images,
        after(pulled, SHOW_PULL_BACKOFF),
        "p",
        &mut evs,
    );
    assert_eq!(
        waiting(&c),
        (
            "ImagePullBackOff".to_string(),
            "Back-off pulling image \"nginx:missing\"".to_string()
        )
    );
    // Retried after 10 s, then after 20 s.
    let retry = secs(pulled, 10);
    c.step("Always", &mut images, retry, "p", &mut evs);
    let failed_again = after(retry, simulation::PULL_TIME);
    let next = c.step("Always", &mut images, failed_again, "p", &mut evs);
    assert_eq!(next, Some(after(failed_again, SHOW_PULL_BACKOFF)));
    assert!(
        matches!(&c.state, CState::PullFailed { retry_at, .. } if *retry_at == secs(failed_again, 20))
    );
    let pulls = evs.iter().filter(|e| e.reason == "Pulling").count();
    assert_eq!(pulls, 2);
}

#[test]
fn pod_ips_come_from_the_node_cidr() {
    let node = json!({"metadata": {"name": "n"}, "spec": {"podCIDR": "10.244.3.0/24"}});
    let mut rt = NodeRt::new(&node, &[]);
    let a = rt.allocate();
    let b = rt.allocate();
    assert_eq!(a.as_deref(), Some("10.244.3.2"));
    assert_eq!(b.as_deref(), Some("10.244.3.3"));
    rt.release(a.as_deref(), false);
    assert_eq!(rt.allocate().as_deref(), Some("10.244.3.4"));
}
