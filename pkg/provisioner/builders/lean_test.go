package builders

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func envOf(t *testing.T, objs []Object, name string) map[string]corev1.EnvVar {
	t.Helper()
	var spec *corev1.PodSpec
	if d := find[*appsv1.Deployment](objs, name); d != nil {
		spec = &d.Spec.Template.Spec
	} else if s := find[*appsv1.StatefulSet](objs, name); s != nil {
		spec = &s.Spec.Template.Spec
	}
	require.NotNil(t, spec, name)
	out := map[string]corev1.EnvVar{}
	for _, e := range spec.Containers[0].Env {
		out[e.Name] = e
	}
	return out
}

// From LeanTemplateRevision on, every Go component gets GOGC and a
// GOMEMLIMIT from its own memory limit; before it, none does (an existing
// workload keeps its revision, so nothing rolls).
func TestLeanGoSettingsFromTheLeanRevision(t *testing.T) {
	nc := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneShared
		nc.Spec.Syncer.Replicas = ptr.To[int32](1)
	})
	for _, rev := range []int{LeanTemplateRevision - 1, LeanTemplateRevision} {
		objs, err := All(nc, Params{TemplateRevision: rev})
		require.NoError(t, err)
		for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "capn-syncer"} {
			env := envOf(t, objs, name)
			gogc, ok := env[EnvGOGC]
			limit, ok2 := env[EnvGOMEMLIMIT]
			if rev < LeanTemplateRevision {
				assert.False(t, ok || ok2, "%s at revision %d: %v", name, rev, env)
				continue
			}
			assert.Equal(t, leanGOGC, gogc.Value, name)
			require.True(t, ok2, name)
			require.NotNil(t, limit.ValueFrom.ResourceFieldRef, name)
			assert.Equal(t, "limits.memory", limit.ValueFrom.ResourceFieldRef.Resource, name)
			assert.Equal(t, name, limit.ValueFrom.ResourceFieldRef.ContainerName, name)
		}
	}
}

// A tenant tunes the Go settings through env: its value replaces capn's.
// capn's own variables stay refused.
func TestTenantEnvReplacesTheLeanSettings(t *testing.T) {
	nc := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.APIServer.Env = []corev1.EnvVar{{Name: EnvGOGC, Value: "100"}, {Name: EnvGOMEMLIMIT, Value: "1GiB"}}
	})
	objs, err := All(nc, Params{})
	require.NoError(t, err)
	env := envOf(t, objs, "kube-apiserver")
	assert.Equal(t, "100", env[EnvGOGC].Value)
	assert.Equal(t, "1GiB", env[EnvGOMEMLIMIT].Value)
	assert.Nil(t, env[EnvGOMEMLIMIT].ValueFrom)
	d := find[*appsv1.Deployment](objs, "kube-apiserver")
	n := 0
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == EnvGOGC {
			n++
		}
	}
	assert.Equal(t, 1, n, "one GOGC")

	c := corev1.Container{Env: []corev1.EnvVar{{Name: "CAPN_POD_IP", Value: "x"}}}
	assert.Error(t, addEnv(&c, []corev1.EnvVar{{Name: "CAPN_POD_IP", Value: "y"}}))
}

// The podTemplate's env tunes them too, and replaces capn's entry whole:
// merged field by field, a GOMEMLIMIT value would sit beside capn's
// valueFrom, which the API refuses (found by FuzzPodTemplateMerge).
func TestPodTemplateEnvReplacesTheLeanSettings(t *testing.T) {
	nc := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "kube-apiserver",
			Env:  []corev1.EnvVar{{Name: EnvGOGC, Value: "0"}, {Name: EnvGOMEMLIMIT, Value: "1GiB"}, {Name: "EXTRA", Value: "x"}},
		}}}}
	})
	objs, err := All(nc, Params{})
	require.NoError(t, err)
	env := envOf(t, objs, "kube-apiserver")
	assert.Equal(t, corev1.EnvVar{Name: EnvGOGC, Value: "0"}, env[EnvGOGC])
	assert.Equal(t, corev1.EnvVar{Name: EnvGOMEMLIMIT, Value: "1GiB"}, env[EnvGOMEMLIMIT])
	assert.Equal(t, "x", env["EXTRA"].Value)
}
