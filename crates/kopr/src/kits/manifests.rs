//! Deploying an operator: the manifests `<operator> manifests` prints.
//!
//! From the operator's registered resources, [`Manifests`] derives the CRDs, a ServiceAccount, a
//! least-privilege ClusterRole with its ClusterRoleBinding, a Role and RoleBinding for the
//! leader election Lease in the operator's namespace, a `<name>-metrics` Service, and a
//! Deployment of two replicas (`RollingUpdate`; `run` elects one leader through the Lease, the
//! other stands by; or N replicas that split the objects with [`Manifests::shards`], each
//! running `run --shards`, with `list`, `watch` and `delete` on Leases too) running `<operator> run -A --health-listen 0.0.0.0:8081 --metrics-listen
//! 0.0.0.0:8080`, with liveness (`/healthz`) and readiness (`/readyz`) probes on the `health`
//! port, resource requests, and a non-root, read-only, no-escalation, `RuntimeDefault` seccomp
//! security context. What the operator does that kopr cannot see, creating children or its
//! own CRDs, is declared here.
//!
//! The ClusterRole grants:
//!
//! - on every served resource: `get`, `list`, `watch`, `patch`, and `patch` on its `/status`
//!   (progress, the diff base, finalizers and handler results are written there);
//! - `create` on core `events`;
//! - `get`, `list`, `watch` on `customresourcedefinitions` when the operator has CRDs, and also
//!   `create` and `patch` when it [installs them itself](Manifests::installs_crds), or `patch`
//!   when it serves a CRD at [several versions](crate::Resource::version) (its webhook server
//!   registers its CA as the conversion's `caBundle`);
//! - on each declared [child kind](Manifests::child) and each kind a resource
//!   [owns](crate::Resource::owns): `create`, `get`, `list`, `watch`, `patch`, `delete`;
//! - `get`, `list`, `watch` on each kind [read](Manifests::reads) or
//!   [watched](crate::Resource::watches);
//! - `get`, `create`, `patch`, `delete` on `validatingwebhookconfigurations` and
//!   `mutatingwebhookconfigurations` when the operator has admission handlers (it registers
//!   them at start).
//!
//! An operator with admission handlers also gets a Service `<name>-webhooks` (443 to the
//! container's port `webhooks`, 9443), and `run --webhook-service <namespace>/<name>-webhooks`.
//! Its certificate ([`Manifests::webhook_certificates`]):
//!
//! - [`WebhookCertificates::Generated`] (the default): from a CA the operator generates at
//!   each start; it registers its webhook configurations with that CA as their `caBundle`.
//! - [`WebhookCertificates::Secret`]: a `kubernetes.io/tls` Secret you provide, mounted at
//!   `/var/run/kopr/webhook-certs` (`--webhook-cert-dir`) and read again when it changes; the
//!   operator registers the configurations with its `ca.crt` (or `tls.crt`).
//! - [`WebhookCertificates::CertManager`]: a cert-manager `Certificate` for the Service's
//!   names, from the issuer you name, into the Secret `<name>-webhooks-tls`, mounted as above;
//!   the manifests carry the ValidatingWebhookConfiguration and MutatingWebhookConfiguration,
//!   annotated `cert-manager.io/inject-ca-from: <namespace>/<name>-webhooks` so that
//!   cert-manager's CA injector fills their `caBundle`, and the operator runs with
//!   `--webhook-no-registration` (and needs no RBAC on the configurations).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, HTTPGetAction, Namespace, PodSecurityContext, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile, SecretVolumeSource,
    SecurityContext, Service, ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use crate::handling::errors::Error;
use crate::operator::Operator;
use crate::runtime::discovery::Target;

/// Where the mounted webhook certificate Secret is.
const CERT_DIR: &str = "/var/run/kopr/webhook-certs";

/// How the operator's admission webhook server gets its certificate in the cluster (see the
/// module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WebhookCertificates {
    /// From a CA the operator generates at each start (the default).
    #[default]
    Generated,
    /// From this `kubernetes.io/tls` Secret in the operator's namespace.
    Secret(String),
    /// From a cert-manager Certificate issued by `issuer`, a ClusterIssuer when
    /// `cluster_issuer`, else an Issuer in the operator's namespace.
    CertManager {
        /// The issuer's name.
        issuer: String,
        /// Whether it is a ClusterIssuer.
        cluster_issuer: bool,
    },
}

/// A kind of object, as RBAC names it: API group (`""` for the core group) and plural.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ResourceKind {
    /// The API group.
    pub group: String,
    /// The plural resource name.
    pub plural: String,
}

