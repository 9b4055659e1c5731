package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"
)

// A role with a by-name rule, as it is live, matches what Bootstrap
// applies: before, any resourceNames read as drift and the syncer's role
// was applied again on every bootstrap.
func TestRulesMatchComparesResourceNames(t *testing.T) {
	want := []rbacac.PolicyRuleApplyConfiguration{*rule("", []string{"services"}, "get").WithResourceNames("kube-dns")}
	live := func(names ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get"}, ResourceNames: names}}
	}
	assert.True(t, rulesMatch(live("kube-dns"), want))
	assert.False(t, rulesMatch(live("other"), want))
	assert.False(t, rulesMatch(live(), want))
}
