package waker

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Metrics on capn-apiserver's /metrics.
var (
	wakes = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "waker", Name: "wakes_total",
		Help:           "Wakes the waker asked for: a connection arrived for a cluster asleep for inactivity.",
		StabilityLevel: metrics.ALPHA,
	})
	held = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "capn", Subsystem: "waker", Name: "held_connections",
		Help:           "Connections held while their cluster wakes.",
		StabilityLevel: metrics.ALPHA,
	})
	heldTimeouts = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "waker", Name: "hold_timeouts_total",
		Help:           "Held connections closed because their cluster had no ready apiserver in time.",
		StabilityLevel: metrics.ALPHA,
	})
	refused = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "capn", Subsystem: "waker", Name: "refused_connections_total",
		Help:           "Connections closed at once, by reason: no-route (the port leads to no sleeping cluster), cluster (its per-cluster cap), total (the waker's cap).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	firstByte = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: "capn", Subsystem: "waker", Name: "first_byte_seconds",
		Help:           "From a held connection's arrival to the woken apiserver's first byte.",
		Buckets:        []float64{0.5, 1, 2, 3, 4, 5, 7.5, 10, 15, 20, 30, 45, 60},
		StabilityLevel: metrics.ALPHA,
	})
)

var registerOnce sync.Once

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(wakes, held, heldTimeouts, refused, firstByte)
	})
}
