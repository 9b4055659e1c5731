package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=Upgrade,verb=create,subresource=upgrade,input=NestedClusterUpgrade,result=NestedCluster
// +genclient:method=Kubeconfig,verb=create,subresource=kubeconfig,input=NestedClusterKubeconfigRequest,result=NestedClusterKubeconfigRequest
// +genclient:method=JoinToken,verb=create,subresource=jointoken,input=NestedClusterJoinTokenRequest,result=NestedClusterJoinTokenRequest
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedCluster is a Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) that capn runs as pods in the
// management cluster on behalf of a tenant.
type NestedCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired control plane.
	// +optional
	Spec NestedClusterSpec `json:"spec,omitempty"`
	// status is what the provisioner last observed. Read-only.
	// +optional
	Status NestedClusterStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedClusterList is a list of NestedClusters.
type NestedClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []NestedCluster `json:"items"`
}

// NestedClusterSpec is the desired state of a tenant control plane.
type NestedClusterSpec struct {
	// version is the Kubernetes version of the control plane, e.g. v1.37.2.
	// Defaults to the newest supported version. Changing it starts an ordered
	// upgrade (apiserver, controller-manager, scheduler; etcd is untouched);
	// it may move forward by at most one minor at a time.
	// +optional
	Version string `json:"version,omitempty"`

	// clusterNetwork holds the tenant's service and pod ranges and DNS domain.
	// +optional
	ClusterNetwork ClusterNetwork `json:"clusterNetwork,omitempty"`

	// etcd selects a managed etcd (the default) or an external one.
	// +optional
	Etcd EtcdSpec `json:"etcd,omitempty"`

	// apiServer configures kube-apiserver. Its replicas are what /scale serves.
	// +optional
	APIServer APIServerSpec `json:"apiServer,omitempty"`

	// controllerManager configures kube-controller-manager.
	// +optional
	ControllerManager ComponentSpec `json:"controllerManager,omitempty"`

	// scheduler configures kube-scheduler.
	// +optional
	Scheduler ComponentSpec `json:"scheduler,omitempty"`

	// dataPlane selects where the tenant's pods run. Immutable. A create
	// that leaves mode empty gets Shared; an object stored before the field
	// existed keeps None (an absent mode reads as None).
	// +optional
	DataPlane DataPlaneSpec `json:"dataPlane,omitempty"`

	// syncer configures capn-syncer, the component that runs the tenant's
	// pods in Shared mode. Its image may only be one the provider allows
	// (capn-apiserver --allowed-syncer-images): the syncer holds a
	// management credential.
	// +optional
	Syncer ComponentSpec `json:"syncer,omitempty"`

	// dns configures the tenant's cluster DNS: a CoreDNS addon in its
	// kube-system that capn keeps in place (Shared mode only).
	// +optional
	DNS DNSSpec `json:"dns,omitempty"`

	// metrics configures the tenant's resource metrics: a metrics-server
	// addon in its kube-system, behind the APIService
	// v1beta1.metrics.k8s.io, that capn keeps in place (Shared mode only),
	// for kubectl top and CPU and memory autoscaling.
	// +optional
	Metrics MetricsSpec `json:"metrics,omitempty"`

	// sleep puts the control plane to sleep: see SleepSpec.
	// +optional
	Sleep SleepSpec `json:"sleep,omitempty"`

	// paused stops the provisioner from changing anything for this cluster.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// restoreFrom creates the cluster with the data of a Completed
	// NestedClusterBackup in its namespace: capn writes the backup into
	// the new cluster's etcd (managed or pooled) before its apiserver
	// first starts. Set on create only, by whoever may get the backup;
	// immutable.
	// +optional
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty"`
}

// RestoreSource names the backup a cluster is created from.
type RestoreSource struct {
	// backup is the name of a NestedClusterBackup in the cluster's
	// namespace.
	Backup string `json:"backup"`
}

