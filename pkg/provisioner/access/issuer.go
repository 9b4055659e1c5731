// Package access issues tenant credentials: the kubeconfigs served by the
// nestedclusters/kubeconfig subresource, and the provisioner's own
// short-lived bootstrap identity inside a tenant.
package access

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/pki"
)

// ErrNotProvisioned: the tenant's CA or apiserver Service does not exist
// yet. The API server maps it to 409 Conflict.
var ErrNotProvisioned = errors.New("the control plane is not provisioned yet")

// TenantAdminsGroup is the group of every certificate the kubeconfig
// subresource issues. The provisioner binds it to cluster-admin inside the
// tenant when the tenant first comes up (see Bootstrap), so a tenant can
// revoke that access with RBAC, which system:masters would not allow.
const TenantAdminsGroup = "capn.dev:cluster-admins"

// Issuer signs tenant kubeconfigs with the tenant's cluster CA, read from the
// management cluster at each request so a renewed CA is always the one used.
type Issuer struct {
	Management kubernetes.Interface
	// Now is the clock for certificates; nil means time.Now.
	Now func() time.Time
}

// Issue signs a kubeconfig for user, valid for ttl, with nc's cluster CA.
func (i *Issuer) Issue(ctx context.Context, nc *v1alpha1.NestedCluster, user string, ttl time.Duration) ([]byte, time.Time, error) {
	ca, server, err := Endpoint(ctx, i.Management, nc)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := time.Now()
	if i.Now != nil {
		now = i.Now()
	}
	data, err := pki.TenantKubeconfig(server, ca, user, []string{TenantAdminsGroup}, ttl, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	// TenantKubeconfig clamps; the registry has already refused more than
	// the server's maximum, so this is the requested lifetime.
	return data, now.Add(min(ttl, pki.MaxTenantKubeconfigTTL)), nil
}

// Endpoint returns nc's cluster CA (with its key: callers sign with it and
// must not leak it) and the URL tenants reach its apiserver at (as
// status.endpoint: the load balancer, else the ClusterIP), or an error
// wrapping ErrNotProvisioned while either is missing. It reads only the
// namespace provisioner.ResolveNamespace gives nc, so a cluster can never
// be handed another cluster's CA (a name collision is refused with
// provisioner.ErrNotOwned).
func Endpoint(ctx context.Context, c kubernetes.Interface, nc *v1alpha1.NestedCluster) (*pki.CA, string, error) {
	t, err := resolveTenant(ctx, c, nc)
	if err != nil {
		return nil, "", err
	}
	return t.ca, t.endpoint, nil
}

// tenantAddress is what Endpoint reads, and where capn itself reaches
// the tenant apiserver from inside the management cluster.
type tenantAddress struct {
	namespace string
	ca        *pki.CA
	// endpoint is for tenants and nodes (provisioner.APIServerEndpoint),
	// internal for capn (provisioner.APIServerURL).
	endpoint, internal string
}

func resolveTenant(ctx context.Context, c kubernetes.Interface, nc *v1alpha1.NestedCluster) (*tenantAddress, error) {
	ns, err := provisioner.ResolveNamespace(nc, func(name string) (map[string]string, error) {
		live, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("getting namespace %s: %w", name, err)
		}
		return provisioner.NonNilLabels(live.Labels), nil
	})
	if err != nil {
		return nil, fmt.Errorf("resolving the management namespace: %w", err)
	}
	certPEM, keyPEM, err := clusterCA(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing the cluster CA of %s/%s: %w", nc.Namespace, nc.Name, err)
	}
	svc, err := c.CoreV1().Services(ns).Get(ctx, provisioner.APIServerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && svc.Spec.ClusterIP == "") {
		return nil, fmt.Errorf("%w: no apiserver Service", ErrNotProvisioned)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver Service: %w", err)
	}
	a := provisioner.Addresses{Namespace: ns, APIServerServiceIP: svc.Spec.ClusterIP, APIServerExternalAddress: LoadBalancerAddress(svc)}
	return &tenantAddress{namespace: ns, ca: ca, endpoint: provisioner.APIServerEndpoint(nc, a), internal: provisioner.APIServerURL(nc, a)}, nil
}

// LoadBalancerAddress is a LoadBalancer Service's first ingress address (IP,
// else host name), or "" while it has none or is another type.
func LoadBalancerAddress(svc *corev1.Service) string {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) == 0 {
		return ""
	}
	in := svc.Status.LoadBalancer.Ingress[0]
	if in.IP != "" {
		return in.IP
	}
	return in.Hostname
}

// clusterCA reads the cluster CA from the roots Secret, or from the
// logical Secret of a cluster that predates it (provisioner.SecretPKIRoots).
func clusterCA(ctx context.Context, c kubernetes.Interface, ns string) (certPEM, keyPEM []byte, err error) {
	sec, err := c.CoreV1().Secrets(ns).Get(ctx, provisioner.SecretPKIRoots, metav1.GetOptions{})
	if err == nil {
		return sec.Data[provisioner.RootKeyCACert], sec.Data[provisioner.RootKeyCAKey], nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	sec, err = c.CoreV1().Secrets(ns).Get(ctx, provisioner.SecretCA, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("%w: no cluster CA", ErrNotProvisioned)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	return sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey], nil
}
