package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/builders"
)

// Every kind the builders render, in every mode, can be read from the
// caches, read and written live, and checked for drift: a kind missing in
// one of those fails only at sync time, on a real cluster (the syncer's
// RoleBinding did, in the e2e).
func TestEveryRenderedKindIsSupported(t *testing.T) {
	for _, mode := range []v1alpha1.DataPlaneMode{v1alpha1.DataPlaneNone, v1alpha1.DataPlaneShared} {
		nc := testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.DataPlane.Mode = mode })
		objs, err := builders.All(nc, builders.Params{})
		require.NoError(t, err)
		kube := kubefake.NewClientset()
		cached := startCached(t, kube)
		live := NewManagement(kube)
		kinds := map[string]bool{}
		for _, o := range objs {
			kinds[kindOf(o)] = true
			_, err := ownedFields(o)
			assert.NoError(t, err, "%s %s: drift", kindOf(o), o.GetName())
			_, err = cached.Get(context.Background(), o)
			assert.True(t, apierrors.IsNotFound(err), "%s %s: cached Get: %v", kindOf(o), o.GetName(), err)
			_, err = live.Get(context.Background(), o)
			assert.True(t, apierrors.IsNotFound(err), "%s %s: live Get: %v", kindOf(o), o.GetName(), err)
		}
		if mode == v1alpha1.DataPlaneShared {
			for _, k := range []string{"ServiceAccount", "RoleBinding", "ClusterRoleBinding"} {
				assert.True(t, kinds[k], "Shared renders a %s", k)
			}
		}
	}
}
