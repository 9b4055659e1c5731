package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// TenantClientFunc builds a client for a tenant apiserver signed by its CA.
type TenantClientFunc func(server string, ca *pki.CA, now time.Time) (kubernetes.Interface, error)

// TenantBootstrapAnnotation, on the management namespace, is the durable
// record of the tenant bootstrap (bootstrapKey): a sha256 over the cluster
// CA certificate the bindings were made with and the UIDs of the etcd pods
// that stored them. It is written by its own field manager
// (BootstrapFieldManager), so the namespace's next apply neither removes
// it nor sees it as drift. Tenants cannot write management namespaces, so
// unlike status it cannot be forged. A CA made again (a repaired
// namespace, so a new tenant) or an etcd pod replaced (a Memory or
// EmptyDir etcd that lost its data, and with it the bindings) no longer
// matches, so the bootstrap runs again, without a capn restart.
const TenantBootstrapAnnotation = "capn.dev/tenant-bootstrap"

// BootstrapFieldManager owns TenantBootstrapAnnotation.
const BootstrapFieldManager = "capn-tenant-bootstrap"

// tenantAccess bootstraps each tenant's RBAC once its apiserver is
// available, in goroutines of its own, and records it (etcdloss.go: an
// etcd that lost its data restarts what cached it).
type tenantAccess struct {
	*env
	tenantClient TenantClientFunc
	queue        workqueue.TypedRateLimitingInterface[string]
	mu           sync.Mutex
	// bootstrapped maps a NestedCluster's UID to its bootstrap; the
	// finalizer forgets it.
	bootstrapped map[types.UID]*tenantBootstrap
	// tenantSlots bounds the bootstraps in flight; tenantWG counts them;
	// tenantWaiting holds the clusters that found no free slot.
	tenantSlots   chan struct{}
	tenantWaiting map[string]struct{}
	tenantWG      sync.WaitGroup
}

func newTenantAccess(e *env, tenantClient TenantClientFunc, queue workqueue.TypedRateLimitingInterface[string]) *tenantAccess {
	return &tenantAccess{env: e, tenantClient: tenantClient, queue: queue, bootstrapped: map[types.UID]*tenantBootstrap{},
		tenantWaiting: map[string]struct{}{}, tenantSlots: make(chan struct{}, DefaultTenantConcurrency)}
}

// tenantBootstrap is what capn holds in memory about a bootstrap that is
// not yet recorded: one running, one that failed (and its backoff), or one
// that succeeded and awaits its record. Once recorded it is forgotten.
type tenantBootstrap struct {
	caID    string
	done    bool
	running bool
	// changed: the successful attempt wrote bindings (an Event is due).
	changed bool
	// failure is the last attempt's DescribeTenantError text; reported
	// once, by the first sync after the attempt ended.
	failure  string
	reported bool
	// failures counts the attempts that failed in a row; no new attempt
	// starts before retryAt. Without it, a tenant that refuses at once
	// would be dialled again by the sync its own failure enqueued: a hot
	// loop of certificate signing and dials.
	failures int
	retryAt  time.Time
}

// tenantRetry is the wait after the n-th failed bootstrap in a row: 250 ms,
// 500 ms, 1 s, then 2 s up to the steadyTenantRetries-th failure, then
// doubling from 4 s to maxTenantRetry. The first retries are short because
// the first failures are usually the apiserver Service's endpoint not yet
// programmed a moment after the pod turned Ready; they stay at 2 s for
// about 20 s, so a transient fault that lasts seconds costs at most 2 s more
// than itself (plain doubling overshoots by as much as it has waited: 16 s
// after 16 s). Only a tenant that keeps failing backs off to a minute, so
// none is dialled in a hot loop.
func tenantRetry(n int) time.Duration {
	switch {
	case n <= 3:
		return firstTenantRetry << max(n-1, 0)
	case n <= steadyTenantRetries:
		return 2 * time.Second
	case n-steadyTenantRetries > 5:
		return maxTenantRetry
	}
	return min(4*time.Second<<(n-steadyTenantRetries-1), maxTenantRetry)
}

const firstTenantRetry = 250 * time.Millisecond

// steadyTenantRetries is the last failure after which the wait is 2 s.
const steadyTenantRetries = 13

const maxTenantRetry = time.Minute

