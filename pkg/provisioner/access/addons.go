package access

import (
	rbacv1 "k8s.io/api/rbac/v1"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"capn.dev/capn/pkg/provisioner/pki"
	"capn.dev/capn/pkg/tenant/names"
)

// The tenant DNS and metrics addons (pkg/syncer/addons) are applied by
// capn-syncer, which may not write RBAC: what CoreDNS and metrics-server
// read, and what the syncer may write in kube-system to keep the addons,
// is granted here, at bootstrap. The bootstrap is the same for every
// tenant, so an addon's grants stay in place when spec.dns or
// spec.metrics turns it off: they name only the addon's own
// ServiceAccount, which nothing holds once the syncer removed the addon.
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

// The metrics addon's RBAC is upstream's (metrics-server v0.8.0,
// manifests/base/rbac.yaml), under upstream's names, so that a tenant's
// tools and habits find it where a kubeadm cluster with metrics-server
// has it.
const (
	// MetricsServerRole is the tenant ClusterRole of metrics-server's
	// ServiceAccount, bound under the same name.
	MetricsServerRole = "system:metrics-server"
	// AggregatedMetricsReaderRole lets view, edit and admin read
	// metrics.k8s.io (it aggregates into them).
	AggregatedMetricsReaderRole = "system:aggregated-metrics-reader"
	// MetricsAuthDelegatorBinding lets metrics-server review the tokens
	// and authorize the requests it serves, as every aggregated API does.
	MetricsAuthDelegatorBinding = "metrics-server:system:auth-delegator"
	// MetricsAuthReaderBinding lets it read the requestheader
	// configuration in kube-system/extension-apiserver-authentication.
	MetricsAuthReaderBinding = "metrics-server-auth-reader"

	metricsNamespace      = names.MetricsNamespace
	metricsName           = names.MetricsServerName
	metricsServiceAccount = names.MetricsServerName
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

// MetricsServerRules are what metrics-server reads: the virtual Nodes'
// resource metrics (through the syncer, which checks this grant), and the
// pods and nodes it reports on.
func MetricsServerRules() []*rbacac.PolicyRuleApplyConfiguration {
	return []*rbacac.PolicyRuleApplyConfiguration{
		rule("", []string{"nodes/metrics"}, "get"),
		rule("", []string{"pods", "nodes"}, "get", "list", "watch"),
	}
}

// AggregatedMetricsReaderRules read the metrics API.
func AggregatedMetricsReaderRules() []*rbacac.PolicyRuleApplyConfiguration {
	return []*rbacac.PolicyRuleApplyConfiguration{
		rule("metrics.k8s.io", []string{"pods", "nodes"}, "get", "list", "watch"),
	}
}

// SyncerAddonsRules let the syncer keep the DNS and metrics addons in
// kube-system: list and watch there (its informers), create (a
// server-side apply that creates needs it), and change or delete only the
// addons' objects by name.
func SyncerAddonsRules() []*rbacac.PolicyRuleApplyConfiguration {
	change := []string{"get", "update", "patch", "delete"}
	return []*rbacac.PolicyRuleApplyConfiguration{
		rule("apps", []string{"deployments"}, "list", "watch", "create"),
		rule("apps", []string{"deployments"}, change...).WithResourceNames(dnsName, metricsName),
		rule("", []string{"serviceaccounts"}, "list", "watch", "create"),
		rule("", []string{"serviceaccounts"}, change...).WithResourceNames(dnsServiceAccount, metricsServiceAccount),
		rule("", []string{"configmaps"}, change...).WithResourceNames(dnsName),
		rule("", []string{"configmaps", "services"}, "create"),
		rule("", []string{"services"}, change...).WithResourceNames(dnsServiceName, metricsName),
	}
}

// tenantRoles are the ClusterRoles Bootstrap keeps.
func tenantRoles() []*rbacac.ClusterRoleApplyConfiguration {
	return []*rbacac.ClusterRoleApplyConfiguration{
		rbacac.ClusterRole(TenantSyncerRole).WithLabels(managedBy()).WithRules(TenantSyncerRules()...),
		rbacac.ClusterRole(CoreDNSRole).WithLabels(managedBy()).WithRules(CoreDNSRules()...),
		rbacac.ClusterRole(MetricsServerRole).WithLabels(managedBy()).WithRules(MetricsServerRules()...),
		rbacac.ClusterRole(AggregatedMetricsReaderRole).WithLabels(managedBy()).WithLabels(map[string]string{
			"rbac.authorization.k8s.io/aggregate-to-view":  "true",
			"rbac.authorization.k8s.io/aggregate-to-edit":  "true",
			"rbac.authorization.k8s.io/aggregate-to-admin": "true",
		}).WithRules(AggregatedMetricsReaderRules()...),
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
		rbacac.RoleBinding(MetricsAuthReaderBinding, metricsNamespace).WithLabels(managedBy()).
			WithRoleRef(rbacac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName("extension-apiserver-authentication-reader")).
			WithSubjects(rbacac.Subject().WithAPIGroup("").WithKind(rbacv1.ServiceAccountKind).WithName(metricsServiceAccount).WithNamespace(metricsNamespace)),
	}, joinRoleBindings()...)
}

func managedBy() map[string]string { return map[string]string{"app.kubernetes.io/managed-by": "capn"} }
