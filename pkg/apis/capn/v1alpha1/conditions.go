package v1alpha1

// Condition types in status.conditions. The provisioner sets them; the
// plugin, the table printer and the tests read them, from here only.
const (
	// ConditionReady is True when every component is available, rolled out
	// to the spec, and the tenant's RBAC bootstrap is done.
	ConditionReady                      = "Ready"
	ConditionEtcdReady                  = "EtcdReady"
	ConditionAPIServerAvailable         = "APIServerAvailable"
	ConditionControllerManagerAvailable = "ControllerManagerAvailable"
	ConditionSchedulerAvailable         = "SchedulerAvailable"
	// ConditionSyncerAvailable is set in Shared data-plane mode only, and
	// Ready then includes it: without a syncer no tenant pod runs.
	ConditionSyncerAvailable = "SyncerAvailable"
	// ConditionImagesAvailable is False while a component's pod waits for an
	// image the node cannot get; its reason is the kubelet's
	// (ImagePullReasons) and its message names the component and image.
	ConditionImagesAvailable = "ImagesAvailable"
	// ConditionProgressing and ConditionDegraded appear once a cluster has
	// been upgraded (Progressing) or an upgrade has stalled (Degraded).
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
	// ConditionPaused is True while spec.paused is.
	ConditionPaused = "Paused"
	// ConditionReconciled says whether the provisioner's last sync of the
	// current generation got through every step. False names the step that
	// failed (its reason, e.g. PKIFailed) while Ready keeps describing what
	// runs: a failed certificate renewal does not stop a serving cluster,
	// but it must not hide behind Ready=True either.
	ConditionReconciled = "Reconciled"
	// ConditionTenantBootstrapped is True once capn has bound the group of
	// the kubeconfigs it issues (capn:tenant-admins) to cluster-admin inside
	// the tenant, for the cluster's current CA. capn records that in its
	// management namespace, so a restart of capn does not redo it.
	ConditionTenantBootstrapped = "TenantBootstrapped"
	// ConditionSleeping is True while the control plane sleeps
	// (spec.sleep); its lastTransitionTime says since when and its message
	// what still runs. It turns False (reason Awake) on wake, and is absent
	// on a cluster that never slept.
	ConditionSleeping = "Sleeping"
	// ConditionInactive is True once a cluster with spec.sleep.
	// afterInactivity has had no tenant request for that long: it is then
	// asleep as if spec.sleep.asleep were set, until the spec changes
	// (its observedGeneration is the generation it fell asleep at) or a
	// /kubeconfig request asks for it (WakeRequestedAnnotation newer than
	// its lastTransitionTime). It turns False when the cluster wakes.
	ConditionInactive = "Inactive"
	// ConditionPoolAvailable, on a NestedEtcdPool, is True when capn
	// reached every endpoint as the pool's root user and found auth on.
	ConditionPoolAvailable = "Available"
)

// Reasons of a NestedEtcdPool's Available condition.
const (
	ReasonPoolReachable   = "Reachable"
	ReasonPoolUnreachable = "Unreachable"
	ReasonPoolCredentials = "CredentialsInvalid"
)

// PoolFinalizer holds a NestedEtcdPool while NestedClusters keep their
// state in it: deleting a pool under its tenants would leave their
// control planes pointing at an etcd nobody answers for. capn removes it
// once the last tenant is gone (the pattern of kubernetes.io/pvc-protection).
const PoolFinalizer = GroupName + "/pool-in-use"

// BackupFinalizer holds a NestedClusterBackup until capn has deleted its
// data from the backup store: set when the backup is created, so that no
// backup's data outlives its object, even one capn never got to.
const BackupFinalizer = GroupName + "/backup-data"

// WakeRequestedAnnotation is set on a NestedCluster by capn-apiserver when
// a /kubeconfig request arrives for a cluster that sleeps for inactivity:
// the time of the request (RFC 3339). The provisioner wakes the cluster
// when it is newer than the Inactive condition.
const WakeRequestedAnnotation = "capn.dev/wake-requested-at"

