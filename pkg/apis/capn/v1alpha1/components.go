package v1alpha1

// Components of a nested control plane, spelled as the ComponentLabel
// values, the owned-flag tables and status.upgrade.steps name them. Every
// other package (provisioner, plugin, registry, validation, tests) uses
// these, so a new component is added in one place.
const (
	ComponentEtcd              = "etcd"
	ComponentAPIServer         = "kube-apiserver"
	ComponentControllerManager = "kube-controller-manager"
	ComponentScheduler         = "kube-scheduler"
	// ComponentSyncer runs only in Shared data-plane mode. It is not in
	// Components or UpgradeOrder: its image is capn's, not spec.version's,
	// so an upgrade never rolls it.
	ComponentSyncer = "capn-syncer"
)

// Labels on every object and pod capn creates for a NestedCluster. The
// registry's /scale selector and the provisioner's pods must agree on them.
const (
	// ClusterLabel holds the NestedCluster's name.
	ClusterLabel = "capn.dev/cluster"
	// ComponentLabel holds one of the Component* names.
	ComponentLabel = "capn.dev/component"
)

// ComponentSelector is the label set that selects the pods of one
// component of the NestedCluster named cluster: the provisioner's
// selectors, and for kube-apiserver the selector /scale reports.
func ComponentSelector(cluster, component string) map[string]string {
	return map[string]string{ClusterLabel: cluster, ComponentLabel: component}
}

// UpgradeOrder is the order in which an upgrade rolls the kube-*
// components; a rollback walks it backwards. etcd is absent on purpose:
// capn never upgrades a running etcd. A fresh slice each call, so no
// caller can reorder it for the others.
func UpgradeOrder() []string {
	return []string{ComponentAPIServer, ComponentControllerManager, ComponentScheduler}
}

// Components is every component, in bring-up order (etcd first, then
// UpgradeOrder). A fresh slice each call.
func Components() []string {
	return append([]string{ComponentEtcd}, UpgradeOrder()...)
}
