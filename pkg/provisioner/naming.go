// Package provisioner holds the pure parts of the NestedCluster provisioner:
// the names, labels, addresses and certificate SANs of a cluster (this
// package, so builders, pki, access and the controller agree on them) and,
// in the subpackages, the flag profiles and object builders that turn a
// NestedCluster into the objects of its tenant control plane. Nothing here
// talks to a cluster; the controller does the I/O.
package provisioner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// Label keys besides v1alpha1.ClusterLabel and v1alpha1.ComponentLabel.
const (
	// OwnerUIDLabel holds the owning NestedCluster's UID on the metadata of
	// every object capn creates (not on pod templates: adding it there
	// would restart every tenant). Names and the other labels can be
	// spoofed; this is what capn checks before it acts on an object.
	OwnerUIDLabel         = "capn.dev/owner-uid"
	ClusterNamespaceLabel = "capn.dev/cluster-namespace"
	ManagedByLabel        = "app.kubernetes.io/managed-by"
	ManagedByValue        = "capn"
)

// Pod-template annotations the builders stamp.
const (
	// CertsHashAnnotation changes when the controller renews certificates,
	// so the pods that read them at start roll.
	CertsHashAnnotation = "capn.dev/certs-hash"
	// ConfigHashAnnotation changes when a generated config file changes;
	// a ConfigMap update alone does not restart a pod.
	ConfigHashAnnotation = "capn.dev/config-hash"
	// VersionAnnotation is the spec.version a pod was built for; the
	// controller reads it back into status.<component>.version.
	VersionAnnotation = "capn.dev/version"
)

// Fixed names inside the management namespace. One namespace per cluster
// means these never need the cluster name in them.
const (
	EtcdName                = "etcd"          // StatefulSet and client Service
	EtcdHeadlessServiceName = "etcd-headless" // governs the StatefulSet: stable member DNS names
	APIServerName           = "kube-apiserver"
	ControllerManagerName   = "kube-controller-manager"
	SchedulerName           = "kube-scheduler"
	APIServerConfigName     = "kube-apiserver-config" // ConfigMap: authentication config
	SchedulerConfigName     = "kube-scheduler-config" // ConfigMap: KubeSchedulerConfiguration
	// SyncerName is capn-syncer's Deployment and ServiceAccount, and the
	// RoleBinding in the workload namespace that gives it its Role there.
	SyncerName = "capn-syncer"
)

// The waker (pkg/provisioner/waker): while a cluster sleeps for
// inactivity, the EndpointSlice WakerEndpointSliceName of its kube-apiserver
// Service (managed by WakerManagedBy, beside the EndpointSlice controller's
// own) sends its apiserver's address to capn-apiserver's pods, on the
// cluster's own port in [WakerPortBase, WakerPortBase+WakerPortCount).
// The port tells the waker which cluster a connection is for.
const (
	WakerEndpointSliceName = "kube-apiserver-waker"
	WakerManagedBy         = "waker.capn.dev"
	WakerPortBase          = 40000
	// WakerPortCount bounds how many clusters can sleep with wake on
	// request at once; beyond it a sleeping cluster refuses connections,
	// as before the waker.
	WakerPortCount = 10000
)

// ClusterRoles the deploy manifests install for every tenant's syncer;
// capn binds them (it holds "bind" on them, not their rules).
const (
	// SyncerRole is bound in each workload namespace only.
	SyncerRole = "capn-syncer"
	// SyncerNodesRole reads Nodes and their kubelets' resource metrics,
	// cluster-wide.
	SyncerNodesRole = "capn-syncer-nodes"
)

// WorkloadNamespaceLabel marks a tenant's workload namespace (value
// "true"); it carries the same owner labels as the control-plane one.
const WorkloadNamespaceLabel = "capn.dev/workload-namespace"

// WorkloadNamespace is where nc's tenant pods run in Shared mode:
// "capn-<ns>-<name>-w-<uid>", cut like ManagementNamespace. The UID makes
// it unique and unforgeable; the "-w" keeps it apart from the
// control-plane namespace of the same cluster, whose Secrets a tenant pod
// must never be able to mount.
func WorkloadNamespace(nc *v1alpha1.NestedCluster) string {
	suffix := "-w-" + strings.ReplaceAll(string(nc.UID), "-", "")
	if nc.UID == "" {
		suffix = "-w-nouid"
	}
	return readable(nc, maxLabel-len(suffix)) + suffix
}

// SyncerClusterRoleBinding names the per-tenant binding of SyncerNodesRole.
func SyncerClusterRoleBinding(nc *v1alpha1.NestedCluster) string {
	return "capn-syncer-" + strings.ReplaceAll(string(nc.UID), "-", "")
}

