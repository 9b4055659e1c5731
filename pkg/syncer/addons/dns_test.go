package addons

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.yaml from the builder")

func TestCoreDNSGolden(t *testing.T) {
	for name, c := range map[string]DNSConfig{
		"default":   {Image: "registry.k8s.io/coredns/coredns:v1.15.0", Domain: "cluster.local"},
		"upstreams": {Image: "registry.example/coredns:v1", Domain: "tenant.example", Upstreams: []string{"10.0.0.10", "fd00::10"}, ClusterIP: "10.96.0.10"},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, c.Validate())
			o := CoreDNS(c)
			var out []byte
			for _, obj := range []any{o.ServiceAccount, o.ConfigMap, o.Service, o.Deployment} {
				b, err := yaml.Marshal(obj)
				require.NoError(t, err)
				out = append(append(out, "---\n"...), b...)
			}
			path := filepath.Join("testdata", name+".yaml")
			if *update {
				require.NoError(t, os.WriteFile(path, out, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -update to write it")
			assert.Equal(t, string(want), string(out))
		})
	}
}

// The network-safety rule: without upstreams no forward plugin is
// configured, so no query can leave CoreDNS.
func TestCorefileForwardsOnlyToConfiguredUpstreams(t *testing.T) {
	assert.NotContains(t, Corefile(DNSConfig{Domain: "cluster.local"}), "forward")
	assert.Contains(t, Corefile(DNSConfig{Domain: "cluster.local"}), "rcode NXDOMAIN")
	assert.Contains(t, Corefile(DNSConfig{Domain: "cluster.local", Upstreams: []string{"192.0.2.53"}}), "forward . 192.0.2.53")
}

func TestDNSConfigValidate(t *testing.T) {
	ok := DNSConfig{Image: "i", Domain: "cluster.local"}
	require.NoError(t, ok.Validate())
	for name, c := range map[string]DNSConfig{
		"no image":           {Domain: "cluster.local"},
		"domain injects":     {Image: "i", Domain: "cluster.local {\n forward . 8.8.8.8"},
		"upstream not an IP": {Image: "i", Domain: "cluster.local", Upstreams: []string{"dns.google"}},
		"too many upstreams": {Image: "i", Domain: "cluster.local", Upstreams: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}},
	} {
		assert.Error(t, c.Validate(), name)
	}
}

func TestMetricsServerGolden(t *testing.T) {
	c := MetricsConfig{Image: "registry.k8s.io/metrics-server/metrics-server:v0.8.0", KubeletPort: 10272}
	require.NoError(t, c.Validate())
	o := MetricsServer(c)
	var out []byte
	for _, obj := range []any{o.ServiceAccount, o.Service, o.Deployment, o.APIService} {
		b, err := yaml.Marshal(obj)
		require.NoError(t, err)
		out = append(append(out, "---\n"...), b...)
	}
	path := filepath.Join("testdata", "metrics-server.yaml")
	if *update {
		require.NoError(t, os.WriteFile(path, out, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to write it")
	assert.Equal(t, string(want), string(out))
}

func TestMetricsConfigValidate(t *testing.T) {
	assert.Error(t, MetricsConfig{KubeletPort: 10272}.Validate(), "no image")
	assert.Error(t, MetricsConfig{Image: "i"}.Validate(), "no port")
	assert.Error(t, MetricsConfig{Image: "i", KubeletPort: 70000}.Validate(), "port out of range")
}
