// Package provisioner holds the pure parts of the NestedCluster provisioner:
// the names, labels and (in the subpackages) flag profiles and object
// builders that turn a NestedCluster into the objects of its tenant control
// plane. Nothing here talks to a cluster; the controller does the I/O.
package provisioner

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"capn.dev/capn/pkg/apis/capn"
)

// Components, spelled as validation.OwnedFlags keys them and as they appear
// in the capn.dev/component label.
const (
	ComponentEtcd              = "etcd"
	ComponentAPIServer         = "kube-apiserver"
	ComponentControllerManager = "kube-controller-manager"
	ComponentScheduler         = "kube-scheduler"
)

// Label keys. ClusterLabel and ComponentLabel are also what
// nestedcluster.APIServerSelector uses, so /scale and HPA find the pods.
const (
	ClusterLabel          = "capn.dev/cluster"
	ClusterNamespaceLabel = "capn.dev/cluster-namespace"
	ComponentLabel        = "capn.dev/component"
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
)

// Secrets the controller writes into the management namespace before the
// builders' objects can run. CA and certificate Secrets are kubernetes.io/tls
// (keys tls.crt, tls.key); the pods mount only the keys they need (the
// apiserver never sees a CA key).
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
)

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

// hashLength hex characters of sha256 keep truncated names unique.
const hashLength = 8

// maxLabel is the DNS-1123 label limit a namespace name must meet.
const maxLabel = 63

// ManagementNamespace is the namespace of the management cluster holding
// nc's control plane: "capn-<ns>-<name>-<hash>". The readable part is cut so
// the whole stays a DNS-1123 label (≤ 63); the hash of "<ns>/<name>" always
// follows, so cut names cannot collide and neither can pairs that join to
// the same text ("a-b"/"c" and "a"/"b-c").
func ManagementNamespace(nc *capn.NestedCluster) string {
	sum := sha256.Sum256([]byte(nc.Namespace + "/" + nc.Name))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLength]
	readable := namespacePrefix + nc.Namespace + "-" + nc.Name
	if max := maxLabel - len(suffix); len(readable) > max {
		readable = readable[:max]
	}
	// A cut may end on a dash; "--<hash>" is legal but reads as a typo.
	return strings.TrimRight(readable, "-") + suffix
}

// Labels go on every object capn creates for nc.
func Labels(nc *capn.NestedCluster) map[string]string {
	return map[string]string{
		ClusterLabel:          nc.Name,
		ClusterNamespaceLabel: nc.Namespace,
		ManagedByLabel:        ManagedByValue,
	}
}

// ComponentLabels are Labels plus the component, for one component's
// objects and pods.
func ComponentLabels(nc *capn.NestedCluster, component string) map[string]string {
	l := Labels(nc)
	l[ComponentLabel] = component
	return l
}

// SelectorLabels select one component's pods. They are a subset of
// ComponentLabels that never changes for the life of the cluster, because a
// Deployment's or StatefulSet's selector is immutable; for kube-apiserver
// they equal nestedcluster.APIServerSelector.
func SelectorLabels(nc *capn.NestedCluster, component string) map[string]string {
	return map[string]string{ClusterLabel: nc.Name, ComponentLabel: component}
}
