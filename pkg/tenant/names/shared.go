package names

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// What follows is vocabulary the provisioner (which grants, issues and
// validates) and capn-syncer (which serves and applies) must agree on. It
// lives here, below both, so that neither imports the other.

// Names of the DNS addon's objects in the tenant's kube-system. kube-dns
// and k8s-app=kube-dns are what kubeadm clusters use, and what tools that
// look for cluster DNS expect. The syncer applies the addon; the
// provisioner grants it exactly these names in the tenant's RBAC.
const (
	DNSNamespace   = metav1.NamespaceSystem
	DNSName        = "coredns"
	DNSServiceName = "kube-dns"
	DNSAppLabel    = "k8s-app"
	DNSAppValue    = "kube-dns"
)

// Names of the metrics addon's objects in the tenant's kube-system, as
// upstream's manifest names them (kubectl top and HPA look for the
// APIService only). The syncer applies the addon; the provisioner grants
// the syncer exactly these names, and the addon's ServiceAccount what
// metrics-server reads.
const (
	MetricsNamespace      = metav1.NamespaceSystem
	MetricsServerName     = "metrics-server"
	MetricsAppLabel       = "k8s-app"
	MetricsAppValue       = "metrics-server"
	MetricsAPIServiceName = "v1beta1.metrics.k8s.io"
)

// KubeletClientCommonName is the common name of the client certificate
// capn issues to the tenant kube-apiserver for kubelets. It carries no
// group (kubeadm once used system:masters): the tenant binds this user to
// system:kubelet-api-admin, and capn-syncer, serving the virtual Nodes'
// kubelet API, admits this name only.
const KubeletClientCommonName = "kube-apiserver-kubelet-client"

// Tenant users capn issues certificates to whose writes the syncer's
// storage webhook lets through: the syncer itself (bound to the tenant
// ClusterRole capn:syncer, no group) and the tenant's
// kube-controller-manager, whose PV controllers bind and finalize the
// syncer's PVs.
const (
	SyncerUser            = "capn:syncer"
	ControllerManagerUser = "system:kube-controller-manager"
)

// PVControllerUsers are the tenant kube-controller-manager's identities
// that write PVs: its own, and, as it runs with
// --use-service-account-credentials, the ServiceAccounts of the PV binder
// (bind annotations) and of pv-protection (which removes its finalizer
// once a deleted PV is released).
var PVControllerUsers = []string{
	ControllerManagerUser,
	"system:serviceaccount:kube-system:persistent-volume-binder",
	"system:serviceaccount:kube-system:pv-protection-controller",
}

// MaxGracePeriodSeconds bounds terminationGracePeriodSeconds, both in a
// NestedCluster's podTemplates and, by default, in tenant pods: a host pod
// may not hold a node's resources longer than the provider allows.
const MaxGracePeriodSeconds = 60

// MaxEmptyDirSize is the default bound on a tenant pod's emptyDir volumes
// (a resource quantity), and their size when the pod names none: without
// one, an emptyDir may fill the node's disk, or for medium Memory its RAM,
// under other tenants' pods.
const MaxEmptyDirSize = "1Gi"

// MaxCopiedBytes is the default bound on the bytes (keys and values) of
// the ConfigMaps and Secrets the syncer copies to the management cluster
// for one tenant: each copy is the tenant's data in the management etcd,
// which every tenant and the provider share.
const MaxCopiedBytes = "64Mi"

// APIServerService is the name of every cluster's own apiserver Service
// (in namespace default), whose Endpoints the syncer writes for the
// tenant, and which its RBAC names.
const APIServerService = "kubernetes"
