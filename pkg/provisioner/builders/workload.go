package builders

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// deployment wraps a kube-* pod template. Rolling updates surge one pod and
// never go below the desired count: apiservers are active-active, and the
// controllers hand over through leader election. A single controller
// replica runs without leader election, so two would both act: it is
// replaced with Recreate instead.
func deployment(nc *v1alpha1.NestedCluster, p Params, name, component string, replicas int32, tpl corev1.PodTemplateSpec, singleActive bool) *appsv1.Deployment {
	strategy := appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge:       ptr.To(intstr.FromInt32(1)),
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		},
	}
	if singleActive && replicas == 1 {
		strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	place(&tpl.Spec, p.Placement)
	meta := objectMeta(nc, p, name, component)
	stampRevision(&meta, p.revision(component))
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: provisioner.SelectorLabels(nc, component)},
			Template: tpl,
			Strategy: strategy,
		},
	}
}

// podDisruptionBudget keeps all but one replica through voluntary
// disruptions (node drains). With one replica a PDB could only block
// drains forever, so there is none.
func podDisruptionBudget(nc *v1alpha1.NestedCluster, p Params, name, component string, replicas int32) *policyv1.PodDisruptionBudget {
	if replicas <= 1 {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: objectMeta(nc, p, name, component),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(replicas - 1)),
			Selector:     &metav1.LabelSelector{MatchLabels: provisioner.SelectorLabels(nc, component)},
		},
	}
}

// podTemplate wraps a spec with capn's labels and annotations.
func podTemplate(nc *v1alpha1.NestedCluster, component string, annotations map[string]string, spec corev1.PodSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: provisioner.ComponentLabels(nc, component), Annotations: annotations},
		Spec:       spec,
	}
}

func configMap(nc *v1alpha1.NestedCluster, p Params, name, component string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(nc, p, name, component),
		Data:       data,
	}
}

func servicePort(name string, port, target int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(target), Protocol: corev1.ProtocolTCP}
}

// appendObjects adds the non-nil objects; a nil *T in an interface is not nil.
func appendObjects(out []Object, pdb *policyv1.PodDisruptionBudget, objs ...Object) []Object {
	out = append(out, objs...)
	if pdb != nil {
		out = append(out, pdb)
	}
	return out
}
