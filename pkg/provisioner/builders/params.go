// Package builders turns a defaulted, validated NestedCluster (v1alpha1, as
// the API server serves it) into the management-cluster objects of its
// control plane: pure functions, no clients. The controller creates the
// Secrets they reference (provisioner.Secret*) and applies what they return.
package builders

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
	"capn.dev/capn/pkg/versions"
)

// Images. The kube-* images are <registry>/<component>:<spec.version>.
const (
	ImageRegistry = "registry.k8s.io"
	// DefaultEtcdImage is the etcd the pinned Kubernetes release is tested
	// with and the one the local node images carry.
	DefaultEtcdImage = ImageRegistry + "/etcd:3.7.0-0"
)

// Params are what the builders need beyond the NestedCluster: facts only the
// controller knows. The zero value is valid.
type Params struct {
	// APIServerServiceIP is the ClusterIP the management cluster gave the
	// kube-apiserver Service. When set, provisioner.APIServerURL (and so
	// the kubeconfigs the controller writes) uses it instead of the
	// Service's DNS name, and the serving certificate lists it: a node
	// without cluster DNS cannot resolve the name.
	APIServerServiceIP string
	// APIServerExternalAddress is the load balancer's address (IP or host
	// name) once a LoadBalancer Service has one. Tenants outside the
	// management cluster use it: it goes into the serving certificate and
	// provisioner.APIServerEndpoint. Components inside keep using the
	// ClusterIP.
	APIServerExternalAddress string
	// EtcdServiceIP is the ClusterIP of the etcd client Service; when set,
	// kube-apiserver's --etcd-servers uses it, for the same reason.
	EtcdServiceIP string
	// CertsHash identifies the current certificates (e.g. a hash of the
	// Secrets' data). It is stamped on the kube-* pod templates so renewing
	// a certificate rolls the pods that read it only at start.
	CertsHash string
	// EtcdImage is etcd's image when spec.etcd.managed.image is empty;
	// empty means DefaultEtcdImage. The controller should pass the image
	// the running etcd has (status.etcd.image) once it exists, so a capn
	// release that moves DefaultEtcdImage does not roll a tenant's etcd:
	// only managed.image may.
	EtcdImage string
	// Versions holds the kube-* components back at another version than
	// spec.version while the controller upgrades them in order. It is the
	// whole of the builders' part in an upgrade: they stay pure, and the
	// controller, which sees the live Deployments, decides the order.
	Versions ComponentVersions
	// Namespace is the management namespace the controller resolved for
	// the cluster (provisioner.ResolveNamespace); empty means
	// provisioner.ManagementNamespace. A cluster made by an older capn keeps
	// its legacy name, and everything rendered from it (DNS names in
	// certificates, etcd's cluster token) stays exactly as it was.
	Namespace string
	// Placement is where the provider runs control-plane pods; tenants
	// cannot set any of it (podTemplate validation refuses placement).
	Placement Placement
	// Revisions is the template revision each workload is rendered at
	// (revision.go); nil renders everything at the target revision.
	Revisions TemplateRevisions
	// TemplateRevision is the target revision: what new workloads, and
	// workloads whose pods roll anyway, are rendered at. 0 means
	// LatestTemplateRevision; a provider pins an older one to hold back a
	// capn release's new defaults (capn-apiserver --template-revision).
	TemplateRevision int
	// DataPlane is the provider's side of the Shared data plane.
	DataPlane DataPlane
	// Asleep renders the cluster asleep (DesiredReplicas). It is the
	// controller's to decide, not spec.sleep's alone: a sleep asked for
	// during an upgrade waits for the upgrade to finish.
	Asleep bool
	// CapnNamespace is where capn-apiserver's pods run; its pods may reach
	// a managed etcd's client port (backups, restores). Empty allows none.
	CapnNamespace string
	// Restoring holds every component but etcd at zero replicas: a
	// cluster created with spec.restoreFrom gets its backup written into
	// its etcd before its apiserver first starts (the controller decides).
	Restoring bool
	// EtcdPool is where a cluster with spec.etcd.pool keeps its state: the
	// pool's endpoints and the cluster's own key prefix. The controller
	// reads them from the NestedEtcdPool; nil with spec.etcd.pool set is
	// an error.
	EtcdPool *EtcdPool
	// Network is the provider's side of what control-plane pods may reach
	// (network.go).
	Network Network
	// Waker, when set, sends the apiserver's address to capn's waker
	// (WakerEndpointSlice): the controller sets it while the cluster
	// sleeps for inactivity, and until its apiserver is ready again.
	Waker *Waker
}

// EtcdPool is a cluster's place in a NestedEtcdPool.
type EtcdPool struct {
	Endpoints []string
	// Prefix is the cluster's --etcd-prefix, "/<uid>/" (etcdpool.For).
	Prefix string
}

// Addresses are the facts of p that names, addresses and SANs depend on
// (provisioner.APIServerURL and the rest).
func (p Params) Addresses() provisioner.Addresses {
	return provisioner.Addresses{
		Namespace:                p.Namespace,
		APIServerServiceIP:       p.APIServerServiceIP,
		APIServerExternalAddress: p.APIServerExternalAddress,
		EtcdServiceIP:            p.EtcdServiceIP,
	}
}

