package access

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// allows reports whether rules grant verb on group/resource, by name when
// name is not empty (a rule without resourceNames grants every name).
func allows(rules []*rbacac.PolicyRuleApplyConfiguration, group, resource, verb, name string) bool {
	return slices.ContainsFunc(rules, func(r *rbacac.PolicyRuleApplyConfiguration) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || name != "" && slices.Contains(r.ResourceNames, name))
	})
}

// The syncer authenticates and authorizes metrics-server's scrapes in the
// tenant, and keeps the metrics APIService, by name for all but create.
func TestTenantSyncerRulesForMetrics(t *testing.T) {
	rules := TenantSyncerRules()
	assert.True(t, allows(rules, "authentication.k8s.io", "tokenreviews", "create", ""))
	assert.True(t, allows(rules, "authorization.k8s.io", "subjectaccessreviews", "create", ""))
	assert.True(t, allows(rules, "apiregistration.k8s.io", "apiservices", "create", ""))
	for _, verb := range []string{"get", "list", "watch", "update", "patch", "delete"} {
		assert.True(t, allows(rules, "apiregistration.k8s.io", "apiservices", verb, "v1beta1.metrics.k8s.io"), verb)
		assert.False(t, allows(rules, "apiregistration.k8s.io", "apiservices", verb, "v1.apps"), "%s on another APIService", verb)
	}
}

// In kube-system the syncer changes the metrics addon's objects by name
// as it does the DNS addon's, and nothing of one the other does not have.
func TestSyncerAddonsRulesForMetrics(t *testing.T) {
	rules := SyncerAddonsRules()
	for _, verb := range []string{"get", "update", "patch", "delete"} {
		assert.True(t, allows(rules, "apps", "deployments", verb, "metrics-server"), verb)
		assert.True(t, allows(rules, "", "serviceaccounts", verb, "metrics-server"), verb)
		assert.True(t, allows(rules, "", "services", verb, "metrics-server"), verb)
		assert.True(t, allows(rules, "", "configmaps", verb, "coredns"), verb)
		assert.False(t, allows(rules, "", "configmaps", verb, "metrics-server"), "%s: metrics-server has no ConfigMap", verb)
		assert.False(t, allows(rules, "", "services", verb, "coredns"), "%s: the DNS Service is kube-dns", verb)
		assert.False(t, allows(rules, "apps", "deployments", verb, "other"), verb)
	}
}

// Bootstrap grants metrics-server upstream's RBAC, and repairs the
// aggregation labels that give view, edit and admin the metrics API.
func TestBootstrapAppliesMetricsServerRBAC(t *testing.T) {
	ctx := context.Background()
	tenant := fake.NewClientset()
	_, err := Bootstrap(ctx, tenant)
	require.NoError(t, err)
	rbac := tenant.RbacV1()

	role, err := rbac.ClusterRoles().Get(ctx, "system:metrics-server", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
	}, role.Rules)
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "metrics-server", Namespace: "kube-system"}
	for name, ref := range map[string]string{"system:metrics-server": "system:metrics-server", "metrics-server:system:auth-delegator": "system:auth-delegator"} {
		b, err := rbac.ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ref}, b.RoleRef, name)
		assert.Equal(t, []rbacv1.Subject{sa}, b.Subjects, name)
	}
	rb, err := rbac.RoleBindings("kube-system").Get(ctx, "metrics-server-auth-reader", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}, rb.RoleRef)
	assert.Equal(t, []rbacv1.Subject{sa}, rb.Subjects)

	reader, err := rbac.ClusterRoles().Get(ctx, "system:aggregated-metrics-reader", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}}}, reader.Rules)
	for _, r := range []string{"view", "edit", "admin"} {
		assert.Equal(t, "true", reader.Labels["rbac.authorization.k8s.io/aggregate-to-"+r], r)
	}

	delete(reader.Labels, "rbac.authorization.k8s.io/aggregate-to-view")
	_, err = rbac.ClusterRoles().Update(ctx, reader, metav1.UpdateOptions{})
	require.NoError(t, err)
	changed, err := Bootstrap(ctx, tenant)
	require.NoError(t, err)
	assert.True(t, changed, "a missing aggregation label went unnoticed")
	reader, err = rbac.ClusterRoles().Get(ctx, "system:aggregated-metrics-reader", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", reader.Labels["rbac.authorization.k8s.io/aggregate-to-view"])
}
