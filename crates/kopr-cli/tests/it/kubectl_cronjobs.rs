//! CronJobs through real kubectl against a `kopr apiserver` child process:
//! `kubectl create job --from=cronjob/...` (the Job is built client-side
//! from the jobTemplate and posted with an owner reference), and
//! `kubectl get cronjob` / `describe` once the controller has started a
//! scheduled run (made due at once by a `lastScheduleTime` in the past).

use crate::support::{Server, eventually};

/// The cell of column `name` in the first data row of a `kubectl get`
/// table (cells are found by the header's column positions, as schedules
/// hold spaces).
fn cell(out: &str, name: &str) -> String {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or("");
    let row = lines.next().unwrap_or("");
    let Some(start) = header.find(name) else {
        panic!("no {name} column in {header}");
    };
    let rest = &header[start + name.len()..];
    let end = rest
        .find(|c: char| !c.is_whitespace())
        .map_or(row.len(), |i| start + name.len() + i);
    row.get(start..end.min(row.len()))
        .unwrap_or("")
        .trim()
        .to_string()
}

fn json(server: &Server, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&server.ok(&all)).unwrap()
}

#[test]
fn kubectl_creates_jobs_from_cronjobs_and_shows_scheduled_runs() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    assert_eq!(
        server.ok(&[
            "create",
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=0 0 1 1 *",
            "--",
            "echo",
            "hi"
        ]),
        "cronjob.batch/tick created\n"
    );
    assert_eq!(
        server.ok(&["create", "job", "manual", "--from=cronjob/tick"]),
        "job.batch/manual created\n"
    );
    let cj = json(&server, &["get", "cronjob", "tick"]);
    let job = json(&server, &["get", "job", "manual"]);
    assert_eq!(
        job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"],
        "manual"
    );
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "CronJob");
    assert_eq!(owner["name"], "tick");
    assert_eq!(owner["uid"], cj["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    // The server generated the selector and labels, as for any Job.
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"],
        "manual"
    );
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"],
        serde_json::json!(["echo", "hi"])
    );
    let jobs = eventually(&server, &["get", "job", "manual"], 60, |t| {
        cell(t, "STATUS") == "Complete"
    });
    assert_eq!(cell(&jobs, "COMPLETIONS"), "1/1");
    // A Job of the CronJob counts for its last successful time.
    eventually(
        &server,
        &[
            "get",
            "cronjob",
            "tick",
            "-o",
            "jsonpath={.status.lastSuccessfulTime}",
        ],
        30,
        |t| t == job_completion(&server),
    );

    // A daily CronJob whose Jobs stay active (suspended), not due yet.
    let manifest = r#"
apiVersion: batch/v1
kind: CronJob
metadata:
  name: held
spec:
  schedule: "0 0 * * *"
  suspend: true
  jobTemplate:
    spec:
      suspend: true
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: c
            image: busybox
"#;
    assert_eq!(
        server.ok_stdin(&["apply", "-f", "-"], manifest),
        "cronjob.batch/held created\n"
    );
    let table = server.ok(&["get", "cronjob", "held"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"
        ]
    );
    assert_eq!(cell(&table, "SCHEDULE"), "0 0 * * *");
    assert_eq!(cell(&table, "TIMEZONE"), "<none>");
    assert_eq!(cell(&table, "SUSPEND"), "True");
    assert_eq!(cell(&table, "ACTIVE"), "0");
    assert_eq!(cell(&table, "LAST SCHEDULE"), "<none>");

    // A last schedule time long past makes today's run due.
    server.ok(&[
        "patch",
        "cronjob",
        "held",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"lastScheduleTime":"2020-01-01T00:00:00Z"}}"#,
    ]);
    server.ok(&[
        "patch",
        "cronjob",
        "held",
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":false}}"#,
    ]);
    let table = eventually(&server, &["get", "cronjob", "held"], 30, |t| {
        cell(t, "ACTIVE") == "1"
    });
    assert_eq!(cell(&table, "SUSPEND"), "False");
    assert_ne!(cell(&table, "LAST SCHEDULE"), "<none>", "{table}");

    let cj = json(&server, &["get", "cronjob", "held"]);
    let active = cj["status"]["active"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let scheduled = cj["status"]["lastScheduleTime"].as_str().unwrap();
    assert!(active.starts_with("held-"), "{cj}");
    let jobs = server.ok(&["get", "jobs", "-o", "name"]);
    assert!(jobs.contains(&format!("job.batch/{active}\n")), "{jobs}");
    let job = json(&server, &["get", "job", &active]);
    assert_eq!(
        job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        scheduled
    );

    let described = eventually(&server, &["describe", "cronjob", "held"], 30, |t| {
        t.contains("TooManyMissedTimes") && t.contains("SuccessfulCreate")
    });
    let has_line = |prefix: &str, words: &[&str], end: &str| {
        described.lines().any(|l| {
            l.trim_start().starts_with(prefix)
                && words.iter().all(|w| l.contains(w))
                && l.trim_end().ends_with(end)
        })
    };
    assert!(has_line("Active Jobs:", &[], &active), "{described}");
    assert!(
        has_line(
            "Normal",
            &["SuccessfulCreate", "cronjob-controller"],
            &format!("Created job {active}")
        ),
        "{described}"
    );
}

/// The completion time of the Job `manual`.
fn job_completion(server: &Server) -> String {
    server.ok(&[
        "get",
        "job",
        "manual",
        "-o",
        "jsonpath={.status.completionTime}",
    ])
}
