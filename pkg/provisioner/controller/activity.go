package controller

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// DefaultActivityInterval is how often a tenant with spec.sleep.
// afterInactivity has its request counter read.
const DefaultActivityInterval = time.Minute

// activityConcurrency bounds the counter reads in flight; a cluster that
// finds no slot is read on a later sync.
const activityConcurrency = 4

// activityMonitor reads the request counters of tenants that sleep after
// inactivity, each read in a goroutine of its own, and enqueues a cluster
// on the clusters loop once it is idle.
type activityMonitor struct {
	*env
	tenantClient TenantClientFunc
	queue        workqueue.TypedRateLimitingInterface[string]
	mu           sync.Mutex
	// activity maps a NestedCluster's UID to its use; activitySlots bounds
	// the reads in flight, activityWG counts them.
	activity       map[types.UID]*activity
	activitySlots  chan struct{}
	activityWG     sync.WaitGroup
	tenantRequests func(ctx context.Context, server string, ca *pki.CA) (int64, error)
}

func newActivityMonitor(e *env, tenantClient TenantClientFunc, queue workqueue.TypedRateLimitingInterface[string]) *activityMonitor {
	a := &activityMonitor{env: e, tenantClient: tenantClient, queue: queue,
		activity: map[types.UID]*activity{}, activitySlots: make(chan struct{}, activityConcurrency)}
	a.tenantRequests = a.tenantRequestsOf
	return a
}

// activity is what capn knows of one tenant's use, in memory only: after a
// restart of capn, a tenant counts as used at that moment, so a restart
// can delay a sleep but never cause one.
type activity struct {
	// requests is the tenant's counter at the last read (known: read once).
	requests int64
	known    bool
	// since is when the counter last moved, or tracking began: the tenant
	// is idle since then.
	since     time.Time
	checkedAt time.Time
	running   bool
}

// observeActivity runs at the end of a sync of an awake cluster whose
// tenant bootstrap is done (so capn-syncer's FlowSchema is in place). It
// starts a read of the tenant's counter when one is due, and sets
// o.sleep.inactive once nothing moved it for spec.sleep.afterInactivity.
func (c *activityMonitor) observeActivity(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params, ca map[string][]byte, o *observation) {
	after := nc.Spec.Sleep.AfterInactivity
	if after == nil || o.sleep.asked {
		c.forgetActivity(nc.UID)
		return
	}
	now := c.now()
	c.mu.Lock()
	a := c.activity[nc.UID]
	if a == nil {
		a = &activity{since: now}
		c.activity[nc.UID] = a
	}
	// Idle as far as a read has shown: the use between the last read and
	// now is unknown, so only a read can confirm a sleep.
	confirmed := a.known && a.checkedAt.Sub(a.since) >= after.Duration
	due := !a.running && (now.Sub(a.checkedAt) >= c.cfg.ActivityInterval || now.Sub(a.since) >= after.Duration)
	c.mu.Unlock()
	if confirmed {
		o.sleep.inactive = true
		return
	}
	o.sleep.recheck = min(c.cfg.ActivityInterval, max(a.since.Add(after.Duration).Sub(now), time.Second))
	if !due {
		return
	}
	clusterCA, err := pki.ParseCA(ca[corev1.TLSCertKey], ca[corev1.TLSPrivateKeyKey])
	if err != nil {
		klog.FromContext(ctx).Error(err, "Parsing the cluster CA for the activity check")
		return
	}
	select {
	case c.activitySlots <- struct{}{}:
	default:
		return // all busy: a later sync reads it
	}
	c.mu.Lock()
	a.running = true
	c.mu.Unlock()
	c.activityWG.Add(1)
	go c.readActivity(klog.NewContext(context.WithoutCancel(ctx), klog.FromContext(ctx)), a, after.Duration,
		provisioner.APIServerURL(nc, p.Addresses()), clusterCA, nc.Namespace+"/"+nc.Name)
}

// readActivity reads the tenant's request counter once. A failed read
// counts as use: capn cannot tell, and a sleep it cannot justify is worse
// than one that comes late.
func (c *activityMonitor) readActivity(ctx context.Context, a *activity, after time.Duration, server string, ca *pki.CA, key string) {
	defer c.activityWG.Done()
	defer func() { <-c.activitySlots }()
	ctx, cancel := context.WithTimeout(ctx, access.TenantRequestTimeout)
	defer cancel()
	n, err := c.tenantRequests(ctx, server, ca)
	now := c.now()
	c.mu.Lock()
	a.running, a.checkedAt = false, now
	switch {
	case err != nil:
		a.since = now
		klog.FromContext(ctx).V(2).Info("Activity check failed", "reason", access.DescribeTenantError(err))
	case !a.known:
		a.requests, a.known = n, true
	case n != a.requests:
		a.requests, a.since = n, now
	}
	idle := a.known && now.Sub(a.since) >= after
	c.mu.Unlock()
	if idle && c.queue != nil {
		c.queue.Add(key) // the sync that puts it to sleep
	}
}

// tenantRequestsOf reads a tenant's request counter through a client
// from c.tenantClient.
func (c *activityMonitor) tenantRequestsOf(ctx context.Context, server string, ca *pki.CA) (int64, error) {
	tenant, err := c.tenantClient(server, ca, c.now())
	if err != nil {
		return 0, err
	}
	return access.TenantRequests(ctx, tenant)
}

func (c *activityMonitor) forgetActivity(uid types.UID) {
	c.mu.Lock()
	delete(c.activity, uid)
	c.mu.Unlock()
}
