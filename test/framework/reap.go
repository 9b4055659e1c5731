package framework

import (
	"fmt"
	"time"
)

// ReapStale removes what runs that died without cleaning up (killed with
// SIGKILL) left behind: their nodes (processes, containers, mounts,
// bridges, chains, cgroups, files) and the unreachable routes for cidrs
// that no live run holds any more. It waits up to timeout for a running
// node of another process to go away, and holds the node lock until t's
// cleanup, so the caller may remove other node-level state too.
func ReapStale(t TB, timeout time.Duration, cidrs ...string) {
	t.Helper()
	lockNodes(t, timeout)
	reapStaleNodes(t)
	g := &routeGuard{cidrs: cidrs, holder: fmt.Sprintf("reap-%d", time.Now().UnixNano())}
	if err := g.release(); err != nil {
		t.Errorf("removing stale routes: %v", err)
	}
}
