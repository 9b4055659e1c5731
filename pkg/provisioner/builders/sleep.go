package builders

import (
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// Sleeps reports whether component stops while nc sleeps: every Deployment
// does; a managed etcd only on a PersistentVolumeClaim, whose data outlives
// its pod (on EmptyDir or Memory, stopping etcd would lose the tenant).
func Sleeps(nc *v1alpha1.NestedCluster, component string) bool {
	if component != v1alpha1.ComponentEtcd {
		return true
	}
	m := nc.Spec.Etcd.Managed
	return m != nil && m.Storage.Type == v1alpha1.EtcdStoragePersistentVolumeClaim
}

// DesiredReplicas is how many pods of component run: spec's count, or
// none while the cluster sleeps (asleep: Params.Asleep, which the
// controller decides) and the component stops in its sleep, or while a
// backup is written into its etcd (restoring: Params.Restoring), when
// only etcd runs.
func DesiredReplicas(nc *v1alpha1.NestedCluster, component string, spec int32, asleep, restoring bool) int32 {
	if asleep && Sleeps(nc, component) || restoring && component != v1alpha1.ComponentEtcd {
		return 0
	}
	return spec
}