// ConnectionWakeAnnotation is set on a NestedCluster by capn's waker when
// a connection to its apiserver's address arrives while it sleeps for
// inactivity: the time of the connection (RFC 3339). It wakes the cluster
// as WakeRequestedAnnotation does, with Inactive's reason
// ReasonConnectionReceived.
const ConnectionWakeAnnotation = "capn.dev/connection-received-at"

// Condition reasons that clients may act on.
const (
	// ReasonImagesPresent: every component pod has its images.
	ReasonImagesPresent = "ImagesPresent"
	// ReasonImagePullFailed is Ready's reason while ImagesAvailable is False.
	ReasonImagePullFailed = "ImagePullFailed"
	// ReasonReconcileSucceeded is Reconciled's reason when True.
	ReasonReconcileSucceeded = "Succeeded"
	// Component conditions: etcd by quorum, the kube-* by ready replicas.
	ReasonQuorumReady     = "QuorumReady"
	ReasonQuorumNotReady  = "QuorumNotReady"
	ReasonReplicasReady   = "ReplicasReady"
	ReasonNoReadyReplicas = "NoReadyReplicas"
	// Ready's reasons besides ReasonImagePullFailed.
	ReasonAllComponentsAvailable = "AllComponentsAvailable"
	ReasonBootstrappingTenant    = "BootstrappingTenant" // components up, tenant RBAC not yet
	ReasonComponentsNotReady     = "ComponentsNotReady"
	// TenantBootstrapped's reasons.
	ReasonBindingsApplied       = "BindingsApplied"
	ReasonBootstrapPending      = "Pending"
	ReasonWaitingForAPIServer   = "WaitingForAPIServer"
	ReasonTenantBootstrapFailed = "TenantBootstrapFailed"
	// Sleeping's reasons; ReasonAsleep is also Ready's while it sleeps.
	ReasonAsleep            = "Asleep"
	ReasonFallingAsleep     = "FallingAsleep"     // scaling down: pods still run
	ReasonWaitingForUpgrade = "WaitingForUpgrade" // sleep asked during an upgrade: it finishes first
	ReasonAwake             = "Awake"
	// Inactive's reasons.
	ReasonNoRequests    = "NoRequests"    // True: nobody used the apiserver for spec.sleep.afterInactivity
	ReasonSpecChanged   = "SpecChanged"   // False: the spec changed, which wakes it
	ReasonWakeRequested = "WakeRequested" // False: a /kubeconfig request woke it
	// ReasonConnectionReceived (False): a connection to the apiserver's
	// address, held by capn's waker, woke it.
	ReasonConnectionReceived = "ConnectionReceived"
)

// Reconciled=False reasons: the sync step that failed.
const (
	ReasonNamespaceFailed    = "NamespaceFailed"
	ReasonObserveFailed      = "ObserveFailed"
	ReasonServicesFailed     = "ServicesFailed"
	ReasonPKIFailed          = "PKIFailed"
	ReasonExternalEtcdFailed = "ExternalEtcdFailed"
	ReasonEtcdPoolFailed     = "EtcdPoolFailed"
	ReasonUpgradePlanFailed  = "UpgradePlanFailed"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonDeleteFailed       = "DeleteFailed"
)

// ImagePullReasons are the kubelet's container waiting reasons that mean the
// image itself is the problem; ImagesAvailable takes its reason from them.
var ImagePullReasons = []string{
	"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
	"ImageInspectError", "RegistryUnavailable",
}

// The Restored condition, on a NestedCluster created with
// spec.restoreFrom: True once the backup is in the cluster's etcd, which
// is when its apiserver may first start.
const (
	ConditionRestored = "Restored"
	// ReasonRestoring: the backup is not written yet; everything but etcd
	// waits at zero replicas.
	ReasonRestoring = "Restoring"
	// ReasonRestoreSucceeded: the backup was written.
	ReasonRestoreSucceeded = "RestoreSucceeded"
	// ReasonRestoreFailed is also Reconciled's reason for the failed step.
	ReasonRestoreFailed = "RestoreFailed"
)