// SleepSpec puts a tenant control plane to sleep, to cost nothing but its
// data while nobody uses it.
type SleepSpec struct {
	// asleep scales kube-apiserver, kube-controller-manager, kube-scheduler
	// and capn-syncer to zero and stops the tenant's pods on the shared data
	// plane (their controllers replace them on wake; a bare pod ends Failed,
	// as after losing its node). A managed etcd on EmptyDir or Memory
	// storage keeps running, since stopping it would lose the data; on a
	// PersistentVolumeClaim it stops too. An external etcd is untouched.
	// Setting it back to false wakes the cluster with the same data. An
	// upgrade in progress finishes before the cluster sleeps, and
	// spec.version cannot change while it sleeps.
	// +optional
	Asleep bool `json:"asleep,omitempty"`
	// afterInactivity puts the cluster to sleep by itself once nobody has
	// sent its apiserver a request for this long: requests from the
	// tenant's own control plane, its DNS addon and capn do not count.
	// Such a sleep ends on any spec change and on a /kubeconfig request.
	// At least 30s; unset, the cluster sleeps only when asked.
	// +optional
	AfterInactivity *metav1.Duration `json:"afterInactivity,omitempty"`
}

// DNSMode selects the tenant's cluster DNS.
// +enum
type DNSMode string

const (
	// DNSCoreDNS: capn runs CoreDNS in the tenant's kube-system, behind the
	// Service kube-dns, and tenant pods resolve through it. The default in
	// Shared mode.
	DNSCoreDNS DNSMode = "CoreDNS"
	// DNSNone: no cluster DNS; capn removes its addon. Tenant pods resolve
	// nothing by name.
	DNSNone DNSMode = "None"
)

// DNSSpec is the tenant's cluster DNS addon.
type DNSSpec struct {
	// mode is CoreDNS (the default when empty) or None.
	// +optional
	Mode DNSMode `json:"mode,omitempty"`
	// image overrides the CoreDNS image. The addon runs as a tenant
	// workload, so any image a tenant pod may run is allowed.
	// +optional
	Image string `json:"image,omitempty"`
}

// MetricsMode selects the tenant's resource metrics.
// +enum
type MetricsMode string

const (
	// MetricsServer: capn runs metrics-server in the tenant's kube-system
	// and registers it as v1beta1.metrics.k8s.io; it scrapes the virtual
	// Nodes, which serve the tenant's pods' share of the host kubelets'
	// resource metrics. The default in Shared mode.
	MetricsServer MetricsMode = "MetricsServer"
	// MetricsNone: no resource metrics; capn removes its addon. kubectl
	// top and resource-based autoscaling find no metrics API.
	MetricsNone MetricsMode = "None"
)

// MetricsSpec is the tenant's metrics addon.
type MetricsSpec struct {
	// mode is MetricsServer (the default when empty) or None.
	// +optional
	Mode MetricsMode `json:"mode,omitempty"`
	// image overrides the metrics-server image. The addon runs as a
	// tenant workload, so any image a tenant pod may run is allowed.
	// +optional
	Image string `json:"image,omitempty"`
}

// DataPlaneMode selects the tenant's data plane.
// +enum
type DataPlaneMode string

const (
	// DataPlaneNone: a control plane without nodes (pods stay Pending
	// until the tenant brings its own).
	DataPlaneNone DataPlaneMode = "None"
	// DataPlaneShared: virtual Nodes backed by the management cluster's
	// nodes; capn-syncer runs the tenant's pods there, in a workload
	// namespace of the tenant's own. The tenant's service range is the
	// management cluster's, so that Service IPs mean the same on both.
	DataPlaneShared DataPlaneMode = "Shared"
)

// DataPlaneSpec is where and how much the tenant's pods run.
type DataPlaneSpec struct {
	// mode is None or Shared. Immutable.
	// +optional
	Mode DataPlaneMode `json:"mode,omitempty"`
	// nodeSelector narrows the management nodes that back the tenant's
	// virtual Nodes. It is ANDed with the provider's selector: it can only
	// choose among the nodes the provider offers.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// quota is the hard limit of the workload namespace's ResourceQuota
	// (pods, requests.cpu, requests.memory, limits.cpu, limits.memory,
	// services, configmaps, secrets). A resource left out gets the
	// provider's default; none may exceed the provider's maximum.
	// +optional
	Quota corev1.ResourceList `json:"quota,omitempty"`
}

// ClusterNetwork is the tenant cluster's network configuration.
type ClusterNetwork struct {
	// serviceCIDR is the tenant's Service IP range. Defaults to 10.96.0.0/12.
	// +optional
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// podCIDR is the tenant's Pod IP range. Defaults to 10.244.0.0/16.
	// Must not overlap serviceCIDR.
	// +optional
	PodCIDR string `json:"podCIDR,omitempty"`
	// dnsDomain is the tenant's cluster DNS domain. Defaults to cluster.local.
	// +optional
	DNSDomain string `json:"dnsDomain,omitempty"`
}

