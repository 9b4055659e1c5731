package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// TenantClientFunc builds a client for a tenant apiserver signed by its CA.
type TenantClientFunc func(server string, ca *pki.CA, now time.Time) (kubernetes.Interface, error)

// tenantBootstrap is what capn knows about one cluster's RBAC bootstrap.
// It is tied to the CA it was made with: a re-created CA (a repaired
// namespace, hence a new tenant) starts over.
type tenantBootstrap struct {
	caID    string
	done    bool
	running bool
	// failure is the last attempt's DescribeTenantError text.
	failure string
	// failures counts the attempts that failed in a row; no new attempt
	// starts before retryAt. Without it, a tenant that refuses at once
	// would be dialled again by the sync its own failure enqueued: a hot
	// loop of certificate signing and dials.
	failures int
	retryAt  time.Time
}

// tenantRetry is the wait after the n-th failed bootstrap in a row: 1 s,
// doubling, at most maxTenantRetry.
func tenantRetry(n int) time.Duration {
	if n > 7 {
		return maxTenantRetry
	}
	return min(time.Second<<max(n-1, 0), maxTenantRetry)
}

const maxTenantRetry = time.Minute

// DefaultTenantConcurrency bounds the tenant bootstraps in flight.
const DefaultTenantConcurrency = 4

// tenantBootstrapTimeout bounds one whole bootstrap (a few requests, each
// bounded by access.TenantRequestTimeout).
const tenantBootstrapTimeout = 30 * time.Second

// ensureTenantAccess gets the tenant's first RBAC bindings (access.Bindings)
// written once its apiserver is available, so the kubeconfigs the
// subresource issues work the moment the NestedCluster says Ready. It
// reports whether that is done, and the last attempt's failure.
//
// The tenant is not called from the sync: a tenant apiserver runs an image
// the tenant may have chosen, and a slow one must not hold a worker that
// every other cluster's sync needs. Bootstraps run in their own goroutines,
// at most DefaultTenantConcurrency at once, and enqueue the cluster when
// they end. Success is remembered per cluster UID and CA, so a resync costs
// no request; a capn restart re-applies, which also repairs bindings a
// tenant removed. ca is the cluster CA Secret's data as ensurePKI left it.
func (c *Controller) ensureTenantAccess(ctx context.Context, nc *v1alpha1.NestedCluster, in *v1alpha1.NestedCluster, p builders.Params, ca map[string][]byte, apiAvailable bool) (bool, error) {
	if !apiAvailable {
		return false, nil
	}
	sum := sha256.Sum256(ca[corev1.TLSCertKey])
	caID := hex.EncodeToString(sum[:8])
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.bootstrapped[nc.UID]
	if rec == nil || rec.caID != caID {
		rec = &tenantBootstrap{caID: caID}
		c.bootstrapped[nc.UID] = rec
	}
	if rec.done {
		return true, nil
	}
	var failed error
	if rec.failure != "" {
		failed = errors.New(rec.failure)
	}
	if rec.running || c.now().Before(rec.retryAt) {
		return false, failed
	}
	clusterCA, err := pki.ParseCA(ca[corev1.TLSCertKey], ca[corev1.TLSPrivateKeyKey])
	if err != nil {
		return false, fmt.Errorf("parsing the cluster CA: %w", err)
	}
	select {
	case c.tenantSlots <- struct{}{}:
	default:
		return false, failed // all slots busy: the 30 s requeue of a not-ready cluster retries
	}
	rec.running = true
	c.tenantWG.Add(1)
	key := nc.Namespace + "/" + nc.Name
	go c.bootstrapTenant(klog.NewContext(context.WithoutCancel(ctx), klog.FromContext(ctx)), nc.DeepCopy(), rec,
		provisioner.APIServerURL(in, p.Addresses()), clusterCA, key)
	return false, failed
}

// bootstrapTenant runs one bootstrap and records its outcome in rec.
func (c *Controller) bootstrapTenant(ctx context.Context, nc *v1alpha1.NestedCluster, rec *tenantBootstrap, server string, ca *pki.CA, key string) {
	defer c.tenantWG.Done()
	defer func() { <-c.tenantSlots }()
	ctx, cancel := context.WithTimeout(ctx, tenantBootstrapTimeout)
	defer cancel()
	changed, err := func() (bool, error) {
		tenant, err := c.tenantClient(server, ca, c.now())
		if err != nil {
			return false, err
		}
		return access.Bootstrap(ctx, tenant)
	}()
	logger := klog.FromContext(ctx)
	failure := access.DescribeTenantError(err)
	c.mu.Lock()
	rec.running = false
	rec.done = err == nil
	rec.failure = failure
	retry := time.Duration(0)
	if err != nil {
		rec.failures++
		retry = tenantRetry(rec.failures)
		rec.retryAt = c.now().Add(retry)
	} else {
		rec.failures, rec.retryAt = 0, time.Time{}
	}
	c.mu.Unlock()
	switch {
	case err != nil:
		// The tenant's answer is not logged either: only the fixed text.
		logger.Info("Tenant bootstrap failed", "reason", failure)
		c.recorder.Event(nc, corev1.EventTypeWarning, "TenantBootstrapFailed", failure)
	case changed:
		// Only on a change: a capn restart re-checks every tenant, and
		// that must not fill the management cluster with Events.
		logger.V(2).Info("Tenant access bootstrapped", "group", access.TenantAdminsGroup)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "TenantBootstrapped",
			"bound group %s to cluster-admin in the tenant; kubeconfigs from nestedclusters/kubeconfig now work", access.TenantAdminsGroup)
	}
	if c.queue != nil {
		c.queue.AddAfter(key, retry) // at once after a success
	}
}
