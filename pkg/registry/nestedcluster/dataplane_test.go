package nestedcluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apiserver"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

var dataPlanePolicy = nestedcluster.Policy{DataPlane: nestedcluster.DataPlanePolicy{
	ServiceCIDR: "10.96.0.0/16",
	QuotaMax: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100"), corev1.ResourceRequestsCPU: resource.MustParse("8"),
		corev1.ResourceRequestsEphemeralStorage: resource.MustParse("20Gi")},
	SyncerImages: []string{"registry.example/capn-syncer:v2"},
}}

func paths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func TestCreateDefaultsSharedWithTheManagementServiceRange(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, dataPlanePolicy)
	nc := newCluster(t, "team-a", "a", "")
	require.Empty(t, nc.Spec.DataPlane.Mode, "decoding must not default the mode: stored objects would turn Shared")
	s.PrepareForCreate(context.Background(), nc)
	assert.Equal(t, capn.DataPlaneShared, nc.Spec.DataPlane.Mode)
	assert.Equal(t, "10.96.0.0/16", nc.Spec.ClusterNetwork.ServiceCIDR)
	assert.Empty(t, s.Validate(context.Background(), nc))
}

func TestCreateNoneKeepsItsServiceRange(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, dataPlanePolicy)
	nc := newCluster(t, "team-a", "a", "")
	nc.Spec.DataPlane.Mode = capn.DataPlaneNone
	nc.Spec.ClusterNetwork.ServiceCIDR = "10.50.0.0/16"
	s.PrepareForCreate(context.Background(), nc)
	assert.Equal(t, capn.DataPlaneNone, nc.Spec.DataPlane.Mode)
	assert.Equal(t, "10.50.0.0/16", nc.Spec.ClusterNetwork.ServiceCIDR)
	assert.Empty(t, s.Validate(context.Background(), nc))
}

func TestCreateSharedRefusesAnotherServiceRange(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, dataPlanePolicy)
	nc := newCluster(t, "team-a", "a", "")
	nc.Spec.ClusterNetwork.ServiceCIDR = "10.50.0.0/16"
	s.PrepareForCreate(context.Background(), nc)
	assert.Equal(t, []string{"spec.clusterNetwork.serviceCIDR"}, paths(s.Validate(context.Background(), nc)))
}

func TestQuotaIsCappedAndAllowListed(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, dataPlanePolicy)
	nc := newCluster(t, "team-a", "a", "")
	nc.Spec.DataPlane.Quota = corev1.ResourceList{
		corev1.ResourcePods:        resource.MustParse("101"),
		corev1.ResourceRequestsCPU: resource.MustParse("8"),
		"requests.nvidia.com/gpu":  resource.MustParse("1"),
	}
	s.PrepareForCreate(context.Background(), nc)
	assert.ElementsMatch(t, []string{"spec.dataPlane.quota[pods]", "spec.dataPlane.quota[requests.nvidia.com/gpu]"}, paths(s.Validate(context.Background(), nc)))

	// A cap lowered after the object was stored does not block other edits.
	old := nc.DeepCopy()
	old.ResourceVersion = "1"
	delete(old.Spec.DataPlane.Quota, "requests.nvidia.com/gpu")
	updated := old.DeepCopy()
	updated.Spec.DataPlane.NodeSelector = map[string]string{"pool": "a"}
	assert.Empty(t, s.ValidateUpdate(context.Background(), updated, old))
	updated.Spec.DataPlane.Quota[corev1.ResourcePods] = resource.MustParse("102")
	assert.Equal(t, []string{"spec.dataPlane.quota[pods]"}, paths(s.ValidateUpdate(context.Background(), updated, old)))
}

func TestQuotaBoundsEphemeralStorage(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, dataPlanePolicy)
	nc := newCluster(t, "team-a", "a", "")
	nc.Spec.DataPlane.Quota = corev1.ResourceList{
		corev1.ResourceRequestsEphemeralStorage: resource.MustParse("20Gi"),
		corev1.ResourceLimitsEphemeralStorage:   resource.MustParse("40Gi"),
	}
	s.PrepareForCreate(context.Background(), nc)
	assert.Empty(t, s.Validate(context.Background(), nc), "the node's disk is a quota item a tenant may set")

	nc.Spec.DataPlane.Quota[corev1.ResourceRequestsEphemeralStorage] = resource.MustParse("21Gi")
	assert.Equal(t, []string{"spec.dataPlane.quota[requests.ephemeral-storage]"}, paths(s.Validate(context.Background(), nc)),
		"capped by the provider's maximum like the others")
}

func TestSyncerImageOnTheProvidersList(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, dataPlanePolicy)
	nc := newCluster(t, "team-a", "a", "")
	nc.Spec.Syncer.Image = "registry.example/mine:latest"
	nc.Spec.Syncer.Command = []string{"/bin/sh"}
	s.PrepareForCreate(context.Background(), nc)
	assert.ElementsMatch(t, []string{"spec.syncer.image", "spec.syncer.command"}, paths(s.Validate(context.Background(), nc)))
	nc.Spec.Syncer.Image, nc.Spec.Syncer.Command = "registry.example/capn-syncer:v2", nil
	assert.Empty(t, s.Validate(context.Background(), nc))
}

func TestDataPlaneModeIsImmutable(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, dataPlanePolicy)
	old := newCluster(t, "team-a", "a", "")
	old.ResourceVersion = "1"
	old.Spec.DataPlane.Mode = capn.DataPlaneNone
	updated := old.DeepCopy()
	updated.Spec.DataPlane.Mode = capn.DataPlaneShared
	assert.Contains(t, paths(s.ValidateUpdate(context.Background(), updated, old)), "spec.dataPlane.mode")

	// Stored before the field existed: absent reads as None and may be
	// written back as None, not as Shared.
	old.Spec.DataPlane.Mode = ""
	updated.Spec.DataPlane.Mode = capn.DataPlaneNone
	assert.Empty(t, s.ValidateUpdate(context.Background(), updated, old))
	updated.Spec.DataPlane.Mode = capn.DataPlaneShared
	assert.Contains(t, paths(s.ValidateUpdate(context.Background(), updated, old)), "spec.dataPlane.mode")
}

func TestNodeSelectorAndQuotaOnlyInShared(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, dataPlanePolicy)
	nc := newCluster(t, "team-a", "a", "")
	nc.Spec.DataPlane = capn.DataPlaneSpec{Mode: capn.DataPlaneNone, NodeSelector: map[string]string{"a": "b"},
		Quota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}
	s.PrepareForCreate(context.Background(), nc)
	assert.ElementsMatch(t, []string{"spec.dataPlane.nodeSelector", "spec.dataPlane.quota"}, paths(s.Validate(context.Background(), nc)))
}
