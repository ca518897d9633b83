//! Column definitions per resource, as kube-apiserver 1.32's internal
//! printers declare them (name, type, format, description, priority).
//!
//! The descriptions are the API's own field documentation strings, which
//! kube-apiserver returns verbatim; they are reproduced so clients see the
//! same table headers.

use serde_json::{Value, json};

use super::docs::*;

// --- descriptions (API field documentation) --------------------------------

const META_NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const META_CREATED: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const CONTAINERS: &str = "Names of each container in the template.";
const IMAGES: &str = "Images referenced by each container in the template.";
const READY_PODS: &str = "Number of the pod with ready state";

const POD_IP: &str = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";
const POD_NODE: &str = "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename";
const POD_NOMINATED: &str = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";
const POD_GATES: &str = "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";

const SVC_TYPE: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
const SVC_CLUSTER_IP: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const SVC_EXTERNAL_IPS: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
const SVC_PORTS: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const SVC_SELECTOR: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";

const NODE_KUBELET: &str = "Kubelet Version reported by the node.";
const NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
const NODE_OS_IMAGE: &str =
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";
const NODE_KERNEL: &str =
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
const NODE_RUNTIME: &str = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";

const EV_LAST: &str = "The time at which the most recent occurrence of this event was recorded.";
const EV_TYPE: &str =
    "Type of this event (Normal, Warning), new types could be added in the future";
const EV_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
const EV_OBJECT: &str = "The object that this event is about.";
const EV_FIELD_PATH: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
const EV_SOURCE: &str =
    "The component reporting this event. Should be a short machine understandable string.";
const EV_MESSAGE: &str = "A human-readable description of the status of this operation.";
const EV_FIRST: &str =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
const EV_COUNT: &str = "The number of times this event has occurred.";

const SECRET_TYPE: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
const SECRET_DATA: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";
const SA_SECRETS: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";
const CM_DATA: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";

const DEPLOY_UPDATED: &str = "Total number of non-terminated pods targeted by this deployment that have the desired template spec.";
const DEPLOY_AVAILABLE: &str = "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.";
const DEPLOY_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.";
const RS_DESIRED: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";
const RS_CURRENT: &str = "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";
const RS_READY: &str =
    "readyReplicas is the number of pods targeted by this ReplicaSet with a Ready Condition.";
const RS_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
const JOB_SUCCEEDED: &str = "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.";
const JOB_SELECTOR: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
const LEASE_HOLDER: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";
const RB_ROLE_REF: &str = "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.";
const CRB_ROLE_REF: &str = "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.";
const WEBHOOKS: &str = "Webhooks indicates the number of webhooks registered in this configuration";
const VALIDATIONS: &str =
    "Validations indicates the number of validation rules defined in this configuration";
const PARAM_KIND: &str =
    "ParamKind specifies the kind of resources used to parameterize this policy";
const POLICY_NAME: &str =
    "PolicyName indicates the policy definition which the policy binding binded to";
const PARAM_REF: &str = "ParamRef indicates the param resource which sets the configration param";

// --- columns -----------------------------------------------------------------

/// Which printer a resource uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Namespace,
    ConfigMap,
    Secret,
    Service,
    ServiceAccount,
    Node,
    Event,
    Deployment,
    ReplicaSet,
    StatefulSet,
    Job,
    Lease,
    RoleBinding,
    ClusterRoleBinding,
    WebhookConfiguration,
    AdmissionPolicy,
    AdmissionPolicyBinding,
    PodTemplate,
    PodDisruptionBudget,
    ReplicationController,
    DaemonSet,
    CronJob,
    Ingress,
    IngressClass,
    Endpoints,
    PersistentVolume,
    PersistentVolumeClaim,
    ComponentStatus,
    HorizontalPodAutoscaler,
    NetworkPolicy,
    CertificateSigningRequest,
    StorageClass,
    ControllerRevision,
    ResourceQuota,
    PriorityClass,
    RuntimeClass,
    VolumeAttachment,
    EndpointSlice,
    CsiNode,
    CsiDriver,
    CsiStorageCapacity,
    FlowSchema,
    PriorityLevelConfiguration,
    /// kube-aggregator's APIService convertor.
    ApiService,
    /// `DefaultTableConvertor`: Name, Created At.
    Default,
}