// The logical PKI Secrets, one per key pair: what pki.Reconcile works on,
// and the Secrets themselves for workloads rendered before
// PKISecretTemplateRevision (see SecretPKIRoots for the layout since).
// Keys are tls.crt and tls.key; the pods mount only the keys they need
// (the apiserver never sees a CA key).
const (
	SecretCA                     = "ca"
	SecretEtcdCA                 = "etcd-ca"
	SecretFrontProxyCA           = "front-proxy-ca"
	SecretServiceAccount         = "sa" // keys SecretKeySAPrivate, SecretKeySAPublic
	SecretAPIServerServing       = "apiserver-serving"
	SecretAPIServerEtcdClient    = "apiserver-etcd-client"
	SecretAPIServerKubeletClient = "apiserver-kubelet-client"
	SecretFrontProxyClient       = "front-proxy-client"
	SecretEtcdServer             = "etcd-server"
	SecretEtcdPeer               = "etcd-peer"
	SecretControllerManagerKC    = "kcm-kubeconfig"       // key SecretKeyKubeconfig
	SecretSchedulerKC            = "scheduler-kubeconfig" // key SecretKeyKubeconfig
	SecretSyncerKC               = "syncer-kubeconfig"    // key SecretKeyKubeconfig; Shared data plane only
	// Serving certificates of kcm and scheduler: their tls-cert-file flags
	// are owned, so capn issues them rather than letting the components
	// self-sign into a writable cert-dir.
	SecretControllerManagerServing = "kcm-serving"
	SecretSchedulerServing         = "scheduler-serving"
	// External etcd: the controller copies the user's Secrets from the
	// NestedCluster's namespace under these names, keys unchanged (ca.crt;
	// tls.crt and tls.key), because a pod can only mount its own namespace.
	SecretExternalEtcdCA     = "external-etcd-ca"
	SecretExternalEtcdClient = "external-etcd-client"
	// Pooled etcd (spec.etcd.pool): the controller writes the pool's CA
	// (ca.crt) and the client certificate it issued the cluster's etcd
	// user (tls.crt, tls.key) into one Secret. The pool's CA key and root
	// credential never leave the provider's Secret.
	SecretPoolEtcdClient = "pool-etcd-client"
)

// The PKI Secrets from PKISecretTemplateRevision on (builders.PKILayout).
// The logical Secrets above are stored in fewer objects: one per component,
// holding exactly the files its pods mount (keyed by file name), and the
// roots. So a pod sees the same keys as before, and a node's kubelet, which
// may read the Secrets of the pods it runs, still reads no key those pods
// do not mount: a node that runs only a tenant's scheduler never holds its
// CA key. Clusters whose workloads were rendered before keep the logical
// Secrets until every workload has rolled (controller/pki.go).
const (
	// SecretPKIRoots holds the CAs and the service-account key, under the
	// RootKey* names: the source of truth capn issues from, mounted by no
	// pod (components get copies of what they need).
	SecretPKIRoots = "pki-roots"

	RootKeyCACert           = "ca.crt"
	RootKeyCAKey            = "ca.key"
	RootKeyEtcdCACert       = "etcd-ca.crt"
	RootKeyEtcdCAKey        = "etcd-ca.key"
	RootKeyFrontProxyCACert = "front-proxy-ca.crt"
	RootKeyFrontProxyCAKey  = "front-proxy-ca.key"
	RootKeySAPrivate        = "sa.key"
	RootKeySAPublic         = "sa.pub"
)

// ComponentPKISecret names the Secret holding component's PKI files.
func ComponentPKISecret(component string) string { return component + "-pki" }

// Secret keys beyond the kubernetes.io/tls ones (corev1.TLSCertKey,
// corev1.TLSPrivateKeyKey, corev1.ServiceAccountRootCAKey).
const (
	SecretKeySAPrivate  = "sa.key"
	SecretKeySAPublic   = "sa.pub"
	SecretKeyKubeconfig = "kubeconfig"
)

// FrontProxyClientCommonName is the CN the front-proxy client certificate
// must carry: kube-apiserver's --requestheader-allowed-names trusts only it.
const FrontProxyClientCommonName = "front-proxy-client"

// namespacePrefix marks management namespaces as capn's at a glance.
const namespacePrefix = "capn-"

// maxLabel is the DNS-1123 label limit a namespace name must meet.
const maxLabel = 63

// ManagementNamespace is the namespace of the management cluster holding
// nc's control plane: "capn-<ns>-<name>-<uid>", where <uid> is nc's UID
// without dashes (32 hex characters, all 128 bits) and the readable part is
// cut so the whole stays a DNS-1123 label. The API server assigns UIDs and
// never reuses one, so no tenant can choose a name that maps to another
// cluster's namespace; a cluster deleted and created again gets a fresh one.
// Clusters created before this scheme keep their LegacyNamespace (see
// ResolveNamespace).
func ManagementNamespace(nc *v1alpha1.NestedCluster) string {
	suffix := "-" + strings.ReplaceAll(string(nc.UID), "-", "")
	if nc.UID == "" {
		// Only unstored objects (unit tests, dry runs) lack a UID; they
		// never reach a cluster, and the name must still be a valid label.
		suffix = "-nouid"
	}
	return readable(nc, maxLabel-len(suffix)) + suffix
}

