package access

import (
	rbacv1 "k8s.io/api/rbac/v1"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"capn.dev/capn/pkg/provisioner/pki"
	"capn.dev/capn/pkg/tenant/names"
)

// The tenant DNS addon (pkg/syncer/addons) is applied by capn-syncer,
// which may not write RBAC: what CoreDNS reads, and what the syncer may
// write in kube-system to keep the addon, is granted here, at bootstrap.
const (
	// CoreDNSRole is the tenant ClusterRole of CoreDNS's ServiceAccount.
	CoreDNSRole = "capn:coredns"
	// SyncerAddonsRole is the syncer's Role in kube-system.
	SyncerAddonsRole = "capn:syncer-addons"

	dnsNamespace      = names.DNSNamespace
	dnsName           = names.DNSName
	dnsServiceName    = names.DNSServiceName
	dnsServiceAccount = names.DNSName
)

func rule(group string, resources []string, verbs ...string) *rbacac.PolicyRuleApplyConfiguration {
	return rbacac.PolicyRule().WithAPIGroups(group).WithResources(resources...).WithVerbs(verbs...)
}

// CoreDNSRules are what CoreDNS's kubernetes plugin lists and watches.
func CoreDNSRules() []*rbacac.PolicyRuleApplyConfiguration {
	return []*rbacac.PolicyRuleApplyConfiguration{
		rule("", []string{"endpoints", "services", "pods", "namespaces"}, "list", "watch"),
		rule("discovery.k8s.io", []string{"endpointslices"}, "list", "watch"),
	}
}

// SyncerAddonsRules let the syncer keep the DNS addon in kube-system: list
// and watch there (its informers), create (a server-side apply that
// creates needs it), and change or delete only the addon's objects by
// name.
func SyncerAddonsRules() []*rbacac.PolicyRuleApplyConfiguration {
	change := []string{"get", "update", "patch", "delete"}
	return []*rbacac.PolicyRuleApplyConfiguration{
		rule("apps", []string{"deployments"}, "list", "watch", "create"),
		rule("apps", []string{"deployments"}, change...).WithResourceNames(dnsName),
		rule("", []string{"serviceaccounts"}, "list", "watch", "create"),
		rule("", []string{"serviceaccounts", "configmaps"}, change...).WithResourceNames(dnsName),
		rule("", []string{"configmaps", "services"}, "create"),
		rule("", []string{"services"}, change...).WithResourceNames(dnsServiceName),
	}
}

// tenantRoles are the ClusterRoles Bootstrap keeps.
func tenantRoles() []*rbacac.ClusterRoleApplyConfiguration {
	return []*rbacac.ClusterRoleApplyConfiguration{
		rbacac.ClusterRole(TenantSyncerRole).WithLabels(managedBy()).WithRules(TenantSyncerRules()...),
		rbacac.ClusterRole(CoreDNSRole).WithLabels(managedBy()).WithRules(CoreDNSRules()...),
	}
}

// namespacedRoles are the Roles Bootstrap keeps, and their bindings.
func namespacedRoles() []*rbacac.RoleApplyConfiguration {
	return append([]*rbacac.RoleApplyConfiguration{
		rbacac.Role(SyncerAddonsRole, dnsNamespace).WithLabels(managedBy()).WithRules(SyncerAddonsRules()...),
	}, joinRoles()...)
}

func namespacedBindings() []*rbacac.RoleBindingApplyConfiguration {
	return append([]*rbacac.RoleBindingApplyConfiguration{
		rbacac.RoleBinding(SyncerAddonsRole, dnsNamespace).WithLabels(managedBy()).
			WithRoleRef(rbacac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(SyncerAddonsRole)).
			WithSubjects(rbacac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.UserKind).WithName(pki.SyncerUser)),
	}, joinRoleBindings()...)
}

func managedBy() map[string]string { return map[string]string{"app.kubernetes.io/managed-by": "capn"} }