// EtcdSpec selects where the control plane keeps its state. Exactly one of
// managed, external or pool is set; managed is the default.
type EtcdSpec struct {
	// managed runs a basic etcd for this cluster as pods.
	// +optional
	Managed *ManagedEtcd `json:"managed,omitempty"`
	// external points the apiserver at an etcd that capn does not run.
	// +optional
	External *ExternalEtcd `json:"external,omitempty"`
	// pool names a NestedEtcdPool: the cluster keeps its state in an etcd
	// shared with other tenants, under its own prefix and etcd user.
	// Immutable. The requester needs the verb "use" on the pool.
	// +optional
	Pool string `json:"pool,omitempty"`
}

// ManagedEtcd is a basic etcd that capn runs for the cluster.
type ManagedEtcd struct {
	// replicas is 1 or 3. Immutable: etcd membership changes are out of scope.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// image overrides the etcd image. It is the only way etcd's image
	// changes; a version upgrade never touches etcd.
	// +optional
	Image string `json:"image,omitempty"`
	// storage is where etcd keeps its data. Immutable.
	// +optional
	Storage EtcdStorage `json:"storage,omitempty"`
	// resources for each etcd container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// EtcdStorageType is where a managed etcd keeps its data.
// +enum
type EtcdStorageType string

const (
	// EtcdStorageMemory keeps data in tmpfs: for development only.
	EtcdStorageMemory EtcdStorageType = "Memory"
	// EtcdStorageEmptyDir keeps data on the node for the pod's lifetime.
	EtcdStorageEmptyDir EtcdStorageType = "EmptyDir"
	// EtcdStoragePersistentVolumeClaim keeps data in one PVC per member.
	EtcdStoragePersistentVolumeClaim EtcdStorageType = "PersistentVolumeClaim"
)

// EtcdStorage configures a managed etcd's data volume.
type EtcdStorage struct {
	// type is Memory, EmptyDir (the default) or PersistentVolumeClaim.
	// +optional
	Type EtcdStorageType `json:"type,omitempty"`
	// size of the volume. Required for PersistentVolumeClaim, optional limit
	// for Memory and EmptyDir.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// storageClassName for PersistentVolumeClaim; empty uses the default class.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// ExternalEtcd is an etcd run by someone else (an operator, a managed
// service). capn only wires the apiserver to it.
type ExternalEtcd struct {
	// endpoints are the etcd client URLs, https://host:port.
	// +listType=atomic
	Endpoints []string `json:"endpoints"`
	// caSecretRef names a Secret in the NestedCluster's namespace whose
	// key ca.crt holds the etcd CA bundle.
	CASecretRef SecretReference `json:"caSecretRef"`
	// clientSecretRef names a kubernetes.io/tls Secret in the NestedCluster's
	// namespace holding the apiserver's etcd client certificate and key.
	ClientSecretRef SecretReference `json:"clientSecretRef"`
	// prefix is the etcd key prefix. Defaults to /registry.
	// +optional
	Prefix string `json:"prefix,omitempty"`
}

// SecretReference names a Secret in the NestedCluster's own namespace.
type SecretReference struct {
	// name of the Secret.
	Name string `json:"name"`
}

// ComponentSpec configures one control-plane component and lets a user swap
// in a custom implementation.
type ComponentSpec struct {
	// replicas of this component. Defaults to 1. kube-controller-manager and
	// kube-scheduler always run leader-elected, so every count is safe.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// image replaces the component's default image for spec.version.
	// +optional
	Image string `json:"image,omitempty"`
	// command replaces the container entrypoint.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// extraArgs are flags added to (or overriding) the generated ones, keyed
	// by flag name without leading dashes. Flags that wire the component to
	// its PKI, etcd or kubeconfig are owned by capn and refused.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`
	// env is added to the component container.
	// +optional
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty"`
	// resources of the component container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// podTemplate is merged (strategic merge) over the generated pod template.
	// Privileged containers, host namespaces and hostPath volumes are refused.
	// +optional
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`
}

// APIServerSpec configures the tenant kube-apiserver.
type APIServerSpec struct {
	ComponentSpec `json:",inline"`
	// service exposes the apiserver in the management cluster.
	// +optional
	Service APIServerService `json:"service,omitempty"`
	// certSANs are extra DNS names or IPs for the serving certificate.
	// +optional
	// +listType=atomic
	CertSANs []string `json:"certSANs,omitempty"`
}

// APIServerService is how the tenant apiserver is exposed.
type APIServerService struct {
	// type is ClusterIP (the default), NodePort or LoadBalancer.
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`
	// port of the Service. Defaults to 6443.
	// +optional
	Port int32 `json:"port,omitempty"`
}

// NestedClusterPhase is a one-word summary of the cluster's state.
// +enum
type NestedClusterPhase string

const (
	PhaseProvisioning NestedClusterPhase = "Provisioning"
	PhaseReady        NestedClusterPhase = "Ready"
	PhaseUpgrading    NestedClusterPhase = "Upgrading"
	PhaseDegraded     NestedClusterPhase = "Degraded"
	PhaseDeleting     NestedClusterPhase = "Deleting"
	PhasePaused       NestedClusterPhase = "Paused"
	PhaseSleeping     NestedClusterPhase = "Sleeping"
)

// NestedClusterStatus is the observed state of a tenant control plane.
type NestedClusterStatus struct {
	// observedGeneration is the spec generation the provisioner last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase summarises the conditions.
	// +optional
	Phase NestedClusterPhase `json:"phase,omitempty"`
	// conditions: EtcdReady, APIServerAvailable, ControllerManagerAvailable,
	// SchedulerAvailable, Ready; during and after an upgrade Progressing
	// (True while one runs, the reason naming the component) and, when a
	// step misses its deadline, Degraded (the message naming the pod).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// etcd is the managed etcd's rollout state.
	// +optional
	Etcd ComponentStatus `json:"etcd,omitempty"`
	// apiServer is kube-apiserver's rollout state.
	// +optional
	APIServer ComponentStatus `json:"apiServer,omitempty"`
	// controllerManager is kube-controller-manager's rollout state.
	// +optional
	ControllerManager ComponentStatus `json:"controllerManager,omitempty"`
	// scheduler is kube-scheduler's rollout state.
	// +optional
	Scheduler ComponentStatus `json:"scheduler,omitempty"`
	// syncer is capn-syncer's rollout state (Shared mode).
	// +optional
	Syncer ComponentStatus `json:"syncer,omitempty"`
	// workloadNamespace is the management namespace the tenant's pods run
	// in (Shared mode).
	// +optional
	WorkloadNamespace string `json:"workloadNamespace,omitempty"`
	// endpoint is the URL of the tenant apiserver.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// upgrade describes the current or last version upgrade.
	// +optional
	Upgrade *UpgradeStatus `json:"upgrade,omitempty"`
	// replicas is the number of apiserver pods, for the /scale subresource.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// selector is the label selector of apiserver pods, for /scale and HPA.
	// +optional
	Selector string `json:"selector,omitempty"`
}

// ComponentStatus is the rollout state of one component.
type ComponentStatus struct {
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// version the component's pods run.
	// +optional
	Version string `json:"version,omitempty"`
	// image the component's pods run.
	// +optional
	Image string `json:"image,omitempty"`
}

// UpgradeStatus tracks an ordered upgrade.
type UpgradeStatus struct {
	// from is the version the upgrade started from. When spec.version is
	// set back to from while an upgrade runs, the provisioner rolls back:
	// from and to swap, so from is then the abandoned target and to the
	// version being restored (the rollback is itself an ordered upgrade, in
	// reverse component order; steps[].version shows the direction).
	From string `json:"from"`
	// to is the target version: always spec.version while in progress.
	To string `json:"to"`
	// component is the component being rolled (kube-apiserver,
	// kube-controller-manager, kube-scheduler); empty when finished.
	// +optional
	Component string `json:"component,omitempty"`
	// startedAt is when the upgrade began.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// finishedAt is set once every component runs the target version.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// steps is the history of this upgrade, one entry per component rolled,
	// in the order the provisioner started them.
	// +optional
	// +listType=atomic
	Steps []UpgradeStep `json:"steps,omitempty"`
}

// UpgradeStep is one component's roll to one version.
type UpgradeStep struct {
	// component is kube-apiserver, kube-controller-manager or kube-scheduler.
	Component string `json:"component"`
	// version the component was rolled to.
	Version string `json:"version"`
	// startedAt is when the provisioner changed the component's version.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// finishedAt is when every replica ran version and was ready. A step
	// interrupted by a rollback never gets one.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedClusterUpgrade is the body of a POST to nestedclusters/NAME/upgrade.
// It sets spec.version after checking the skew policy; the provisioner then
// performs the ordered upgrade.
type NestedClusterUpgrade struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// version is the target Kubernetes version, e.g. v1.37.2.
	Version string `json:"version"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedClusterKubeconfigRequest is the body and the answer of a POST to
// nestedclusters/NAME/kubeconfig. The answer carries a kubeconfig for the
// tenant control plane holding a freshly signed, short-lived client
// certificate for the requesting user. Nothing is stored: ask again when it
// expires. RBAC grants it as `create` on nestedclusters/kubeconfig.
type NestedClusterKubeconfigRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the requester asks for.
	// +optional
	Spec NestedClusterKubeconfigRequestSpec `json:"spec,omitempty"`
	// status is filled in by the server.
	// +optional
	Status NestedClusterKubeconfigRequestStatus `json:"status,omitempty"`
}

// NestedClusterKubeconfigRequestSpec is what a kubeconfig request asks for.
type NestedClusterKubeconfigRequestSpec struct {
	// expirationSeconds is the requested lifetime of the client certificate.
	// Defaults to 3600 (one hour); at least 600, and at most the server's
	// --max-tenant-kubeconfig-expiration (24h unless configured otherwise).
	// +optional
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

// NestedClusterKubeconfigRequestStatus is the issued kubeconfig.
type NestedClusterKubeconfigRequestStatus struct {
	// kubeconfig for the tenant apiserver. The user is the requester's own
	// username; the group capn.dev:cluster-admins, bound to cluster-admin
	// inside the tenant.
	// +optional
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// expirationTimestamp is when the client certificate expires.
	// +optional
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedClusterJoinTokenRequest is the body and the answer of a POST to
// nestedclusters/NAME/jointoken. The server creates a bootstrap token in
// the tenant (Secret kube-system/bootstrap-token-<id>) that expires after
// spec.expirationSeconds, and answers with what a kubelet needs to join
// the tenant with it: the endpoint, the cluster CA's hash and a ready-to-use
// bootstrap kubeconfig. The token lets its holder request a node client
// certificate (auto-approved) and nothing else; revoke it early by deleting
// its Secret in the tenant. Nothing is stored in capn. RBAC grants it as
// `create` on nestedclusters/jointoken.
type NestedClusterJoinTokenRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the requester asks for.
	// +optional
	Spec NestedClusterJoinTokenRequestSpec `json:"spec,omitempty"`
	// status is filled in by the server.
	// +optional
	Status NestedClusterJoinTokenRequestStatus `json:"status,omitempty"`
}

// NestedClusterJoinTokenRequestSpec is what a join-token request asks for.
type NestedClusterJoinTokenRequestSpec struct {
	// expirationSeconds is the requested lifetime of the bootstrap token.
	// Defaults to 900 (15 minutes), or the server's maximum if that is
	// shorter; at least 60, and at most the server's --max-join-token-ttl
	// (1h unless configured otherwise). A node needs the token only until
	// its first client certificate is issued; it renews that certificate
	// with the certificate itself.
	// +optional
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

// NestedClusterJoinTokenRequestStatus is the issued token and what a node
// joins with.
type NestedClusterJoinTokenRequestStatus struct {
	// endpoint is the tenant apiserver's URL, as in status.endpoint of the
	// NestedCluster: the load balancer when there is one, else the
	// apiserver Service's ClusterIP. A node must be able to reach it.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// caCertHashes are the hashes of the tenant's cluster CA public key in
	// kubeadm's format (sha256:<hex of the DER SubjectPublicKeyInfo>), for
	// tools that discover the cluster from kube-public/cluster-info
	// (kubeadm's --discovery-token-ca-cert-hash).
	// +optional
	// +listType=atomic
	CACertHashes []string `json:"caCertHashes,omitempty"`
	// token is the bootstrap token, <id>.<secret>. It is a credential:
	// whoever holds it may register nodes in the tenant until it expires.
	// +optional
	Token string `json:"token,omitempty"`
	// expirationTimestamp is when the token expires: the tenant apiserver
	// refuses it from then on, and its kube-controller-manager deletes it.
	// +optional
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp,omitempty"`
	// bootstrapKubeconfig is a kubeconfig for the kubelet's
	// --bootstrap-kubeconfig: the endpoint, the cluster CA and the token.
	// +optional
	BootstrapKubeconfig string `json:"bootstrapKubeconfig,omitempty"`
}