fn col(name: &str, ty: &str, format: &str, description: &str, priority: i32) -> Value {
    json!({
        "name": name,
        "type": ty,
        "format": format,
        "description": description,
        "priority": priority,
    })
}

fn name_col() -> Value {
    col("Name", "string", "name", META_NAME, 0)
}

fn age_col() -> Value {
    col("Age", "string", "", META_CREATED, 0)
}

fn s(name: &str, description: &str) -> Value {
    col(name, "string", "", description, 0)
}

fn wide(name: &str, description: &str) -> Value {
    col(name, "string", "", description, 1)
}

fn int(name: &str, description: &str) -> Value {
    col(name, "integer", "", description, 0)
}

fn boolean(name: &str, description: &str) -> Value {
    col(name, "boolean", "", description, 0)
}

/// The column definitions of a printer.
pub fn columns(kind: Kind) -> Vec<Value> {
    match kind {
        Kind::Pod => vec![
            name_col(),
            s(
                "Ready",
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            s(
                "Status",
                "The aggregate status of the containers in this pod.",
            ),
            s(
                "Restarts",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            age_col(),
            wide("IP", POD_IP),
            wide("Node", POD_NODE),
            wide("Nominated Node", POD_NOMINATED),
            wide("Readiness Gates", POD_GATES),
        ],
        Kind::Namespace => vec![
            name_col(),
            s("Status", "The status of the namespace"),
            age_col(),
        ],
        Kind::ConfigMap => vec![name_col(), s("Data", CM_DATA), age_col()],
        Kind::Secret => vec![
            name_col(),
            s("Type", SECRET_TYPE),
            s("Data", SECRET_DATA),
            age_col(),
        ],
        Kind::Service => vec![
            name_col(),
            s("Type", SVC_TYPE),
            s("Cluster-IP", SVC_CLUSTER_IP),
            s("External-IP", SVC_EXTERNAL_IPS),
            s("Port(s)", SVC_PORTS),
            age_col(),
            wide("Selector", SVC_SELECTOR),
        ],
        Kind::ServiceAccount => vec![name_col(), s("Secrets", SA_SECRETS), age_col()],
        Kind::Node => vec![
            name_col(),
            s("Status", "The status of the node"),
            s("Roles", "The roles of the node"),
            age_col(),
            s("Version", NODE_KUBELET),
            wide("Internal-IP", NODE_ADDRESSES),
            wide("External-IP", NODE_ADDRESSES),
            wide("OS-Image", NODE_OS_IMAGE),
            wide("Kernel-Version", NODE_KERNEL),
            wide("Container-Runtime", NODE_RUNTIME),
        ],
        Kind::Event => vec![
            s("Last Seen", EV_LAST),
            s("Type", EV_TYPE),
            s("Reason", EV_REASON),
            s("Object", EV_OBJECT),
            wide("Subobject", EV_FIELD_PATH),
            wide("Source", EV_SOURCE),
            s("Message", EV_MESSAGE),
            wide("First Seen", EV_FIRST),
            wide("Count", EV_COUNT),
            col("Name", "string", "name", META_NAME, 1),
        ],
        Kind::Deployment => vec![
            name_col(),
            s("Ready", READY_PODS),
            s("Up-to-date", DEPLOY_UPDATED),
            s("Available", DEPLOY_AVAILABLE),
            age_col(),
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide("Selector", DEPLOY_SELECTOR),
        ],
        Kind::ReplicaSet => vec![
            name_col(),
            int("Desired", RS_DESIRED),
            int("Current", RS_CURRENT),
            int("Ready", RS_READY),
            age_col(),
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide("Selector", RS_SELECTOR),
        ],
        Kind::StatefulSet => vec![
            name_col(),
            s("Ready", READY_PODS),
            age_col(),
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
        ],
        Kind::Job => vec![
            name_col(),
            s("Status", "Status of the job."),
            s("Completions", JOB_SUCCEEDED),
            s("Duration", "Time required to complete the job."),
            age_col(),
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide("Selector", JOB_SELECTOR),
        ],
        Kind::Lease => vec![name_col(), s("Holder", LEASE_HOLDER), age_col()],
        Kind::RoleBinding => vec![
            name_col(),
            s("Role", RB_ROLE_REF),
            age_col(),
            wide("Users", "Users in the roleBinding"),
            wide("Groups", "Groups in the roleBinding"),
            wide("ServiceAccounts", "ServiceAccounts in the roleBinding"),
        ],
        Kind::ClusterRoleBinding => vec![
            name_col(),
            s("Role", CRB_ROLE_REF),
            age_col(),
            wide("Users", "Users in the clusterRoleBinding"),
            wide("Groups", "Groups in the clusterRoleBinding"),
            wide(
                "ServiceAccounts",
                "ServiceAccounts in the clusterRoleBinding",
            ),
        ],
        Kind::WebhookConfiguration => vec![name_col(), int("Webhooks", WEBHOOKS), age_col()],
        Kind::AdmissionPolicy => vec![
            name_col(),
            int("Validations", VALIDATIONS),
            s("ParamKind", PARAM_KIND),
            age_col(),
        ],
        Kind::AdmissionPolicyBinding => vec![
            name_col(),
            s("PolicyName", POLICY_NAME),
            s("ParamRef", PARAM_REF),
            age_col(),
        ],
        Kind::Default => vec![name_col(), col("Created At", "date", "", META_CREATED, 0)],
        other => more_columns(other),
    }
}

/// The column definitions of the printers added for the issue-17 resources.
fn more_columns(kind: Kind) -> Vec<Value> {
    match kind {
        Kind::PodTemplate => vec![
            name_col(),
            s("Containers", CONTAINERS),
            s("Images", IMAGES),
            s("Pod Labels", POD_LABELS),
        ],
        Kind::PodDisruptionBudget => vec![
            name_col(),
            s("Min Available", PDB_MIN),
            s("Max Unavailable", PDB_MAX),
            int("Allowed Disruptions", PDB_ALLOWED),
            age_col(),
        ],
        Kind::ReplicationController => vec![
            name_col(),
            int("Desired", RC_DESIRED),
            int("Current", RC_CURRENT),
            int("Ready", RC_READY),
            age_col(),
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide("Selector", RC_SELECTOR),
        ],
        Kind::DaemonSet => vec![
            name_col(),
            int("Desired", DS_DESIRED),
            int("Current", DS_CURRENT),
            int("Ready", DS_READY),
            int("Up-to-date", DS_UPDATED),
            int("Available", DS_AVAILABLE),
            s("Node Selector", POD_NODE_SELECTOR),
            age_col(),
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide("Selector", DS_SELECTOR),
        ],
        Kind::CronJob => vec![
            name_col(),
            s("Schedule", CJ_SCHEDULE),
            s("Timezone", CJ_TIME_ZONE),
            boolean("Suspend", CJ_SUSPEND),
            int("Active", CJ_ACTIVE),
            s("Last Schedule", CJ_LAST_SCHEDULE),
            age_col(),
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide("Selector", JOB_SELECTOR),
        ],
        Kind::Ingress => vec![
            name_col(),
            s("Class", ING_CLASS),
            s("Hosts", ING_HOSTS),
            s("Address", ING_ADDRESS),
            s("Ports", ING_PORTS),
            age_col(),
        ],
        Kind::IngressClass => vec![
            name_col(),
            s("Controller", IC_CONTROLLER),
            s("Parameters", IC_PARAMETERS),
            age_col(),
        ],
        Kind::Endpoints => vec![name_col(), s("Endpoints", ENDPOINTS_SUBSETS), age_col()],
        Kind::PersistentVolume => vec![
            name_col(),
            s("Capacity", PV_CAPACITY),
            s("Access Modes", PV_ACCESS_MODES),
            s("Reclaim Policy", PV_RECLAIM_POLICY),
            s("Status", PV_PHASE),
            s("Claim", PV_CLAIM_REF),
            s("StorageClass", PV_CLASS),
            s("VolumeAttributesClass", PV_ATTRIBUTES_CLASS),
            s("Reason", PV_REASON),
            age_col(),
            wide("VolumeMode", PV_VOLUME_MODE),
        ],
        Kind::PersistentVolumeClaim => vec![
            name_col(),
            s("Status", PVC_PHASE),
            s("Volume", PVC_VOLUME_NAME),
            s("Capacity", PVC_CAPACITY),
            s("Access Modes", PVC_ACCESS_MODES),
            s("StorageClass", PVC_CLASS),
            s("VolumeAttributesClass", PVC_ATTRIBUTES_CLASS),
            age_col(),
            wide("VolumeMode", PVC_VOLUME_MODE),
        ],
        Kind::ComponentStatus => vec![
            name_col(),
            s("Status", CS_STATUS),
            s("Message", CS_MESSAGE),
            s("Error", CS_ERROR),
        ],
        Kind::HorizontalPodAutoscaler => vec![
            name_col(),
            s("Reference", HPA_REFERENCE),
            s("Targets", HPA_METRICS),
            s("MinPods", HPA_MIN),
            s("MaxPods", HPA_MAX),
            s("Replicas", HPA_CURRENT),
            age_col(),
        ],
        Kind::NetworkPolicy => vec![name_col(), s("Pod-Selector", NP_POD_SELECTOR), age_col()],
        Kind::CertificateSigningRequest => vec![
            name_col(),
            age_col(),
            s("SignerName", CSR_SIGNER),
            s("Requestor", CSR_REQUEST),
            s("RequestedDuration", CSR_EXPIRATION),
            s("Condition", CSR_CONDITIONS),
        ],
        Kind::StorageClass => vec![
            name_col(),
            s("Provisioner", SC_PROVISIONER),
            s("ReclaimPolicy", SC_RECLAIM_POLICY),
            s("VolumeBindingMode", SC_BINDING_MODE),
            s("AllowVolumeExpansion", SC_EXPANSION),
            age_col(),
        ],
        Kind::ControllerRevision => vec![
            name_col(),
            s("Controller", CR_CONTROLLER),
            s("Revision", CR_REVISION),
            age_col(),
        ],
        Kind::ResourceQuota => vec![
            name_col(),
            s("Request", RQ_REQUEST),
            s("Limit", RQ_LIMIT),
            age_col(),
        ],
        Kind::PriorityClass => vec![
            name_col(),
            int("Value", PC_VALUE),
            boolean("Global-Default", PC_GLOBAL_DEFAULT),
            age_col(),
            s("PreemptionPolicy", PC_PREEMPTION),
        ],
        // printers.go describes Handler with ObjectMeta's (absent) "handler" doc.
        Kind::RuntimeClass => vec![name_col(), s("Handler", ""), age_col()],
        Kind::VolumeAttachment => vec![
            name_col(),
            col("Attacher", "string", "name", VA_ATTACHER, 0),
            s("PV", VA_PV),
            s("Node", VA_NODE),
            boolean("Attached", VA_ATTACHED),
            age_col(),
        ],
        Kind::EndpointSlice => vec![
            name_col(),
            s("AddressType", ES_ADDRESS_TYPE),
            s("Ports", ES_PORTS),
            s("Endpoints", ES_ENDPOINTS),
            age_col(),
        ],
        Kind::CsiNode => vec![name_col(), int("Drivers", CSINODE_DRIVERS), age_col()],
        Kind::CsiDriver => vec![
            name_col(),
            boolean("AttachRequired", CSI_ATTACH_REQUIRED),
            boolean("PodInfoOnMount", CSI_POD_INFO),
            boolean("StorageCapacity", CSI_STORAGE_CAPACITY),
            s("TokenRequests", CSI_TOKEN_REQUESTS),
            boolean("RequiresRepublish", CSI_REPUBLISH),
            s("Modes", CSI_MODES),
            age_col(),
        ],
        Kind::CsiStorageCapacity => vec![
            name_col(),
            s("StorageClassName", CSC_CLASS),
            s("Capacity", CSC_CAPACITY),
        ],
        Kind::FlowSchema => vec![
            name_col(),
            s("PriorityLevel", FS_PRIORITY_LEVEL),
            s("MatchingPrecedence", FS_PRECEDENCE),
            s("DistinguisherMethod", FS_DISTINGUISHER),
            age_col(),
            s("MissingPL", FS_MISSING_PL),
        ],
        Kind::PriorityLevelConfiguration => vec![
            name_col(),
            s("Type", PLC_TYPE),
            s("NominalConcurrencyShares", PLC_SHARES),
            s("Queues", PLC_QUEUES),
            s("HandSize", PLC_HAND_SIZE),
            s("QueueLengthLimit", PLC_QUEUE_LENGTH),
            age_col(),
        ],
        Kind::ApiService => vec![
            name_col(),
            s("Service", APISVC_SERVICE),
            s("Available", APISVC_AVAILABLE),
            age_col(),
        ],
        _ => vec![name_col(), col("Created At", "date", "", META_CREATED, 0)],
    }
}