// Placement is the provider's scheduling of every control-plane pod
// (capn-apiserver's --control-plane-* flags). The zero value leaves pods
// to the default scheduler anywhere, as before it existed, so an unset
// Placement changes no rendered pod.
type Placement struct {
	NodeSelector      map[string]string
	Tolerations       []corev1.Toleration
	PriorityClassName string
	// RequestFloor raises capn's default requests of a component (by
	// component name) to at least these quantities: a provider whose
	// tenants are busier than the measured idle tenant keeps them from
	// being squeezed on a packed node. A tenant's own spec.<component>.
	// resources replaces the defaults whole and is not floored.
	RequestFloor map[string]corev1.ResourceList
}

// place applies pl to a rendered pod spec. It runs after the tenant's
// podTemplate is merged, so it always wins.
func place(spec *corev1.PodSpec, pl Placement) {
	spec.NodeSelector = maps.Clone(pl.NodeSelector)
	spec.Tolerations = slices.Clone(pl.Tolerations)
	spec.PriorityClassName = pl.PriorityClassName
}

// ComponentVersions are per-component versions; an empty one means
// spec.version, so the zero value renders everything at spec.version (and
// a cluster that is not upgrading renders exactly as before). A version
// drives the component's image tag, its flag profile (and so its generated
// config) and the VersionAnnotation on its pods. Etcd has none: a version
// upgrade never touches it.
type ComponentVersions struct {
	APIServer, ControllerManager, Scheduler string
}

// For returns the version component renders at under nc.
func (v ComponentVersions) For(nc *v1alpha1.NestedCluster, component string) string {
	var pinned string
	switch component {
	case v1alpha1.ComponentAPIServer:
		pinned = v.APIServer
	case v1alpha1.ComponentControllerManager:
		pinned = v.ControllerManager
	case v1alpha1.ComponentScheduler:
		pinned = v.Scheduler
	}
	if pinned == "" {
		return nc.Spec.Version
	}
	return pinned
}

// Object is what every builder returns: a namespaced, typed object with
// TypeMeta set, ready for server-side apply.
type Object interface {
	metav1.Object
	runtime.Object
}

// All returns every object of nc's control plane: the namespace, its
// policy (LimitRange, ResourceQuota, NetworkPolicies), in Shared mode the
// workload namespace with its policy and the syncer's bindings, etcd (when
// managed), kube-apiserver, kube-controller-manager, kube-scheduler and
// (Shared) capn-syncer. The policy
// comes right after the namespace so that, applied in order, it is in
// force before any pod is created: the LimitRange before the quota, which
// refuses pods without limits that only the LimitRange fills in. The quota
// is derived from the workloads, so it is built last.
func All(nc *v1alpha1.NestedCluster, p Params) ([]Object, error) {
	var workloads []Object
	for _, build := range []func(*v1alpha1.NestedCluster, Params) ([]Object, error){Etcd, APIServer, ControllerManager, Scheduler, Syncer} {
		objs, err := build(nc, p)
		if err != nil {
			return nil, err
		}
		workloads = append(workloads, objs...)
	}
	out := []Object{Namespace(nc, p), LimitRange(nc, p), ResourceQuota(nc, p, workloads)}
	out = append(out, NetworkPolicies(nc, p)...)
	// The workload namespace and the syncer's RBAC before the syncer.
	out = append(out, WorkloadNamespace(nc, p)...)
	out = append(out, SyncerNodesBinding(nc, p)...)
	out = append(out, workloads...)
	if s := WakerEndpointSlice(nc, p); s != nil {
		out = append(out, s)
	}
	return out, nil
}

// Namespace is the management namespace. Pod Security enforces "baseline",
// the level the API's podTemplate validation guarantees; capn's own pods
// meet "restricted", so a warning means a user's podTemplate lowered it.
func Namespace(nc *v1alpha1.NestedCluster, p Params) *corev1.Namespace {
	labels := provisioner.OwnerLabels(nc)
	labels["pod-security.kubernetes.io/enforce"] = "baseline"
	labels["pod-security.kubernetes.io/warn"] = "restricted"
	labels["pod-security.kubernetes.io/audit"] = "restricted"
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: provisioner.NamespaceOf(nc, p.Addresses()), Labels: labels},
	}
}

// profileFor parses a component's version and picks its flag profile.
func profileFor(component, version string) (profiles.Profile, error) {
	v, err := versions.Parse(version)
	if err != nil {
		return profiles.Profile{}, fmt.Errorf("%s version %q: %w", component, version, err)
	}
	return profiles.For(v)
}

// replicasOf reads a defaulted replica count; nil means the object was not
// defaulted, which the builders refuse rather than guess.
func replicasOf(r *int32, field string) (int32, error) {
	if r == nil {
		return 0, fmt.Errorf("%s is not set: the NestedCluster must be defaulted before building", field)
	}
	return *r, nil
}
