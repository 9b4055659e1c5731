package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// LeanTemplateRevision is the first revision with the lean defaults
// (docs/cost.md): Go runtime settings on every Go component of the control
// plane, measured by `make bench-lean`. What it measured and left out (a
// trimmed kube-controller-manager, the watch cache off) is in
// docs/benchmarks.md.
const LeanTemplateRevision = 4

// Go runtime variables capn sets from LeanTemplateRevision on. A tenant's
// spec.<component>.env of the same name replaces capn's value (addEnv):
// they tune memory against CPU, and nothing capn relies on.
const (
	EnvGOGC       = "GOGC"
	EnvGOMEMLIMIT = "GOMEMLIMIT"
)

// leanGOGC is GOGC for the lean defaults: the heap grows by half of the
// live heap between collections instead of all of it. Measured by `make
// bench-lean` (docs/benchmarks.md): kube-apiserver 0.83x, kube-controller-
// manager 0.89x, the whole tenant 0.88x, for a few millicores of CPU.
const leanGOGC = "50"

// tunableEnv are the env names a tenant may set over capn's.
var tunableEnv = map[string]bool{EnvGOGC: true, EnvGOMEMLIMIT: true}

// leanComponents are the components that get the lean Go settings: every
// Go process of the control plane.
var leanComponents = map[string]bool{
	v1alpha1.ComponentEtcd: true, v1alpha1.ComponentAPIServer: true, v1alpha1.ComponentControllerManager: true,
	v1alpha1.ComponentScheduler: true, v1alpha1.ComponentSyncer: true,
}

// leanEnv is the Go runtime env of component's container at rev: GOGC,
// and GOMEMLIMIT from the container's own memory limit through the
// downward API (every container has one: the namespace's LimitRange gives
// it), so the runtime collects harder as it nears the limit instead of
// being OOM-killed at it. The limit, not the request: a soft limit below
// the working set makes the collector run without pause, and `make
// bench-lean` measured no idle saving from one at the request either.
func leanEnv(component, container string, rev int) []corev1.EnvVar {
	if rev < LeanTemplateRevision || !leanComponents[component] {
		return nil
	}
	return []corev1.EnvVar{
		{Name: EnvGOGC, Value: leanGOGC},
		{Name: EnvGOMEMLIMIT, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			ContainerName: container, Resource: "limits.memory", Divisor: resource.MustParse("1"),
		}}},
	}
}
