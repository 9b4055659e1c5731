package kubelet

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics/*.golden from FilterResourceMetrics")

// tenantA recognizes tenant A's one live host pod, as the syncer does by
// the tenant UID it records: a-stale-1 is in A's namespace but its
// tenant pod is gone.
func tenantA(host string) (string, string, bool) {
	if host == "a-web-1" {
		return "shop", "web-7d9f", true
	}
	return "", "", false
}

func tenantB(host string) (string, string, bool) {
	if host == "b-db-1" {
		return "default", "db-0", true
	}
	return "", "", false
}

// The host kubelet's answer holds two tenants' pods, a control-plane pod
// and a provider pod; each tenant gets exactly its own, in its own names,
// and node sums of its own containers only.
func TestFilterResourceMetricsKeepsExactlyTheTenantsPods(t *testing.T) {
	for _, tc := range []struct {
		name, ns string
		pods     TenantPod
	}{{"tenant-a", "capn-a-w", tenantA}, {"tenant-b", "capn-b-w", tenantB}} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := os.Open(filepath.Join("testdata", "metrics", "host.txt"))
			require.NoError(t, err)
			defer in.Close()
			fams, err := FilterResourceMetrics(in, tc.ns, tc.pods)
			require.NoError(t, err)
			var out bytes.Buffer
			require.NoError(t, WriteMetrics(&out, fams))
			golden := filepath.Join("testdata", "metrics", tc.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to write it")
			assert.Equal(t, string(want), out.String())
			for _, leak := range []string{"capn-", "kube-system", "etcd", "kube-apiserver", "a-web-1", "b-db-1", "stale", "123456", "resource_scrape_error"} {
				assert.NotContains(t, out.String(), leak)
			}
		})
	}
}

func TestFilterResourceMetricsBounds(t *testing.T) {
	long := strings.Repeat("# padding comment line\n", MaxHostMetricsBytes/20)
	_, err := FilterResourceMetrics(strings.NewReader(long), "capn-a-w", tenantA)
	require.ErrorContains(t, err, "longer than")

	hist := "# TYPE container_cpu_usage_seconds_total histogram\ncontainer_cpu_usage_seconds_total_bucket{le=\"1\",namespace=\"capn-a-w\",pod=\"a-web-1\"} 1\n"
	_, err = FilterResourceMetrics(strings.NewReader(hist), "capn-a-w", tenantA)
	require.ErrorContains(t, err, "not a gauge or counter")

	fams, err := FilterResourceMetrics(strings.NewReader(""), "capn-a-w", tenantA)
	require.NoError(t, err)
	assert.Empty(t, fams, "no pods: no node sums either")
}

func TestResourceMetricsPathRoundTrips(t *testing.T) {
	node, ok := parseMetricsPath(ResourceMetricsPath("node-1"))
	require.True(t, ok)
	assert.Equal(t, "node-1", node)
	for _, p := range []string{"/metrics/resource", "/nodes//metrics/resource", "/nodes/a/b/metrics/resource", "/nodes/a/metrics/cadvisor", "/stats/summary"} {
		_, ok := parseMetricsPath(p)
		assert.False(t, ok, p)
	}
}
