//! Wires up the workload controllers (Deployment, ReplicaSet,
//! ReplicationController, StatefulSet, DaemonSet, Job, CronJob), the
//! endpoints and endpointslice controllers, the disruption controller, the
//! scheduler and the simulated kubelet: creates the simulated nodes, fills
//! the shared cache, and turns every committed change into work-queue keys
//! for the controllers that care, as informer event handlers do in
//! kube-controller-manager. Nothing runs on a timer except real delays
//! (pulls, run times, back-offs, progress deadlines, CronJobs' scheduled
//! times).

use std::sync::Arc;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::cronjob::CronJobController;
use super::daemonset::{self, DaemonSetController};
use super::deployment::DeploymentController;
use super::disruption::DisruptionController;
use super::endpoints::{EndpointSliceController, EndpointsController, Routes};
use super::informer::{Change, Informer, Kind};
use super::job::{JobController, ORPHAN_PREFIX, TRACKING_FINALIZER};
use super::podutil;
use super::recorder::Recorder;
use super::replicaset::ReplicaSetController;
use super::replication;
use super::scheduler::Scheduler;
use super::statefulset::StatefulSetController;
use super::workqueue::WorkQueue;
use crate::agent::{AgentFactory, NodeAgent};
use crate::object;
use crate::registry::Api;

struct Router {
    informer: Arc<Informer>,
    deployments: Arc<WorkQueue>,
    replicasets: Arc<WorkQueue>,
    statefulsets: Arc<WorkQueue>,
    jobs: Arc<WorkQueue>,
    daemonsets: Arc<WorkQueue>,
    replication: Arc<WorkQueue>,
    endpoints: Routes,
    cronjobs: Arc<CronJobController>,
    disruption: Arc<DisruptionController>,
    kubelet_queue: Arc<WorkQueue>,
    scheduler: Arc<Scheduler>,
    kubelet: Option<Arc<dyn NodeAgent>>,
}

impl Router {
    fn route(&self, ch: &Change) {
        let ns_of = |o: &serde_json::Value| object::namespace(o).to_string();
        let objects = || ch.old.iter().chain(ch.new.iter());
        self.disruption.observe(ch);
        daemonset::route(&self.informer, &self.daemonsets, ch);
        replication::route(&self.informer, &self.replication, ch);
        match ch.kind {
            Kind::Deployment => self.deployments.add(ch.key.clone()),
            Kind::StatefulSet => self.statefulsets.add(ch.key.clone()),
            Kind::Job => {
                self.jobs.add(ch.key.clone());
                self.cronjobs.observe(ch);
            }
            Kind::CronJob => self.cronjobs.observe(ch),
            Kind::ReplicaSet => {
                self.replicasets.add(ch.key.clone());
                for o in objects() {
                    if let Some(("Deployment", name)) = podutil::controller_of(o) {
                        self.deployments.add(Kind::Deployment.key(&ns_of(o), name));
                    }
                }
                if let Some(rs) = ch.new.as_deref()
                    && podutil::controller_ref(rs).is_none()
                {
                    for d in self
                        .informer
                        .list(Kind::Deployment, Some(object::namespace(rs)))
                    {
                        if podutil::selector_of(&d).is_some_and(|s| podutil::selects(&s, rs)) {
                            self.deployments
                                .add(Kind::Deployment.key(object::namespace(&d), object::name(&d)));
                        }
                    }
                }
            }
            Kind::Pod => {
                for o in objects() {
                    let ns = ns_of(o);
                    match podutil::controller_of(o) {
                        Some(("ReplicaSet", name)) => {
                            self.replicasets.add(Kind::ReplicaSet.key(&ns, name));
                            if ch.new.is_none()
                                && let Some(rs) = self.informer.get(Kind::ReplicaSet, &ns, name)
                                && let Some(("Deployment", d)) = podutil::controller_of(&rs)
                            {
                                self.deployments.add(Kind::Deployment.key(&ns, d));
                            }
                        }
                        Some(("StatefulSet", name)) => {
                            self.statefulsets.add(Kind::StatefulSet.key(&ns, name))
                        }
                        Some(("Job", name)) => self.jobs.add(Kind::Job.key(&ns, name)),
                        _ => {}
                    }
                }
                if let Some(pod) = ch.new.as_deref()
                    && podutil::controller_ref(pod).is_none()
                {
                    if podutil::is_active(pod) {
                        for rs in self
                            .informer
                            .list(Kind::ReplicaSet, Some(object::namespace(pod)))
                        {
                            if podutil::selector_of(&rs).is_some_and(|s| podutil::selects(&s, pod))
                            {
                                self.replicasets.add(
                                    Kind::ReplicaSet.key(object::namespace(&rs), object::name(&rs)),
                                );
                            }
                        }
                    }
                    if object::finalizers(pod)
                        .iter()
                        .any(|f| f == TRACKING_FINALIZER)
                    {
                        self.jobs.add(format!("{ORPHAN_PREFIX}{}", ch.key));
                    }
                }
                self.endpoints.route(ch);
                self.scheduler.observe(ch);
                if let Some(k) = &self.kubelet
                    && objects().any(|p| k.runs(p))
                {
                    self.kubelet_queue.add(ch.key.clone());
                }
            }
            Kind::Node => self.scheduler.observe(ch),
            Kind::PodDisruptionBudget | Kind::ReplicationController => {}
            Kind::DaemonSet | Kind::ControllerRevision => {}
            Kind::Service | Kind::Endpoints | Kind::EndpointSlice => self.endpoints.route(ch),
        }
    }
}