// legacyHashLength hex characters of sha256("<ns>/<name>") ended the names
// capn gave namespaces before they were derived from the UID: 32 bits, few
// enough for a tenant to brute-force a collision, which is why they are
// only ever trusted together with the owner labels (ResolveNamespace).
const legacyHashLength = 8

// LegacyNamespace is the name capn gave nc's management namespace before
// ManagementNamespace used the UID: "capn-<ns>-<name>-<8 hex of sha256>".
func LegacyNamespace(nc *v1alpha1.NestedCluster) string {
	sum := sha256.Sum256([]byte(nc.Namespace + "/" + nc.Name))
	suffix := "-" + hex.EncodeToString(sum[:])[:legacyHashLength]
	return readable(nc, maxLabel-len(suffix)) + suffix
}

// ErrNotOwned: a namespace capn would use carries another owner's UID.
var ErrNotOwned = errors.New("owned by another NestedCluster")

// NamespaceLookup returns the labels of the live namespace name, never nil
// for one that exists (NonNilLabels), and nil when there is none.
type NamespaceLookup func(name string) (map[string]string, error)

// NonNilLabels returns l, or an empty map for nil: for NamespaceLookup.
func NonNilLabels(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	return l
}

// ResolveNamespace decides which management namespace is nc's, from what
// lookup finds. The UID-derived ManagementNamespace wins when it exists, and
// must then carry nc's UID: anything else is refused with ErrNotOwned, never
// adopted. Only when it does not exist is LegacyNamespace considered, and
// used if it is this cluster's: it already carries nc's UID, or (made by a
// capn that set no UID label) its owner labels name nc's namespace and name,
// which a colliding cluster's cannot. Otherwise the UID-derived name is the
// one to create. A legacy namespace is claimed by stamping the UID label on
// it, after which only the UID counts.
func ResolveNamespace(nc *v1alpha1.NestedCluster, lookup NamespaceLookup) (string, error) {
	name := ManagementNamespace(nc)
	current, err := lookup(name)
	if err != nil {
		return "", err
	}
	if current != nil {
		if !OwnedBy(current, nc) {
			return "", fmt.Errorf("namespace %s: %w", name, ErrNotOwned)
		}
		return name, nil
	}
	legacyName := LegacyNamespace(nc)
	legacy, err := lookup(legacyName)
	if err != nil {
		return "", err
	}
	if legacy != nil && LegacyOwnedBy(legacy, nc) {
		return legacyName, nil
	}
	return name, nil
}

// LegacyOwnedBy reports whether a namespace's labels make it nc's under
// the legacy rule: its UID if it has one, else the owner labels.
func LegacyOwnedBy(l map[string]string, nc *v1alpha1.NestedCluster) bool {
	if _, ok := l[OwnerUIDLabel]; ok {
		return OwnedBy(l, nc)
	}
	return l[ManagedByLabel] == ManagedByValue && l[v1alpha1.ClusterLabel] == nc.Name && l[ClusterNamespaceLabel] == nc.Namespace
}

// readable is "capn-<ns>-<name>" cut to max characters. A cut may end on a
// dash; "--<suffix>" is legal but reads as a typo, so it is trimmed.
func readable(nc *v1alpha1.NestedCluster, max int) string {
	r := namespacePrefix + nc.Namespace + "-" + nc.Name
	if len(r) > max {
		r = r[:max]
	}
	return strings.TrimRight(r, "-")
}

// Labels go on every object capn creates for nc.
func Labels(nc *v1alpha1.NestedCluster) map[string]string {
	return map[string]string{
		v1alpha1.ClusterLabel: nc.Name,
		ClusterNamespaceLabel: nc.Namespace,
		ManagedByLabel:        ManagedByValue,
	}
}

// OwnerLabels are Labels plus OwnerUIDLabel, for object metadata.
func OwnerLabels(nc *v1alpha1.NestedCluster) map[string]string {
	l := Labels(nc)
	l[OwnerUIDLabel] = string(nc.UID)
	return l
}

// OwnedBy reports whether labels carry nc's UID.
func OwnedBy(labels map[string]string, nc *v1alpha1.NestedCluster) bool {
	return nc.UID != "" && labels[OwnerUIDLabel] == string(nc.UID)
}

// ComponentLabels are Labels plus the component, for one component's
// objects and pods.
func ComponentLabels(nc *v1alpha1.NestedCluster, component string) map[string]string {
	l := Labels(nc)
	l[v1alpha1.ComponentLabel] = component
	return l
}

// SelectorLabels select one component's pods. They are a subset of
// ComponentLabels that never changes for the life of the cluster, because a
// Deployment's or StatefulSet's selector is immutable; for kube-apiserver
// they equal v1alpha1.ComponentSelector.
func SelectorLabels(nc *v1alpha1.NestedCluster, component string) map[string]string {
	return v1alpha1.ComponentSelector(nc.Name, component)
}
