package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/provisioner"
)

// A hand edit to a field capn owns (kcm's args, as `kubectl edit` would
// make it: another field manager, the hash annotation untouched) is
// reverted on the next sync; a field someone else added stays.
func TestHandEditOfOwnedFieldIsReverted(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ctx, ns := context.Background(), managementNamespace(f.nc)
	deps := f.kube.AppsV1().Deployments(ns)
	d, err := deps.Get(ctx, provisioner.ControllerManagerName, metav1.GetOptions{})
	require.NoError(t, err)
	want := slices.Clone(d.Spec.Template.Spec.Containers[0].Args)
	d.Spec.Template.Spec.Containers[0].Args = append(d.Spec.Template.Spec.Containers[0].Args, "--v=4")
	d.Annotations["example.com/note"] = "kept"
	_, err = deps.Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
	require.NoError(t, err)

	f.mgmt.reset()
	f.sync()
	assert.Contains(t, f.mgmt.writes, "apply Deployment/"+provisioner.ControllerManagerName)
	d, err = deps.Get(ctx, provisioner.ControllerManagerName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, want, d.Spec.Template.Spec.Containers[0].Args, "capn's args are back")
	assert.Equal(t, "kept", d.Annotations["example.com/note"], "a field capn does not own is left alone")

	f.mgmt.reset()
	f.sync()
	assert.Empty(t, f.mgmt.writes, "once repaired, a resync writes nothing")
}
