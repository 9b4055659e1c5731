package builders

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// Asleep, every Deployment renders at zero replicas; etcd too on a PVC,
// but not on EmptyDir or Memory, where stopping it would lose the data.
// Awake, the spec's counts come back unchanged.
func TestAsleepScalesToZero(t *testing.T) {
	shared := func(nc *v1alpha1.NestedCluster) {
		nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneShared
		nc.Spec.Syncer.Replicas = ptr.To[int32](2)
		nc.Spec.APIServer.Replicas = ptr.To[int32](3)
	}
	for _, storage := range []v1alpha1.EtcdStorageType{v1alpha1.EtcdStorageEmptyDir, v1alpha1.EtcdStorageMemory, v1alpha1.EtcdStoragePersistentVolumeClaim} {
		t.Run(string(storage), func(t *testing.T) {
			nc := cluster(shared, func(nc *v1alpha1.NestedCluster) {
				nc.Spec.Etcd.Managed.Storage.Type = storage
				if storage == v1alpha1.EtcdStoragePersistentVolumeClaim {
					nc.Spec.Etcd.Managed.Storage.Size = ptr.To(resource.MustParse("1Gi"))
				}
			})
			for _, asleep := range []bool{false, true} {
				objs, err := All(nc, Params{Asleep: asleep})
				require.NoError(t, err)
				want := map[string]int32{
					provisioner.APIServerName: 3, provisioner.ControllerManagerName: 1,
					provisioner.SchedulerName: 1, provisioner.SyncerName: 2,
				}
				for name, n := range want {
					d := find[*appsv1.Deployment](objs, name)
					require.NotNil(t, d, name)
					if asleep {
						n = 0
					}
					assert.Equal(t, n, *d.Spec.Replicas, "%s asleep=%v", name, asleep)
				}
				sts := find[*appsv1.StatefulSet](objs, provisioner.EtcdName)
				require.NotNil(t, sts)
				wantEtcd := int32(1)
				if asleep && storage == v1alpha1.EtcdStoragePersistentVolumeClaim {
					wantEtcd = 0
				}
				assert.Equal(t, wantEtcd, *sts.Spec.Replicas, "etcd asleep=%v", asleep)
			}
		})
	}
}

// Restoring, only etcd runs: nothing may use the etcd a backup is being
// written into.
func TestRestoringHoldsAllButEtcd(t *testing.T) {
	nc := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneShared
		nc.Spec.Syncer.Replicas = ptr.To[int32](1)
		nc.Spec.APIServer.Replicas = ptr.To[int32](2)
	})
	objs, err := All(nc, Params{Restoring: true})
	require.NoError(t, err)
	for _, name := range []string{provisioner.APIServerName, provisioner.ControllerManagerName, provisioner.SchedulerName, provisioner.SyncerName} {
		d := find[*appsv1.Deployment](objs, name)
		require.NotNil(t, d, name)
		assert.Equal(t, int32(0), *d.Spec.Replicas, name)
	}
	sts := find[*appsv1.StatefulSet](objs, provisioner.EtcdName)
	require.NotNil(t, sts)
	assert.Equal(t, int32(1), *sts.Spec.Replicas)
}
