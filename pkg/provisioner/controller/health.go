package controller

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// StuckAfter is how long the leading provisioner may go without finishing a
// sync while work waits, or without its caches syncing, before /livez
// fails. Both mean a wedged controller (a hung management call, a watch
// that never lists), for which a restart is the remedy. No sync waits that
// long on its own: tenant calls run off the workers (bootstrap.go).
const StuckAfter = 5 * time.Minute

// Health is the provisioner's liveness check, /livez/capn-provisioner. It
// outlives leadership terms: Start reports each term's state into it.
//
// It is a liveness check, not a readiness one, on purpose: every replica
// serves the API whether or not it provisions, so a provisioner that is
// not leading, or still syncing its caches, must not take the replica out
// of the APIService's endpoints. Leader, caches_synced and the queue depth
// (workqueue_depth{name="capn-provisioner"}) are metrics.
type Health struct {
	mu       sync.Mutex
	now      func() time.Time
	leading  bool
	since    time.Time // leading since
	synced   bool
	progress time.Time // the last finished sync, or the term's start
	queueLen func() int
}

// NewHealth returns a Health for a provisioner that is not leading.
func NewHealth() *Health { return &Health{now: time.Now} }

// Name implements healthz.HealthChecker.
func (h *Health) Name() string { return "capn-provisioner" }

// Check implements healthz.HealthChecker.
func (h *Health) Check(*http.Request) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.leading {
		return nil
	}
	now := h.now()
	if !h.synced {
		if waited := now.Sub(h.since); waited > StuckAfter {
			return fmt.Errorf("leading for %s, caches not synced", waited.Round(time.Second))
		}
		return nil
	}
	if h.queueLen == nil {
		return nil
	}
	if n := h.queueLen(); n > 0 {
		if idle := now.Sub(h.progress); idle > StuckAfter {
			return fmt.Errorf("%d NestedClusters queued, no sync finished for %s", n, idle.Round(time.Second))
		}
	}
	return nil
}

func (h *Health) startLeading() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leading, h.synced, h.queueLen = true, false, nil
	h.since = h.now()
	h.progress = h.since
}

func (h *Health) stopLeading() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leading, h.synced, h.queueLen = false, false, nil
}

func (h *Health) cachesSynced(queueLen func() int) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.synced, h.queueLen = true, queueLen
	h.progress = h.now()
}

func (h *Health) syncDone() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.progress = h.now()
}