/// Starts the workload controllers, the scheduler and the simulated
/// kubelet, with `nodes` simulated nodes; they stop when `stop` is
/// cancelled.
pub fn spawn(api: Api, stop: CancellationToken, nodes: usize, agent: Option<AgentFactory>) {
    let events = api.store.subscribe();
    tokio::spawn(run(api, events, stop, nodes, agent));
}

fn start<C, F, Fut>(
    queue: &Arc<WorkQueue>,
    workers: usize,
    informer: &Arc<Informer>,
    controller: &Arc<C>,
    sync: F,
) where
    C: Send + Sync + ?Sized + 'static,
    F: Fn(Arc<C>, String) -> Fut + Copy + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Option<std::time::Duration>, crate::status::ApiError>>
        + Send
        + 'static,
{
    let informer = informer.clone();
    let controller = controller.clone();
    queue.run(workers, move |key| {
        let informer = informer.clone();
        let controller = controller.clone();
        async move {
            let result = sync(controller, key).await;
            // Read our own writes on the next sync.
            informer.catch_up().await;
            result
        }
    });
}

/// Starts each controller's workers on its queue.
fn start_workers(
    api: &Api,
    informer: &Arc<Informer>,
    recorder: &Recorder,
    router: &Router,
    cronjob_queue: &Arc<WorkQueue>,
    scheduler_queue: &Arc<WorkQueue>,
) {
    let deployments = DeploymentController::new(api.clone(), informer.clone(), recorder.clone());
    start(
        &router.deployments,
        2,
        informer,
        &deployments,
        |c, k| async move { c.sync(k).await },
    );
    let replicasets = ReplicaSetController::new(api.clone(), informer.clone(), recorder.clone());
    start(
        &router.replicasets,
        2,
        informer,
        &replicasets,
        |c, k| async move { c.sync(k).await },
    );
    let statefulsets = StatefulSetController::new(api.clone(), informer.clone(), recorder.clone());
    start(
        &router.statefulsets,
        1,
        informer,
        &statefulsets,
        |c, k| async move { c.sync(k).await },
    );
    let jobs = JobController::new(api.clone(), informer.clone(), recorder.clone());
    start(&router.jobs, 1, informer, &jobs, |c, k| async move {
        c.sync(k).await
    });
    let daemonsets = DaemonSetController::new(api.clone(), informer.clone(), recorder.clone());
    start(
        &router.daemonsets,
        1,
        informer,
        &daemonsets,
        |c, k| async move { c.sync(k).await },
    );
    let rcs = ReplicaSetController::with_flavour(
        replication::REPLICATION_CONTROLLERS,
        api.clone(),
        informer.clone(),
        recorder.clone(),
    );
    start(&router.replication, 1, informer, &rcs, |c, k| async move {
        c.sync(k).await
    });
    start(
        cronjob_queue,
        1,
        informer,
        &router.cronjobs,
        |c, k| async move { c.sync(k).await },
    );
    start(
        router.disruption.queue(),
        1,
        informer,
        &router.disruption,
        |c, k| async move { c.sync(k).await },
    );
    start(
        scheduler_queue,
        1,
        informer,
        &router.scheduler,
        |c, k| async move { c.sync(k).await },
    );
    if let Some(kubelet) = &router.kubelet {
        start(
            &router.kubelet_queue,
            4,
            informer,
            kubelet,
            |c, k| async move { c.sync(k).await },
        );
    }
    let endpoints = EndpointsController::new(api.clone(), informer.clone(), recorder.clone());
    start(
        &router.endpoints.endpoints,
        2,
        informer,
        &endpoints,
        |c, k| async move { c.sync(k).await },
    );
    let slices = EndpointSliceController::new(
        api.clone(),
        informer.clone(),
        recorder.clone(),
        router.endpoints.tracker.clone(),
    );
    start(
        &router.endpoints.slices,
        2,
        informer,
        &slices,
        |c, k| async move { c.sync(k).await },
    );
}