impl ResourceKind {
    /// The kind of a typed resource (a k8s-openapi kind or a custom resource type).
    pub fn of<K: kube::Resource<DynamicType = ()>>() -> Self {
        ResourceKind {
            group: K::group(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
        }
    }

    /// A kind given by group and plural.
    pub fn new(group: &str, plural: &str) -> Self {
        ResourceKind {
            group: group.to_owned(),
            plural: plural.to_owned(),
        }
    }
}

/// What to deploy and how: the operator's name, image and namespace, the arguments `run`
/// gets, and what RBAC cannot be derived from the handlers.
///
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kopr::manifests::{Manifests, ResourceKind};
/// use kopr::{Context, HandlerResult, Operator, Resource};
///
/// async fn seen(_: Context<Deployment>) -> HandlerResult { Ok(()) }
///
/// let operator = Operator::new().resource(Resource::<Deployment>::new().on_create(seen));
/// let manifests = Manifests::new("scaler")
///     .namespace("scaler-system")
///     .image("registry.example.com/scaler:1.2")
///     .child::<ConfigMap>()
///     .reads::<Pod>()
///     .reads_kind(ResourceKind::new("", "pods/log"))
///     .run_args(["--workers", "8"]);
///
/// let rules = manifests.rules(&operator);
/// let deployments = rules
///     .iter()
///     .find(|r| r.resources.as_deref() == Some(&["deployments".to_owned()][..]))
///     .expect("a rule for the served kind");
/// assert_eq!(deployments.verbs, ["get", "list", "watch", "patch"]);
///
/// let yaml = manifests.render(&operator)?;
/// assert!(yaml.contains("namespace: scaler-system"));
/// assert!(yaml.contains("image: registry.example.com/scaler:1.2"));
/// # Ok::<(), kopr::Error>(())
/// ```
///
/// # Caveats
/// kopr derives RBAC from what it registers; what handlers do through
/// [`Context::client`](crate::Context::client) is invisible to it. A request the
/// ClusterRole does not allow fails with 403, which kopr's error messages explain with a hint
/// ([`rbac_hint`](crate::errors::rbac_hint)); `dev` and
/// [`TestCluster::run_as_service_account`](crate::testing::TestCluster::run_as_service_account)
/// run the operator under these rules so such gaps show before deployment.
#[derive(Debug, Clone)]
pub struct Manifests {
    name: String,
    image: Option<String>,
    namespace: String,
    installs_crds: bool,
    children: Vec<ResourceKind>,
    reads: Vec<ResourceKind>,
    run_args: Vec<String>,
    certificates: WebhookCertificates,
    /// Sharded replicas, instead of a leader and a standby.
    shards: Option<u32>,
}

const NAME_LABEL: &str = "app.kubernetes.io/name";

impl Manifests {
    /// Manifests for the operator `name`: the name of its binary, ServiceAccount, roles and
    /// Deployment. The defaults: image `<name>:latest`, namespace `default`.
    pub fn new(name: impl Into<String>) -> Self {
        Manifests {
            name: name.into(),
            image: None,
            namespace: "default".into(),
            installs_crds: false,
            children: Vec::new(),
            reads: Vec::new(),
            run_args: Vec::new(),
            certificates: WebhookCertificates::Generated,
            shards: None,
        }
    }

    /// Deploys `replicas` replicas that split the objects between them (`run --shards`, see
    /// [`crate::shards`]) instead of a leader and a standby; the Lease Role also grants `list`,
    /// `watch` and `delete` (members list each other, watch the shard map and clean up after
    /// dead ones).
    ///
    /// ```
    /// let manifests = kopr::manifests::Manifests::new("greeting").shards(3);
    /// ```
    pub fn shards(mut self, replicas: u32) -> Self {
        self.shards = Some(replicas.max(1));
        self
    }

    /// Where the admission webhook server's certificate comes from (default: generated at
    /// start).
    ///
    /// ```
    /// use kopr::manifests::{Manifests, WebhookCertificates};
    /// let manifests = Manifests::new("greeting").webhook_certificates(WebhookCertificates::CertManager {
    ///     issuer: "letsencrypt".into(),
    ///     cluster_issuer: true,
    /// });
    /// ```
    pub fn webhook_certificates(mut self, certificates: WebhookCertificates) -> Self {
        self.certificates = certificates;
        self
    }

    /// The Secret the webhook certificate is mounted from, if any.
    fn certificate_secret(&self) -> Option<String> {
        match &self.certificates {
            WebhookCertificates::Generated => None,
            WebhookCertificates::Secret(name) => Some(name.clone()),
            WebhookCertificates::CertManager { .. } => {
                Some(format!("{}-tls", self.webhook_service_name()))
            }
        }
    }

