package builders

import (
	"testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// A pod template stored before the allow-list (validation ratchets, so it
// still reaches the builders) cannot weaken capn's hardening through the
// merge: a strategic merge would otherwise let `drop: [NET_ADMIN]` replace
// `drop: [ALL]`.
func TestMergeKeepsHardening(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/minimal/input.yaml")
	nc.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		HostNetwork:     true,
		SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
		Containers: []corev1.Container{
			{Name: "side", Image: "example.com/side:1", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}},
			{Name: v1alpha1.ComponentAPIServer, SecurityContext: &corev1.SecurityContext{
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"NET_ADMIN"}, Add: []corev1.Capability{"SYS_ADMIN"}},
				AllowPrivilegeEscalation: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(false)}},
		},
	}}
	objs, err := APIServer(nc, defaultParams)
	require.NoError(t, err)
	var spec *corev1.PodSpec
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			spec = &d.Spec.Template.Spec
		}
	}
	require.NotNil(t, spec)
	assert.False(t, spec.HostNetwork)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, spec.SecurityContext.SeccompProfile.Type)
	require.Len(t, spec.Containers, 2)
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, c.Name)
		assert.Empty(t, sc.Capabilities.Add, c.Name)
		assert.Nil(t, sc.Privileged, c.Name)
		assert.False(t, *sc.AllowPrivilegeEscalation, c.Name)
		assert.True(t, *sc.ReadOnlyRootFilesystem, c.Name)
	}
}
