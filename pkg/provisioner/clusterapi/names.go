package clusterapi

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
	infrav1alpha1 "capn.dev/capn/pkg/apis/infrastructure/v1alpha1"
)

// Cluster API's vocabulary that capn reads or writes.
const (
	// ClusterGroup is Cluster API's core group.
	ClusterGroup = "cluster.x-k8s.io"
	// ContractLabel, on a provider's CRD, tells Cluster API which of the
	// CRD's versions implement contract v1beta2 (underscore-separated).
	ContractLabel = ClusterGroup + "/v1beta2"
	// ClusterNameLabel names the Cluster an object belongs to; Cluster API
	// sets it on the control plane and reads it on the kubeconfig Secret.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// PausedAnnotation pauses reconciliation of the object that carries it.
	PausedAnnotation = "cluster.x-k8s.io/paused"
	// SecretType is the type of the Secrets Cluster API reads.
	SecretType = "cluster.x-k8s.io/secret"
	// KubeconfigKey is the key of the kubeconfig in its Secret.
	KubeconfigKey = "value"
	// KubeconfigSuffix makes <cluster>-kubeconfig.
	KubeconfigSuffix = "-kubeconfig"
)

// capn's own names for this provider.
const (
	// Finalizer holds a NestedControlPlane until its NestedCluster, and so
	// everything capn runs for it, is gone: Cluster API waits on the control
	// plane object, so the Cluster's deletion waits for all of it.
	Finalizer = "capn.dev/nestedcontrolplane"
	// KubeconfigUser is the user of the kubeconfig capn writes for Cluster
	// API, in the tenant's admins group like every /kubeconfig answer; the
	// tenant can tell it apart from the people it issued kubeconfigs to.
	KubeconfigUser = "capn:cluster-api"
	// FieldManager names capn's writes to NestedControlPlanes and their
	// NestedClusters.
	FieldManager = "capn-clusterapi"
)

// Condition types and reasons on a NestedControlPlane.
const (
	// ConditionAvailable is the contract's: Cluster API mirrors it into the
	// Cluster's ControlPlaneAvailable.
	ConditionAvailable = "Available"
	ConditionPaused    = "Paused"
	// ConditionReconciled is False with the NestedCluster API's answer when
	// a change was refused, or with what capn waits for.
	ConditionReconciled = "Reconciled"

	ReasonWaitingForCluster = "WaitingForCluster"
	ReasonNameInUse         = "NestedClusterNameInUse"
	ReasonSecretInUse       = "KubeconfigSecretInUse"
	ReasonRefused           = "Refused"
	ReasonUpgradeRefused    = "UpgradeRefused"
	ReasonScaleRefused      = "ScaleRefused"
	ReasonReconciled        = "Reconciled"
	ReasonPaused            = "Paused"
	ReasonNotPaused         = "NotPaused"
)

// Resources the loops watch.
var (
	NestedControlPlanes = controlplanev1alpha1.SchemeGroupVersion.WithResource("nestedcontrolplanes")
	NestedInfraClusters = infrav1alpha1.SchemeGroupVersion.WithResource("nestedinfraclusters")
	// Clusters is the Cluster API version whose contract capn implements.
	Clusters = schema.GroupVersionResource{Group: ClusterGroup, Version: "v1beta2", Resource: "clusters"}
)