    /// Whether the operator registers its webhook configurations itself.
    fn registers_webhooks(&self) -> bool {
        !matches!(self.certificates, WebhookCertificates::CertManager { .. })
    }

    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace of its ServiceAccount, Deployment and Lease.
    pub fn namespace_name(&self) -> &str {
        &self.namespace
    }

    /// Renames the operator.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The container image (default `<name>:latest`).
    pub fn image(mut self, image: impl Into<String>) -> Self {
        self.image = Some(image.into());
        self
    }

    /// The namespace of the ServiceAccount and the Deployment (default `default`). Any other
    /// namespace is included as a Namespace object.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Declares that the operator creates or updates its CRDs itself at startup, which needs
    /// `create` and `patch` on CustomResourceDefinitions.
    pub fn installs_crds(mut self) -> Self {
        self.installs_crds = true;
        self
    }

    /// Declares a kind of child object the operator manages (creates, patches, deletes)
    /// without owning it through [`Resource::owns`](crate::Resource::owns): kinds the operator
    /// owns are children already, and kinds it watches are read, with nothing declared here.
    pub fn child<K: kube::Resource<DynamicType = ()>>(self) -> Self {
        self.child_kind(ResourceKind::of::<K>())
    }

    /// Declares a kind of child object by group and plural.
    pub fn child_kind(mut self, kind: ResourceKind) -> Self {
        if !self.children.contains(&kind) {
            self.children.push(kind);
        }
        self
    }

    /// Declares a kind the operator only reads (get, list, watch), such as pods it reports on.
    pub fn reads<K: kube::Resource<DynamicType = ()>>(self) -> Self {
        self.reads_kind(ResourceKind::of::<K>())
    }

    /// Declares a read-only kind or subresource by group and plural, e.g.
    /// `ResourceKind::new("", "pods/log")`.
    pub fn reads_kind(mut self, kind: ResourceKind) -> Self {
        if !self.reads.contains(&kind) {
            self.reads.push(kind);
        }
        self
    }

    /// Appends arguments to the Deployment's `run -A` (operator options such as
    /// `--refresh-interval 600`).
    pub fn run_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.run_args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The RBAC rules the operator needs (see the module documentation).
    pub fn rules(&self, operator: &Operator) -> Vec<PolicyRule> {
        let mut served: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for resource in &operator.resources {
            let kind = served_kind(&resource.target);
            let plurals = served.entry(kind.group).or_default();
            if !plurals.contains(&kind.plural) {
                plurals.push(kind.plural);
            }
        }
        let mut rules = Vec::new();
        for (group, plurals) in &served {
            rules.push(rule(
                group,
                plurals.clone(),
                &["get", "list", "watch", "patch"],
            ));
            let status = plurals.iter().map(|p| format!("{p}/status")).collect();
            rules.push(rule(group, status, &["patch"]));
        }
        rules.push(rule("", vec!["events".into()], &["create"]));
        if operator.has_admission_handlers() && self.registers_webhooks() {
            rules.push(rule(
                "admissionregistration.k8s.io",
                vec![
                    "mutatingwebhookconfigurations".into(),
                    "validatingwebhookconfigurations".into(),
                ],
                &["get", "create", "patch", "delete"],
            ));
        }
        if self.installs_crds || !operator.crds().is_empty() {
            let mut verbs = vec!["get", "list", "watch"];
            if self.installs_crds {
                verbs.extend(["create", "patch"]);
            } else if operator.has_conversions() && self.registers_webhooks() {
                // The webhook server registers its CA as the CRDs' conversion caBundle.
                verbs.push("patch");
            }
            rules.push(rule(
                "apiextensions.k8s.io",
                vec!["customresourcedefinitions".into()],
                &verbs,
            ));
        }
        // Owned kinds are children, watched kinds are read, as declared ones are.
        let mut declared_children = self.children.clone();
        let mut declared_reads = self.reads.clone();
        for related in operator.resources.iter().flat_map(|r| &r.related) {
            let kind = ResourceKind::new(&related.api_resource.group, &related.api_resource.plural);
            let list = match related.relation {
                crate::reconcile::Relation::Owns => &mut declared_children,
                crate::reconcile::Relation::Watches(_) => &mut declared_reads,
            };
            if !list.contains(&kind) {
                list.push(kind);
            }
        }
        let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for child in &declared_children {
            children
                .entry(child.group.clone())
                .or_default()
                .push(child.plural.clone());
        }
        for (group, plurals) in children {
            rules.push(rule(
                &group,
                plurals,
                &["create", "get", "list", "watch", "patch", "delete"],
            ));
        }
        let mut reads: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for kind in declared_reads
            .iter()
            .filter(|k| !declared_children.contains(k))
        {
            reads
                .entry(kind.group.clone())
                .or_default()
                .push(kind.plural.clone());
        }
        for (group, plurals) in reads {
            rules.push(rule(&group, plurals, &["get", "list", "watch"]));
        }
        rules
    }

    fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(NAME_LABEL.to_owned(), self.name.clone())])
    }

    fn meta(&self, namespaced: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name.clone()),
            namespace: namespaced.then(|| self.namespace.clone()),
            labels: Some(self.labels()),
            ..ObjectMeta::default()
        }
    }

    /// A Service `name` in front of the replicas' container port `port_name`.
    fn service(&self, name: String, port_name: &str, port: i32) -> Service {
        let mut meta = self.meta(true);
        meta.name = Some(name);
        Service {
            metadata: meta,
            spec: Some(ServiceSpec {
                selector: Some(self.labels()),
                ports: Some(vec![ServicePort {
                    name: Some(port_name.into()),
                    port,
                    target_port: Some(IntOrString::String(port_name.into())),
                    ..ServicePort::default()
                }]),
                ..ServiceSpec::default()
            }),
            ..Service::default()
        }
    }

    /// The Service in front of the replicas' metrics endpoints (for a ServiceMonitor or
    /// Prometheus' Service discovery).
    fn metrics_service(&self) -> Service {
        self.service(format!("{}-metrics", self.name), "metrics", 8080)
    }

    /// The Service in front of the operator's admission webhook server.
    fn webhook_service_name(&self) -> String {
        format!("{}-webhooks", self.name)
    }

    fn webhook_service(&self) -> Service {
        self.service(self.webhook_service_name(), "webhooks", 443)
    }

    fn deployment(&self, webhooks: bool) -> Deployment {
        let image = self
            .image
            .clone()
            .unwrap_or_else(|| format!("{}:latest", self.name));
        let mut args = vec!["run".to_owned(), "-A".to_owned()];
        if self.shards.is_some() {
            args.push("--shards".into());
        }
        args.extend(
            [
                "--health-listen",
                "0.0.0.0:8081",
                "--metrics-listen",
                "0.0.0.0:8080",
            ]
            .map(str::to_owned),
        );
        let secret = self.certificate_secret().filter(|_| webhooks);
        if webhooks {
            args.push("--webhook-service".into());
            args.push(format!(
                "{}/{}",
                self.namespace,
                self.webhook_service_name()
            ));
            if secret.is_some() {
                args.extend(["--webhook-cert-dir".to_owned(), CERT_DIR.to_owned()]);
            }
            if !self.registers_webhooks() {
                args.push("--webhook-no-registration".into());
            }
        }
        args.extend(self.run_args.iter().cloned());
        let port = |name: &str, number: i32| ContainerPort {
            name: Some(name.into()),
            container_port: number,
            ..ContainerPort::default()
        };
        let mut ports = vec![port("health", 8081), port("metrics", 8080)];
        if webhooks {
            ports.push(port("webhooks", 9443));
        }
        let probe = |path: &str| Probe {
            http_get: Some(HTTPGetAction {
                path: Some(path.into()),
                port: IntOrString::String("health".into()),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(10),
            ..Probe::default()
        };
        let mounts = secret.as_ref().map(|_| {
            vec![VolumeMount {
                name: "webhook-certs".into(),
                mount_path: CERT_DIR.into(),
                read_only: Some(true),
                ..VolumeMount::default()
            }]
        });
        let volumes = secret.map(|name| {
            vec![Volume {
                name: "webhook-certs".into(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(name),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            }]
        });
        let container = Container {
            ports: Some(ports),
            liveness_probe: Some(probe("/healthz")),
            readiness_probe: Some(probe("/readyz")),
            volume_mounts: mounts,
            name: self.name.clone(),
            image: Some(image),
            command: Some(vec![self.name.clone()]),
            args: Some(args),
            resources: Some(ResourceRequirements {
                requests: Some(BTreeMap::from([
                    ("cpu".to_owned(), Quantity("10m".into())),
                    ("memory".to_owned(), Quantity("32Mi".into())),
                ])),
                limits: Some(BTreeMap::from([(
                    "memory".to_owned(),
                    Quantity("256Mi".into()),
                )])),
                ..ResourceRequirements::default()
            }),
            security_context: Some(SecurityContext {
                allow_privilege_escalation: Some(false),
                read_only_root_filesystem: Some(true),
                capabilities: Some(Capabilities {
                    drop: Some(vec!["ALL".into()]),
                    ..Capabilities::default()
                }),
                ..SecurityContext::default()
            }),
            ..Container::default()
        };
        Deployment {
            metadata: self.meta(true),
            spec: DeploymentSpec {
                // A leader and a standby (`run` elects one through a Lease), or the shards.
                replicas: Some(
                    self.shards
                        .map_or(2, |n| i32::try_from(n).unwrap_or(i32::MAX)),
                ),
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".into()),
                    ..DeploymentStrategy::default()
                }),
                selector: LabelSelector {
                    match_labels: Some(self.labels()),
                    ..LabelSelector::default()
                },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(self.labels()),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(PodSpec {
                        service_account_name: Some(self.name.clone()),
                        security_context: Some(PodSecurityContext {
                            run_as_non_root: Some(true),
                            seccomp_profile: Some(SeccompProfile {
                                type_: "RuntimeDefault".into(),
                                ..SeccompProfile::default()
                            }),
                            ..PodSecurityContext::default()
                        }),
                        containers: vec![container],
                        volumes,
                        ..PodSpec::default()
                    }),
                },
                ..DeploymentSpec::default()
            },
            ..Deployment::default()
        }
    }

    /// Every object, in the order to apply them: the Namespace (unless `default`), the CRDs,
    /// ServiceAccount, ClusterRole, ClusterRoleBinding, the webhook Service (when the operator
    /// has admission handlers) and Deployment.
    ///
    /// ```
    /// let objects = kopr::manifests::Manifests::new("greeting").objects(&kopr::Operator::new())?;
    /// let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    /// assert!(kinds.contains(&"ServiceAccount") && kinds.contains(&"Deployment"));
    /// # Ok::<(), kopr::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Json`] when an object does not serialize (not expected).
    pub fn objects(&self, operator: &Operator) -> Result<Vec<Value>, Error> {
        let mut objects = Vec::new();
        if self.namespace != "default" {
            let namespace = Namespace {
                metadata: ObjectMeta {
                    name: Some(self.namespace.clone()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            objects.push(serde_json::to_value(namespace)?);
        }
        let converted: Vec<&str> = operator
            .resources
            .iter()
            .filter_map(|r| r.conversions.as_ref().map(|c| c.crd.as_str()))
            .collect();
        for crd in operator.crds() {
            let mut crd = serde_json::to_value(crd)?;
            let name = crd["metadata"]["name"].as_str().unwrap_or("").to_owned();
            if converted.contains(&name.as_str()) {
                // Converted by the operator's webhook server, behind its Service.
                crd["spec"]["conversion"]["webhook"]["clientConfig"] = serde_json::json!({
                    "service": {"namespace": self.namespace, "name": self.webhook_service_name(),
                                "path": format!("/convert/{name}"), "port": 443}});
                if let WebhookCertificates::CertManager { .. } = &self.certificates {
                    let inject = format!("{}/{}", self.namespace, self.webhook_service_name());
                    crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] =
                        serde_json::json!(inject);
                }
            }
            objects.push(crd);
        }
        let account = ServiceAccount {
            metadata: self.meta(true),
            ..ServiceAccount::default()
        };
        objects.push(serde_json::to_value(account)?);
        let role = ClusterRole {
            metadata: self.meta(false),
            rules: Some(self.rules(operator)),
            ..ClusterRole::default()
        };
        objects.push(serde_json::to_value(role)?);
        let binding = ClusterRoleBinding {
            metadata: self.meta(false),
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "ClusterRole".into(),
                name: self.name.clone(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: self.name.clone(),
                namespace: Some(self.namespace.clone()),
                ..Subject::default()
            }]),
        };
        objects.push(serde_json::to_value(binding)?);
        let (role, role_binding) = self.leader_election_role();
        objects.push(serde_json::to_value(role)?);
        objects.push(serde_json::to_value(role_binding)?);
        objects.push(serde_json::to_value(self.metrics_service())?);
        let webhooks = operator.serves_webhooks();
        if webhooks {
            objects.push(serde_json::to_value(self.webhook_service())?);
            if let WebhookCertificates::CertManager { .. } = &self.certificates {
                objects.push(self.certificate());
            }
        }
        objects.push(serde_json::to_value(self.deployment(webhooks))?);
        if webhooks && !self.registers_webhooks() {
            objects.extend(self.webhook_configurations(operator)?);
        }
        Ok(objects)
    }

    /// The Role and RoleBinding of the leader election Lease, in the operator's namespace.
    fn leader_election_role(&self) -> (Role, RoleBinding) {
        let mut meta = self.meta(true);
        meta.name = Some(format!("{}-leader-election", self.name));
        let role = Role {
            metadata: meta.clone(),
            rules: Some(vec![rule(
                "coordination.k8s.io",
                vec!["leases".into()],
                if self.shards.is_some() {
                    &["get", "list", "watch", "create", "update", "delete"]
                } else {
                    &["get", "create", "update"]
                },
            )]),
        };
        let binding = RoleBinding {
            metadata: meta.clone(),
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "Role".into(),
                name: meta.name.clone().unwrap_or_default(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: self.name.clone(),
                namespace: Some(self.namespace.clone()),
                ..Subject::default()
            }]),
        };
        (role, binding)
    }

    /// The cert-manager Certificate of the webhook Service's names.
    fn certificate(&self) -> Value {
        let WebhookCertificates::CertManager {
            issuer,
            cluster_issuer,
        } = &self.certificates
        else {
            return Value::Null;
        };
        let service = self.webhook_service_name();
        let ns = &self.namespace;
        serde_json::json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": service, "namespace": ns, "labels": self.labels()},
            "spec": {
                "secretName": format!("{service}-tls"),
                "dnsNames": [format!("{service}.{ns}.svc"), format!("{service}.{ns}.svc.cluster.local")],
                "issuerRef": {
                    "name": issuer,
                    "kind": if *cluster_issuer { "ClusterIssuer" } else { "Issuer" },
                },
            },
        })
    }

    /// The webhook configurations, for cert-manager's CA injector to complete.
    fn webhook_configurations(&self, operator: &Operator) -> Result<Vec<Value>, Error> {
        let mut handlers = Vec::new();
        for resource in operator
            .resources
            .iter()
            .filter(|r| !r.admission.is_empty())
        {
            let Target::Known(api_resource) = &resource.target else {
                return Err(Error::Config(format!(
                    "the webhook configurations need the group, version and plural of {}; \
                     register it with Resource::custom or Resource::of, or let the operator \
                     register its configurations",
                    resource.target
                )));
            };
            for spec in &resource.admission {
                handlers.push(crate::webhooks::Served {
                    spec: spec.clone(),
                    resource: api_resource.clone(),
                });
            }
        }
        let settings = operator
            .webhooks
            .clone()
            .unwrap_or_else(|| crate::webhooks::Webhooks::listen(([0, 0, 0, 0], 9443).into()))
            .service(&self.namespace, &self.webhook_service_name())
            .name(&self.name);
        let inject = format!("{}/{}", self.namespace, self.webhook_service_name());
        let mut out = Vec::new();
        for mutating in [false, true] {
            let entries = crate::webhooks::configuration_entries(
                &handlers,
                &settings,
                mutating,
                None,
                |_| None,
            );
            if entries.is_empty() {
                continue;
            }
            let resource = crate::webhooks::configuration_resource(mutating);
            out.push(serde_json::json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": resource.kind,
                "metadata": {
                    "name": self.name,
                    "labels": self.labels(),
                    "annotations": {"cert-manager.io/inject-ca-from": inject},
                },
                "webhooks": entries,
            }));
        }
        Ok(out)
    }

    /// The objects as one multi-document YAML stream: what `<operator> manifests` prints.
    ///
    /// # Errors
    /// As [`objects`](Self::objects), and [`Error::Config`] when YAML rendering fails.
    pub fn render(&self, operator: &Operator) -> Result<String, Error> {
        to_yaml(&self.objects(operator)?)
    }
}

