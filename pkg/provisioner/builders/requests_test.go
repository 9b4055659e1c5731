package builders

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func requestsOf(t *testing.T, objs []Object, name string) corev1.ResourceList {
	t.Helper()
	if d := find[*appsv1.Deployment](objs, name); d != nil {
		return d.Spec.Template.Spec.Containers[0].Resources.Requests
	}
	s := find[*appsv1.StatefulSet](objs, name)
	require.NotNil(t, s, name)
	return s.Spec.Template.Spec.Containers[0].Resources.Requests
}

func cpuMilli(l corev1.ResourceList) int64 { return l.Cpu().MilliValue() }

// From IdleRequestsTemplateRevision on a tenant requests about what an idle
// one uses; a workload still at the revision before keeps its requests
// (nothing rolls), and memory does not change.
func TestIdleRequestsFromTheirRevision(t *testing.T) {
	nc := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneShared
		nc.Spec.Syncer.Replicas = ptr.To[int32](1)
	})
	total := map[int]int64{}
	for _, rev := range []int{IdleRequestsTemplateRevision - 1, IdleRequestsTemplateRevision} {
		objs, err := All(nc, Params{TemplateRevision: rev})
		require.NoError(t, err)
		for _, name := range append(v1alpha1.Components(), v1alpha1.ComponentSyncer) {
			r := requestsOf(t, objs, name)
			total[rev] += cpuMilli(r)
			want := defaultResources[name]
			assert.True(t, r.Memory().Equal(*want.Memory()), "%s memory at revision %d: %s", name, rev, r.Memory())
		}
	}
	assert.Equal(t, int64(250), total[IdleRequestsTemplateRevision-1])
	assert.Equal(t, int64(53), total[IdleRequestsTemplateRevision])
}

// The provider's floor raises capn's defaults, per component and resource,
// never lowers them, and leaves a tenant's own resources alone.
func TestRequestFloor(t *testing.T) {
	floor := map[string]corev1.ResourceList{
		v1alpha1.ComponentAPIServer: {corev1.ResourceCPU: resource.MustParse("100m")},
		v1alpha1.ComponentEtcd:      {corev1.ResourceMemory: resource.MustParse("32Mi")},
	}
	p := Params{Placement: Placement{RequestFloor: floor}}
	objs, err := All(cluster(), p)
	require.NoError(t, err)
	api := requestsOf(t, objs, v1alpha1.ComponentAPIServer)
	assert.Equal(t, int64(100), cpuMilli(api))
	assert.Equal(t, "256Mi", ptr.To(api[corev1.ResourceMemory]).String())
	etcd := requestsOf(t, objs, v1alpha1.ComponentEtcd)
	assert.Equal(t, "64Mi", ptr.To(etcd[corev1.ResourceMemory]).String(), "a floor below the default changes nothing")
	assert.Equal(t, int64(10), cpuMilli(requestsOf(t, objs, v1alpha1.ComponentControllerManager)), "no floor, the default")

	own := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.APIServer.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m")}}
	})
	objs, err = All(own, p)
	require.NoError(t, err)
	assert.Equal(t, int64(20), cpuMilli(requestsOf(t, objs, v1alpha1.ComponentAPIServer)))
}
