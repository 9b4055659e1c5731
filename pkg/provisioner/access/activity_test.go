package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What kube-apiserver v1.37 writes at dump_priority_levels (tabwriter
// columns joined by ",\t").
const dump = `PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests
catch-all,         0,            true,   false,       0,               0,                 3,                  0,                0,                0
exempt,            0,            true,   false,       0,               0,                 0,                  0,                0,                0
global-default,    0,            true,   false,       0,               0,                 40,                 0,                0,                0
leader-election,   0,            true,   false,       0,               0,                 900,                0,                0,                0
node-high,         0,            true,   false,       0,               0,                 77,                 0,                0,                0
system,            0,            true,   false,       0,               0,                 12,                 0,                0,                0
workload-high,     0,            true,   false,       0,               1,                 5000,               0,                0,                0
workload-low,      0,            true,   false,       0,               0,                 2,                  0,                0,                0
`

// Only what the tenant's users and workloads sent counts: global-default,
// workload-low and catch-all here, not the control plane's levels.
func TestParseDispatchedCountsTenantLevelsOnly(t *testing.T) {
	n, err := parseDispatched([]byte(dump))
	require.NoError(t, err)
	assert.Equal(t, int64(40+2+3), n)
}

func TestParseDispatchedRefusesMalformedDumps(t *testing.T) {
	for name, body := range map[string]string{
		"empty":           "",
		"no header":       "global-default, 0, true, false, 0, 0, 40, 0, 0, 0\n",
		"short row":       "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests\nglobal-default, 0\n",
		"not a count":     "PriorityLevelName, DispatchedRequests\nglobal-default, lots\n",
		"negative count":  "PriorityLevelName, DispatchedRequests\nglobal-default, -4\n",
		"html error page": "<html><body>hello</body></html>",
	} {
		_, err := parseDispatched([]byte(body))
		assert.ErrorIs(t, err, errMalformedDump, name)
	}
}
