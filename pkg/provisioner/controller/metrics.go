package controller

import (
	"context"
	"net/http"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	// workqueue_depth, _adds_total, _queue_duration_seconds ... for the
	// provisioner's queue (name "capn-provisioner") on /metrics.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"

	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/requestmetrics"
)

// Metrics on capn-apiserver's /metrics. Writes are counted at the
// Management boundary, so "a resync of a Ready cluster writes nothing" can
// be checked on a running system, not only in unit tests.
var (
	syncs = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "provisioner", Name: "syncs_total",
		Help:           "NestedCluster syncs by result (success, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	managementWrites = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "provisioner", Name: "management_writes_total",
		Help:           "Writes the provisioner made to the management cluster, by verb (apply, delete).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"verb"})
	managementRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "provisioner", Name: "management_requests_total",
		Help:           "Requests the provisioner sent to the management apiserver, by API verb (get, list, watch, create, patch, ...) and resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"verb", "resource"})
	orphansAwaiting = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "capn", Subsystem: "orphan_sweep", Name: "awaiting_namespaces",
		Help:           "Management namespaces whose owning NestedCluster is absent, waiting out the grace period.",
		StabilityLevel: metrics.ALPHA,
	})
	orphansDeleted = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "orphan_sweep", Name: "deleted_namespaces_total",
		Help:           "Orphaned management namespaces the sweep deleted.",
		StabilityLevel: metrics.ALPHA,
	})
	sweepHeld = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "orphan_sweep", Name: "held_total",
		Help:           "Sweeps that deleted nothing because too many namespaces looked orphaned at once (a damaged store?).",
		StabilityLevel: metrics.ALPHA,
	})
	leader = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "capn", Subsystem: "provisioner", Name: "leader",
		Help:           "1 while this replica holds the provisioner's lease (or runs without leader election), else 0.",
		StabilityLevel: metrics.ALPHA,
	})
	cachesSynced = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "capn", Subsystem: "provisioner", Name: "caches_synced",
		Help:           "1 once the provisioner's informers have synced in the current term, else 0.",
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(syncs, managementWrites, managementRequests, orphansAwaiting, orphansDeleted, sweepHeld, leader, cachesSynced)
	})
}

// countWrites wraps a Management so every successful or failed write
// attempt is counted: an attempted write is still traffic.
type countWrites struct{ Management }

func (c countWrites) Apply(ctx context.Context, manager string, o builders.Object) (builders.Object, error) {
	managementWrites.WithLabelValues("apply").Inc()
	return c.Management.Apply(ctx, manager, o)
}

func (c countWrites) Delete(ctx context.Context, o builders.Object) error {
	managementWrites.WithLabelValues("delete").Inc()
	return c.Management.Delete(ctx, o)
}

// countRequests counts every request sent through rt in
// capn_provisioner_management_requests_total.
func countRequests(rt http.RoundTripper) http.RoundTripper {
	return requestmetrics.Count(managementRequests, rt)
}