// DefaultTenantConcurrency bounds the tenant bootstraps in flight.
const DefaultTenantConcurrency = 4

// tenantBootstrapTimeout bounds one whole bootstrap (a few requests, each
// bounded by access.TenantRequestTimeout).
const tenantBootstrapTimeout = 30 * time.Second

// bootstrapKey is TenantBootstrapAnnotation's value for a CA certificate
// and the etcd pods (none with an external etcd, which capn does not run
// and cannot see lose data). A replaced pod of a PersistentVolume etcd also
// changes it: the bootstrap then runs again and finds the bindings in
// place, which costs a few requests and no Event. revision is
// access.BootstrapRevision: a capn that grants more bootstraps again.
func bootstrapKey(caCert []byte, etcdPods []string, revision string) string {
	h := sha256.New()
	h.Write(caCert)
	h.Write([]byte("\nrevision " + revision))
	for _, uid := range slices.Sorted(slices.Values(etcdPods)) {
		h.Write([]byte("\n" + uid))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// etcdPodUIDs are the UIDs of the managed etcd's pods (cached).
func (c *tenantAccess) etcdPodUIDs(ctx context.Context, nc *v1alpha1.NestedCluster, ns string) ([]string, error) {
	if nc.Spec.Etcd.Managed == nil {
		return nil, nil
	}
	pods, err := c.mgmt.ListPods(ctx, ns, labels.SelectorFromSet(provisioner.SelectorLabels(nc, v1alpha1.ComponentEtcd)))
	if err != nil {
		return nil, fmt.Errorf("listing etcd pods in %s: %w", ns, err)
	}
	uids := make([]string, 0, len(pods))
	for _, p := range pods {
		uids = append(uids, string(p.UID))
	}
	return uids, nil
}

// ensureTenantAccess is the sync step that gets the tenant's first RBAC
// bindings (access.Bindings) written once its apiserver is available, so
// the kubeconfigs the subresource issues work the moment the NestedCluster
// says Ready. Its outcome goes to o.tenant; a failed attempt is returned
// as a *stepError that carries the attempt's backoff.
//
// The tenant is not called from the sync: a tenant apiserver runs an image
// the tenant may have chosen, and a slow one must not hold a worker that
// every other cluster's sync needs. Bootstraps run in their own goroutines,
// at most DefaultTenantConcurrency at once, and enqueue the cluster when
// they end; the sync after a success records it (TenantBootstrapAnnotation),
// and from then on the record answers, with no request to the tenant and
// no memory, across capn restarts too. ca is the cluster CA Secret's data
// as ensurePKI left it.
func (c *tenantAccess) ensureTenantAccess(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params, ca map[string][]byte, o *observation) error {
	etcdPods, err := c.etcdPodUIDs(ctx, nc, p.Namespace)
	if err != nil {
		return failed(v1alpha1.ReasonObserveFailed, err)
	}
	if restarted, err := c.restartAfterEtcdLoss(ctx, nc, p.Namespace, etcdPods); err != nil {
		return failed(v1alpha1.ReasonApplyFailed, err)
	} else if restarted {
		return nil // bootstrap against the new apiserver, once it is available
	}
	caID := bootstrapKey(ca[corev1.TLSCertKey], etcdPods, access.BootstrapRevision())
	ns, err := c.mgmt.Get(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}})
	if err != nil {
		return failed(v1alpha1.ReasonObserveFailed, fmt.Errorf("getting namespace %s: %w", p.Namespace, err))
	}
	if ns.GetAnnotations()[TenantBootstrapAnnotation] == caID {
		o.tenant.done = true
		c.forgetBootstrap(nc.UID)
		return nil
	}
	c.mu.Lock()
	rec := c.bootstrapped[nc.UID]
	if rec == nil || rec.caID != caID {
		rec = &tenantBootstrap{caID: caID}
		c.bootstrapped[nc.UID] = rec
	}
	done, changed := rec.done, rec.changed
	c.mu.Unlock()
	if done {
		if err := c.recordBootstrap(ctx, p.Namespace, caID, etcdPods); err != nil {
			return failed(v1alpha1.ReasonTenantBootstrapFailed, err)
		}
		o.tenant.done, o.tenant.recorded = true, changed
		c.forgetBootstrap(nc.UID)
		return nil
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// One failure alone is not reported: right after the apiserver turns
	// Ready its Service often has no endpoint yet, and the retry 250 ms
	// later gets through. Two in a row are.
	reportable := rec.failure != "" && rec.failures >= 2
	if reportable {
		o.tenant.failure = rec.failure
	}
	// last is the failed attempt as the step's error: the fixed
	// description only, never the tenant's own text, as a Warning Event
	// once (quiet after), and with a requeue of its own: the backoff's end,
	// or, while an attempt runs, the not-ready safety net (the attempt
	// enqueues the cluster when it ends).
	last := func(after time.Duration) error {
		if !reportable {
			return nil
		}
		se := &stepError{reason: v1alpha1.ReasonTenantBootstrapFailed, err: errors.New(rec.failure),
			retryAfter: after, quiet: rec.reported}
		rec.reported = true
		return se
	}
	if rec.running {
		return last(notReadyRequeue)
	}
	if wait := rec.retryAt.Sub(c.now()); wait > 0 {
		return last(wait)
	}
	clusterCA, err := pki.ParseCA(ca[corev1.TLSCertKey], ca[corev1.TLSPrivateKeyKey])
	if err != nil {
		return failed(v1alpha1.ReasonTenantBootstrapFailed, fmt.Errorf("parsing the cluster CA: %w", err))
	}
	key := nc.Namespace + "/" + nc.Name
	select {
	case c.tenantSlots <- struct{}{}:
	default:
		// All slots busy: the next bootstrap to end enqueues this one.
		c.tenantWaiting[key] = struct{}{}
		return last(notReadyRequeue)
	}
	rec.running = true
	c.tenantWG.Add(1)
	go c.bootstrapTenant(klog.NewContext(context.WithoutCancel(ctx), klog.FromContext(ctx)), rec,
		provisioner.APIServerURL(nc, p.Addresses()), clusterCA, key)
	return last(notReadyRequeue)
}

// recordBootstrap writes TenantBootstrapAnnotation on the management
// namespace as BootstrapFieldManager: a namespace apply with only that.
func (c *tenantAccess) recordBootstrap(ctx context.Context, namespace, caID string, etcdPods []string) error {
	annotations := map[string]string{TenantBootstrapAnnotation: caID}
	if len(etcdPods) > 0 {
		annotations[TenantEtcdPodsAnnotation] = joinSorted(etcdPods)
	}
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: namespace, Annotations: annotations},
	}
	if _, err := c.mgmt.Apply(ctx, BootstrapFieldManager, ns); err != nil {
		return fmt.Errorf("recording the bootstrap on namespace %s: %w", namespace, err)
	}
	return nil
}

