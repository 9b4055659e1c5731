package kubelet

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corelisters "k8s.io/client-go/listers/core/v1"

	"capn.dev/capn/pkg/tenant/names"
)

// PodGetter reads one pod; an apierrors NotFound error when there is none.
type PodGetter func(ctx context.Context, namespace, name string) (*corev1.Pod, error)

// ListerGetter reads pods from an informer's lister, which is what the
// syncer already holds for both clusters: a request costs no apiserver
// round trip before its replay.
func ListerGetter(l corelisters.PodLister) PodGetter {
	return func(_ context.Context, namespace, name string) (*corev1.Pod, error) {
		return l.Pods(namespace).Get(name)
	}
}

// Resolver maps a tenant pod to the host pod that runs it.
type Resolver struct {
	// WorkloadNamespace is the management namespace of the tenant's host
	// pods.
	WorkloadNamespace string
	// Tenant reads the tenant's pods; Host the workload namespace's.
	Tenant, Host PodGetter
}

// Target is a resolved tenant pod and its host pod.
type Target struct {
	Tenant, Host *corev1.Pod
}

// HasContainer reports whether the tenant pod declares container. Only
// the tenant's own containers are reachable, even if a host pod ever
// carries one the syncer added.
func (t Target) HasContainer(container string) bool {
	for _, cs := range [][]corev1.Container{t.Tenant.Spec.Containers, t.Tenant.Spec.InitContainers} {
		for _, c := range cs {
			if c.Name == container {
				return true
			}
		}
	}
	return false
}

var podsResource = schema.GroupResource{Resource: "pods"}

// errNotThisTenants is the Forbidden detail for a host pod that records
// another identity: the caller learns no more than that.
var errNotThisTenants = errors.New("the pod is not served on this node")

// Resolve finds the host pod of the tenant pod namespace/name, and of
// that UID when uid is not empty. The host name is only where to look:
// what makes the host pod the tenant pod's is the identity the syncer
// recorded on it, which must name this namespace, name and the tenant
// pod's current UID. Errors are apierrors in the tenant's terms (the host
// pod is never named): NotFound for a pod that does not exist, is not
// bound, or has no host pod yet; Forbidden for a host pod that is not
// this pod's.
func (r Resolver) Resolve(ctx context.Context, namespace, name, uid string) (Target, error) {
	tenant, err := r.Tenant(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return Target{}, apierrors.NewNotFound(podsResource, name)
	}
	if err != nil {
		return Target{}, fmt.Errorf("reading tenant pod %s/%s: %w", namespace, name, err)
	}
	if tenant.Namespace != namespace || tenant.Name != name || (uid != "" && string(tenant.UID) != uid) {
		return Target{}, apierrors.NewNotFound(podsResource, name)
	}
	if tenant.Spec.NodeName == "" {
		// The tenant apiserver sends no request for an unbound pod; a
		// node has nothing to say about one.
		return Target{}, apierrors.NewNotFound(podsResource, name)
	}
	host, err := r.Host(ctx, r.WorkloadNamespace, names.Host(namespace, name))
	if apierrors.IsNotFound(err) {
		return Target{}, apierrors.NewNotFound(podsResource, name)
	}
	if err != nil {
		return Target{}, fmt.Errorf("reading the host pod of %s/%s: %w", namespace, name, err)
	}
	id, ok := names.IdentityOf(host.Labels, host.Annotations)
	if host.Namespace != r.WorkloadNamespace || !ok ||
		host.Labels["app.kubernetes.io/managed-by"] != names.ManagedByValue ||
		id.Namespace != namespace || id.Name != name {
		return Target{}, apierrors.NewForbidden(podsResource, name, errNotThisTenants)
	}
	if id.UID != string(tenant.UID) {
		// The host pod of an earlier pod of this name, not yet replaced:
		// this pod does not run here yet.
		return Target{}, apierrors.NewNotFound(podsResource, name)
	}
	return Target{Tenant: tenant, Host: host}, nil
}
