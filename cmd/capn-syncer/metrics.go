package main

import (
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"capn.dev/capn/pkg/requestmetrics"
)

// managementRequests is counted at the management client's transport, not
// in the controllers, so that "a converged syncer sends the management
// apiserver nothing" can be read off a running syncer whichever code path
// (informers, writes, retries) sent a request, and so that a benchmark can
// divide the requests by the pods it created. It mirrors the provisioner's
// capn_provisioner_management_requests_total.
var (
	managementRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "syncer", Name: "management_requests_total",
		Help:           "Requests the syncer sent to the management apiserver, by API verb (get, list, watch, create, update, patch, delete, ...) and resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"verb", "resource"})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(managementRequests) })
}

// countManagementRequests makes every client built from cfg count its
// requests. It registers the metrics first: component-base drops what a
// metric records before it is registered.
func countManagementRequests(cfg *rest.Config) {
	registerMetrics()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return requestmetrics.Count(managementRequests, rt) })
}

// metricsHandler serves every registered metric, the Go runtime's and the
// process's (RSS, CPU) included.
func metricsHandler() http.Handler { return legacyregistry.Handler() }
