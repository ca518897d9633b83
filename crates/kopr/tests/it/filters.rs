//! Filters: label and annotation values, presence, absence and predicates; field values;
//! `when`; old/new values on updates. Objects no handler matches cost nothing.

use crate::common::*;
use kopr::{Context, Filtered, Handler, HandlerResult, Matcher, Operator, Resource};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn recorder(calls: &Calls, id: &'static str) -> Handler<Widget> {
    let calls = calls.clone();
    Handler::new(move |ctx: Context<Widget>| {
        let calls = calls.clone();
        async move {
            calls.record(format!("{id} {}", ctx.name()));
            HandlerResult::Ok(())
        }
    })
    .id(id)
}

async fn create(
    api: &kube::Api<Widget>,
    name: &str,
    labels: Value,
    annotations: Value,
    spec: Value,
) {
    let widget: Widget = serde_json::from_value(json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &widget).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_filter_kind() {
    let cluster = cluster().await;
    namespace(&cluster, "f1").await;
    let calls = Calls::default();
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(recorder(&calls, "label-value").label_matches("tier", "web"))
            .on_create(recorder(&calls, "label-present").label_matches("tier", Matcher::Present))
            .on_create(recorder(&calls, "label-absent").label_matches("tier", Matcher::Absent))
            .on_create(recorder(&calls, "annotation-check").annotation_matches(
                "owner",
                Matcher::check(|v| {
                    v.and_then(Value::as_str)
                        .is_some_and(|s| s.starts_with("team-"))
                }),
            ))
            .on_create(recorder(&calls, "field-value").field_matches("spec.size", Matcher::is(7)))
            .on_create(
                recorder(&calls, "when").when(|input| input.body["spec"]["message"] == "special"),
            )
            .on_field(
                "spec.message",
                recorder(&calls, "old-new")
                    .old_matches("a")
                    .new_matches("b"),
            )
            .on_event(
                recorder(&calls, "event-when")
                    .when(|input| input.body["spec"]["message"] == "special"),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "f1");
    create(
        &api,
        "web",
        json!({"tier": "web"}),
        json!({}),
        json!({"message": "a"}),
    )
    .await;
    create(
        &api,
        "db",
        json!({"tier": "db"}),
        json!({"owner": "team-x"}),
        json!({"message": "special", "size": 7}),
    )
    .await;
    create(
        &api,
        "bare",
        json!({}),
        json!({"owner": "someone"}),
        json!({"message": "a"}),
    )
    .await;
    for name in ["web", "db", "bare"] {
        wait_widget(&api, name, |w| {
            annotations(w).contains_key("kopr.dev/last-handled-configuration")
        })
        .await;
    }
    // Event handlers run beside the cycles; `when` applies to them too.
    for _ in 0..200 {
        if calls.count("event-when db") > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(calls.count("event-when db") > 0, "{:?}", calls.all());
    let mut all: Vec<String> = calls
        .all()
        .into_iter()
        .filter(|c| !c.starts_with("event-when"))
        .collect();
    all.sort();
    assert_eq!(
        all,
        vec![
            "annotation-check db",
            "field-value db",
            "label-absent bare",
            "label-present db",
            "label-present web",
            "label-value web",
            "when db",
        ],
    );
    // old/new filters see the field's old and new values on updates.
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"message": "b"}})),
    )
    .await
    .unwrap();
    api.patch(
        "bare",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"message": "c"}})),
    )
    .await
    .unwrap();
    for (name, expected) in [("web", "\\\"b\\\""), ("bare", "\\\"c\\\"")] {
        wait_widget(&api, name, move |w| {
            annotations(w)
                .get("kopr.dev/last-handled-configuration")
                .is_some_and(|a| a.to_string().contains(expected))
        })
        .await;
    }
    assert_eq!(calls.count("old-new web"), 1, "{:?}", calls.all());
    assert_eq!(calls.count("old-new bare"), 0, "{:?}", calls.all());
    assert_eq!(calls.count("event-when web"), 0, "{:?}", calls.all());
    assert_eq!(calls.count("event-when bare"), 0, "{:?}", calls.all());
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unmatched_objects_cost_nothing() {
    let cluster = cluster().await;
    namespace(&cluster, "f2").await;
    let calls = Calls::default();
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(recorder(&calls, "only-mine").label_matches("mine", "yes"))
            .on_delete(recorder(&calls, "bye").label_matches("mine", "yes")),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "f2");
    create(
        &api,
        "ignored-one",
        json!({"mine": "no"}),
        json!({}),
        json!({"message": "x"}),
    )
    .await;
    create(
        &api,
        "handled-one",
        json!({"mine": "yes"}),
        json!({}),
        json!({"message": "x"}),
    )
    .await;
    wait_widget(&api, "handled-one", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    // The handled object was created after the ignored one, so the ignored one has been seen.
    let ignored = serde_json::to_value(api.get("ignored-one").await.unwrap()).unwrap();
    assert!(
        ignored["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| rv.parse::<u64>().is_ok())
    );
    assert!(annotations(&ignored).is_empty(), "{ignored}");
    assert!(finalizers(&ignored).is_empty(), "{ignored}");
    assert_eq!(ignored["metadata"]["generation"], 1);
    let managers: Vec<&str> = ignored["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(!managers.contains(&"kopr"), "{managers:?}");
    let logs = kopr::testing::capture_logs();
    assert_eq!(
        logs.count(&["ignored-one"]),
        0,
        "no log line mentions the ignored object"
    );
    assert!(events_about(&cluster, "f2", "ignored-one").await.is_empty());
    assert_eq!(calls.all(), vec!["only-mine handled-one"]);
    running.stop().await.unwrap();
}
