package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// TenantClientFunc builds a client for a tenant apiserver signed by its CA.
type TenantClientFunc func(server string, ca *pki.CA, now time.Time) (kubernetes.Interface, error)

// ensureTenantAccess writes the tenant's first RBAC bindings (access.Bindings)
// once its apiserver is available, so the kubeconfigs the subresource issues
// work the moment the NestedCluster says Ready. It reports whether that is
// done. Success is remembered per cluster UID and CA: a resync then costs no
// request at all, and a re-created CA (a repaired namespace, hence a new
// tenant) is bootstrapped again. A capn restart re-applies, which also
// repairs bindings a tenant removed.
// ca is the cluster CA Secret's data as ensurePKI left it.
func (c *Controller) ensureTenantAccess(ctx context.Context, nc *v1alpha1.NestedCluster, in *capn.NestedCluster, p builders.Params, ca map[string][]byte, apiAvailable bool) (bool, error) {
	if !apiAvailable {
		return false, nil
	}
	sum := sha256.Sum256(ca[corev1.TLSCertKey])
	caID := hex.EncodeToString(sum[:8])
	c.mu.Lock()
	done := c.bootstrapped[nc.UID] == caID
	c.mu.Unlock()
	if done {
		return true, nil
	}
	clusterCA, err := pki.ParseCA(ca[corev1.TLSCertKey], ca[corev1.TLSPrivateKeyKey])
	if err != nil {
		return false, fmt.Errorf("parsing the cluster CA: %w", err)
	}
	tenant, err := c.tenantClient(builders.APIServerURL(in, p), clusterCA, c.now())
	if err != nil {
		return false, err
	}
	changed, err := access.Bootstrap(ctx, tenant)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	c.bootstrapped[nc.UID] = caID
	c.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Tenant access bootstrapped", "group", access.TenantAdminsGroup, "changed", changed)
	if changed {
		// Only on a change: a capn restart re-checks every tenant, and
		// that must not fill the management cluster with Events.
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "TenantBootstrapped",
			"bound group %s to cluster-admin in the tenant; kubeconfigs from nestedclusters/kubeconfig now work", access.TenantAdminsGroup)
	}
	return true, nil
}