func (c *tenantAccess) forgetBootstrap(uid types.UID) {
	c.mu.Lock()
	delete(c.bootstrapped, uid)
	c.mu.Unlock()
}

// bootstrapTenant runs one bootstrap and records its outcome in rec.
func (c *tenantAccess) bootstrapTenant(ctx context.Context, rec *tenantBootstrap, server string, ca *pki.CA, key string) {
	defer c.tenantWG.Done()
	ctx, cancel := context.WithTimeout(ctx, tenantBootstrapTimeout)
	defer cancel()
	changed, err := func() (bool, error) {
		tenant, err := c.tenantClient(server, ca, c.now())
		if err != nil {
			return false, err
		}
		return access.Bootstrap(ctx, tenant)
	}()
	failure := access.DescribeTenantError(err)
	c.mu.Lock()
	rec.running = false
	rec.done, rec.changed = err == nil, changed
	rec.failure, rec.reported = failure, false
	retry := time.Duration(0)
	if err != nil {
		rec.failures++
		retry = tenantRetry(rec.failures)
		rec.retryAt = c.now().Add(retry)
	} else {
		rec.failures, rec.retryAt = 0, time.Time{}
	}
	// Hand the slot to a cluster that found none.
	var next string
	for k := range c.tenantWaiting {
		next = k
		delete(c.tenantWaiting, k)
		break
	}
	c.mu.Unlock()
	<-c.tenantSlots
	if err != nil {
		// The tenant's answer is not logged either: only the fixed text.
		klog.FromContext(ctx).Info("Tenant bootstrap failed", "reason", failure)
	}
	if c.queue != nil {
		c.queue.AddAfter(key, retry) // at once after a success: the record follows
		if next != "" {
			c.queue.Add(next)
		}
	}
}