/// Renders objects as a multi-document YAML stream, each document starting with `---`.
///
/// ```
/// let yaml = kopr::manifests::to_yaml(&[serde_json::json!({"kind": "ConfigMap"})])?;
/// assert_eq!(yaml, "---\nkind: ConfigMap\n");
/// # Ok::<(), kopr::Error>(())
/// ```
///
/// # Errors
/// [`Error::Config`] when an object cannot be rendered as YAML.
pub fn to_yaml<T: serde::Serialize>(objects: &[T]) -> Result<String, Error> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        let text = serde_saphyr::to_string(object)
            .map_err(|e| Error::Config(format!("rendering YAML: {e}")))?;
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

fn rule(group: &str, resources: Vec<String>, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(resources),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..PolicyRule::default()
    }
}

/// The RBAC kind of a served resource. A resource looked up by a group-qualified name
/// (`greetings.example.com`) is taken as plural and group; one looked up by a bare kind or
/// short name cannot be resolved without a server and is granted by that (lowercased) name in
/// every group; register it with `Resource::dynamic` or a typed resource for exact rules.
fn served_kind(target: &Target) -> ResourceKind {
    match target {
        Target::Known(resource) => ResourceKind::new(&resource.group, &resource.plural),
        Target::Lookup(name) => match name.split_once('.') {
            Some((plural, group)) => ResourceKind::new(group, plural),
            None => ResourceKind::new("*", &name.to_ascii_lowercase()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Resource;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn verbs_for(rules: &[PolicyRule], group: &str, resource: &str) -> Vec<String> {
        rules
            .iter()
            .filter(|r| r.api_groups.as_deref() == Some(&[group.to_owned()][..]))
            .filter(|r| {
                r.resources
                    .as_ref()
                    .is_some_and(|rs| rs.iter().any(|x| x == resource))
            })
            .flat_map(|r| r.verbs.clone())
            .collect()
    }

    #[test]
    fn owned_kinds_are_children_and_watched_kinds_are_read() {
        use k8s_openapi::api::core::v1::Secret;
        let reconcile = |_: crate::Context<kube::api::DynamicObject>| async {
            Ok(crate::reconcile::Action::await_change())
        };
        let operator = Operator::new().resource(
            Resource::dynamic("example.com", "v1", "greetings")
                .reconcile(reconcile)
                .owns::<ConfigMap>()
                .watches(|_: &Secret| Vec::new()),
        );
        let rules = Manifests::new("op").rules(&operator);
        assert_eq!(
            verbs_for(&rules, "", "configmaps"),
            ["create", "get", "list", "watch", "patch", "delete"]
        );
        assert_eq!(verbs_for(&rules, "", "secrets"), ["get", "list", "watch"]);
    }

    #[test]
    fn rules_follow_resources_children_and_crd_installation() {
        let operator = Operator::new()
            .resource(Resource::dynamic("example.com", "v1", "greetings"))
            .resource(Resource::lookup("books.christianb93.github.com"));
        let plain = Manifests::new("op").rules(&operator);
        assert_eq!(
            verbs_for(&plain, "example.com", "greetings"),
            ["get", "list", "watch", "patch"]
        );
        assert_eq!(
            verbs_for(&plain, "example.com", "greetings/status"),
            ["patch"]
        );
        assert_eq!(
            verbs_for(&plain, "christianb93.github.com", "books"),
            ["get", "list", "watch", "patch"]
        );
        assert_eq!(verbs_for(&plain, "", "events"), ["create"]);
        assert!(verbs_for(&plain, "apiextensions.k8s.io", "customresourcedefinitions").is_empty());
        assert!(verbs_for(&plain, "", "configmaps").is_empty());

        let full = Manifests::new("op")
            .installs_crds()
            .child::<ConfigMap>()
            .rules(&operator);
        assert_eq!(
            verbs_for(&full, "apiextensions.k8s.io", "customresourcedefinitions"),
            ["get", "list", "watch", "create", "patch"]
        );
        assert_eq!(
            verbs_for(&full, "", "configmaps"),
            ["create", "get", "list", "watch", "patch", "delete"]
        );
        let reading = Manifests::new("op")
            .reads::<k8s_openapi::api::core::v1::Pod>()
            .reads_kind(ResourceKind::new("", "pods/log"))
            .reads::<ConfigMap>()
            .child::<ConfigMap>()
            .rules(&operator);
        assert_eq!(verbs_for(&reading, "", "pods"), ["get", "list", "watch"]);
        assert_eq!(
            verbs_for(&reading, "", "pods/log"),
            ["get", "list", "watch"]
        );
        // A kind that is also a child keeps the child's verbs, once.
        assert_eq!(
            verbs_for(&reading, "", "configmaps"),
            ["create", "get", "list", "watch", "patch", "delete"]
        );
    }

    #[test]
    fn objects_are_complete_and_ordered() {
        let operator =
            Operator::new().resource(Resource::dynamic("example.com", "v1", "greetings"));
        let manifests = Manifests::new("greeting")
            .image("registry.local/greeting:1")
            .namespace("operators")
            .run_args(["--timer-interval", "30"]);
        let objects = manifests.objects(&operator).unwrap();
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "Service",
                "Deployment"
            ]
        );
        assert_eq!(objects[6]["metadata"]["name"], "greeting-metrics");
        // The leader election Lease, in the operator's namespace only.
        assert_eq!(objects[4]["metadata"]["name"], "greeting-leader-election");
        assert_eq!(objects[4]["metadata"]["namespace"], "operators");
        assert_eq!(
            objects[4]["rules"][0],
            serde_json::json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                               "verbs": ["get", "create", "update"]})
        );
        assert_eq!(objects[5]["roleRef"]["kind"], "Role");
        let deployment = &objects[7];
        assert_eq!(deployment["metadata"]["namespace"], "operators");
        assert_eq!(deployment["spec"]["replicas"], 2);
        assert_eq!(deployment["spec"]["strategy"]["type"], "RollingUpdate");
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        let probes = &pod["containers"][0];
        assert_eq!(probes["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(probes["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert_eq!(probes["readinessProbe"]["httpGet"]["port"], "health");
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "registry.local/greeting:1");
        assert_eq!(container["command"], serde_json::json!(["greeting"]));
        assert_eq!(
            container["args"],
            serde_json::json!([
                "run",
                "-A",
                "--health-listen",
                "0.0.0.0:8081",
                "--metrics-listen",
                "0.0.0.0:8080",
                "--timer-interval",
                "30"
            ])
        );
        assert_eq!(objects[3]["subjects"][0]["namespace"], "operators");
        let yaml = manifests.render(&operator).unwrap();
        assert_eq!(yaml.matches("---\n").count(), 8);
        assert!(yaml.contains("kind: Deployment"), "{yaml}");
    }

    async fn check(_: crate::Review<kube::api::DynamicObject>) -> Result<(), crate::Denial> {
        Ok(())
    }

    #[test]
    fn sharded_replicas_run_with_shards_and_may_list_and_delete_leases() {
        let operator =
            Operator::new().resource(Resource::dynamic("example.com", "v1", "greetings"));
        let objects = Manifests::new("greeting")
            .shards(3)
            .objects(&operator)
            .unwrap();
        let role = objects
            .iter()
            .find(|o| o["kind"] == "Role")
            .expect("a Lease role");
        assert_eq!(
            role["rules"][0]["verbs"],
            serde_json::json!(["get", "list", "watch", "create", "update", "delete"])
        );
        let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(deployment["spec"]["replicas"], 3);
        let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
        assert_eq!(args[0], "run");
        assert!(
            args.as_array()
                .unwrap()
                .contains(&serde_json::json!("--shards"))
        );
    }

    #[test]
    fn cert_manager_certificates_come_with_the_configurations() {
        let operator = Operator::new().resource(
            Resource::dynamic("example.com", "v1", "greetings").on_validate("check", check),
        );
        let manifests = Manifests::new("greeting")
            .namespace("ops")
            .webhook_certificates(WebhookCertificates::CertManager {
                issuer: "self-signed".into(),
                cluster_issuer: true,
            });
        let objects = manifests.objects(&operator).unwrap();
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "Service",
                "Service",
                "Certificate",
                "Deployment",
                "ValidatingWebhookConfiguration"
            ]
        );
        let certificate = &objects[8];
        assert_eq!(certificate["spec"]["secretName"], "greeting-webhooks-tls");
        assert_eq!(
            certificate["spec"]["dnsNames"][0],
            "greeting-webhooks.ops.svc"
        );
        assert_eq!(certificate["spec"]["issuerRef"]["kind"], "ClusterIssuer");
        let pod = &objects[9]["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][0]["secret"]["secretName"],
            "greeting-webhooks-tls"
        );
        let container = &pod["containers"][0];
        assert_eq!(container["volumeMounts"][0]["mountPath"], CERT_DIR);
        let args: Vec<&str> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a.as_str())
            .collect();
        assert_eq!(
            args,
            [
                "run",
                "-A",
                "--health-listen",
                "0.0.0.0:8081",
                "--metrics-listen",
                "0.0.0.0:8080",
                "--webhook-service",
                "ops/greeting-webhooks",
                "--webhook-cert-dir",
                CERT_DIR,
                "--webhook-no-registration"
            ]
        );
        let configuration = &objects[10];
        assert_eq!(
            configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            "ops/greeting-webhooks"
        );
        let webhook = &configuration["webhooks"][0];
        assert_eq!(webhook["name"], "check.greetings.example.com");
        assert_eq!(
            webhook["clientConfig"],
            serde_json::json!({"service": {"namespace": "ops", "name": "greeting-webhooks",
                "path": "/validate/check.greetings.example.com", "port": 443}})
        );
        // The configurations come with the manifests: no RBAC to register them.
        let rules = manifests.rules(&operator);
        assert!(
            verbs_for(
                &rules,
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations"
            )
            .is_empty()
        );

        // A Secret of one's own: mounted, and the operator registers with its CA.
        let own = Manifests::new("greeting")
            .webhook_certificates(WebhookCertificates::Secret("my-tls".into()));
        let objects = own.objects(&operator).unwrap();
        let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["volumes"][0]["secret"]["secretName"], "my-tls");
        assert!(
            !objects
                .iter()
                .any(|o| o["kind"] == "ValidatingWebhookConfiguration")
        );
        assert_eq!(
            verbs_for(
                &own.rules(&operator),
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations"
            ),
            ["get", "create", "patch", "delete"]
        );
        // A resource known only by name cannot be put in a configuration.
        let lookup = Operator::new()
            .resource(Resource::lookup("greetings.example.com").on_validate("check", check));
        assert!(
            manifests
                .objects(&lookup)
                .is_err_and(|e| e.to_string().contains("greetings.example.com"))
        );
    }
}