async fn run(
    api: Api,
    mut events: broadcast::Receiver<Arc<crate::storage::WatchEvent>>,
    stop: CancellationToken,
    node_count: usize,
    agent: Option<AgentFactory>,
) {
    // Simulated nodes are made only when something runs their pods.
    if agent.is_some()
        && let Err(e) = super::nodes::ensure_nodes(&api, node_count).await
    {
        tracing::warn!(error = %e, "creating the simulated nodes failed");
    }
    let informer = Informer::new(api.clone());
    let recorder = Recorder::spawn(api.clone(), stop.clone());
    let queue = |name| WorkQueue::new(name, stop.clone());
    let scheduler_queue = queue("scheduler");
    let cronjob_queue = queue("cronjob");
    let router = Router {
        informer: informer.clone(),
        deployments: queue("deployment"),
        replicasets: queue("replicaset"),
        statefulsets: queue("statefulset"),
        jobs: queue("job"),
        daemonsets: queue("daemonset"),
        replication: queue("replicationmanager"),
        endpoints: Routes::new(informer.clone(), queue("endpoint"), queue("endpointslice")),
        cronjobs: CronJobController::new(
            api.clone(),
            informer.clone(),
            recorder.clone(),
            cronjob_queue.clone(),
        ),
        disruption: DisruptionController::new(
            api.clone(),
            informer.clone(),
            recorder.clone(),
            queue("disruption"),
        ),
        kubelet_queue: queue("kubelet"),
        scheduler: Scheduler::new(
            api.clone(),
            informer.clone(),
            recorder.clone(),
            scheduler_queue.clone(),
        ),
        kubelet: agent.map(|make| make(api.clone(), informer.clone(), recorder.clone())),
    };
    let (changes, mut snapshot) = informer.resync().await;

    start_workers(
        &api,
        &informer,
        &recorder,
        &router,
        &cronjob_queue,
        &scheduler_queue,
    );

    for ch in &changes {
        router.route(ch);
    }
    router.endpoints.leftovers();
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => return,
            r = events.recv() => r,
        };
        match received {
            Ok(ev) => {
                let seen = Kind::of_key(&ev.key)
                    .and_then(|k| snapshot.get(&k))
                    .is_some_and(|rev| ev.revision <= *rev);
                if !seen && let Some(ch) = informer.apply(&ev) {
                    router.route(&ch);
                }
                informer.mark(ev.revision);
                if snapshot.values().all(|rev| ev.revision >= *rev) {
                    snapshot.clear();
                }
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "workload controllers fell behind; relisting");
                let (changes, revisions) = informer.resync().await;
                snapshot = revisions;
                for ch in &changes {
                    router.route(ch);
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
