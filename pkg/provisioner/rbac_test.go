package provisioner

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The syncer reads its host kubelets' resource metrics through
// nodes/metrics, and nothing in its cluster-wide role reaches a kubelet
// further: nodes/proxy is exec and logs of every pod on the node.
func TestSyncerNodesRoleReadsKubeletMetricsOnly(t *testing.T) {
	data, err := os.ReadFile("../../artifacts/deploy/rbac/syncer.yaml")
	require.NoError(t, err)
	var role *rbacv1.ClusterRole
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var r rbacv1.ClusterRole
		require.NoError(t, yaml.Unmarshal(doc, &r))
		if r.Name == SyncerNodesRole {
			role = &r
		}
	}
	require.NotNil(t, role, "artifacts/deploy/rbac/syncer.yaml defines no %s", SyncerNodesRole)
	var metrics bool
	for _, r := range role.Rules {
		if !slices.Contains(r.APIGroups, "") {
			continue
		}
		for _, res := range r.Resources {
			assert.NotContains(t, []string{"nodes/proxy", "nodes/*", "*"}, res)
			if res == "nodes/metrics" {
				assert.Equal(t, []string{"get"}, r.Verbs)
				metrics = true
			}
		}
	}
	assert.True(t, metrics, "%s does not grant get on nodes/metrics", SyncerNodesRole)
}
