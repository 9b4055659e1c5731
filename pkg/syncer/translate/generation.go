package translate

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TenantGenerationAnnotation records the tenant pod generation a host
// pod's spec was last rendered from. The host's generation counts the
// host's own updates and means nothing to the tenant; with this the
// tenant pod's status.observedGeneration says which of its generations
// the kubelet has seen.
const TenantGenerationAnnotation = "capn.dev/tenant-generation"

// RenderedGeneration is the tenant generation host was rendered from, and
// whether it records one (a host pod made before capn recorded it does
// not).
func RenderedGeneration(host *corev1.Pod) (int64, bool) {
	g, err := strconv.ParseInt(host.Annotations[TenantGenerationAnnotation], 10, 64)
	return g, err == nil
}

// observedGeneration is the tenant generation the host kubelet has seen:
// the rendered one once the kubelet has observed the host pod's current
// generation, else what the tenant pod said before.
func observedGeneration(tenant, host *corev1.Pod) int64 {
	if g, ok := RenderedGeneration(host); ok && host.Status.ObservedGeneration >= host.Generation {
		return g
	}
	return tenant.Status.ObservedGeneration
}

// conditionGeneration maps a host condition's observedGeneration to the
// tenant's: the rendered generation if the kubelet wrote it for the host
// pod's current generation, else none.
func conditionGeneration(c corev1.PodCondition, host *corev1.Pod) int64 {
	if g, ok := RenderedGeneration(host); ok && c.ObservedGeneration != 0 && c.ObservedGeneration >= host.Generation {
		return g
	}
	return 0
}

// SpecUpdate is host with the fields of a running pod that the tenant may
// change taken from want, the translation of the tenant pod now: the
// container and init-container images and activeDeadlineSeconds (the
// tenant's tolerations steer only its scheduler), and the tenant
// generation want was rendered from. An image whose pull policy on the
// host would have to change is refused: the policy cannot change on a
// pod, and keeping IfNotPresent for an image the provider does not cache
// would run it from the node's cache, which may hold another tenant's
// private pull.
func SpecUpdate(host, want *corev1.Pod) (*corev1.Pod, field.ErrorList) {
	upd := host.DeepCopy()
	var errs field.ErrorList
	spec := field.NewPath("spec")
	images := func(cur, w []corev1.Container, p *field.Path) {
		if len(cur) != len(w) {
			errs = append(errs, field.Forbidden(p, "containers cannot be added or removed"))
			return
		}
		for i := range cur {
			if cur[i].Image == w[i].Image {
				continue
			}
			if cur[i].ImagePullPolicy != w[i].ImagePullPolicy {
				errs = append(errs, field.Forbidden(p.Index(i).Child("image"), "on the shared data plane this image needs imagePullPolicy "+
					string(w[i].ImagePullPolicy)+" and the running pod's is "+string(cur[i].ImagePullPolicy)+"; recreate the pod to change it"))
				continue
			}
			cur[i].Image = w[i].Image
		}
	}
	images(upd.Spec.InitContainers, want.Spec.InitContainers, spec.Child("initContainers"))
	images(upd.Spec.Containers, want.Spec.Containers, spec.Child("containers"))
	if len(errs) > 0 {
		return nil, errs
	}
	upd.Spec.ActiveDeadlineSeconds = want.Spec.ActiveDeadlineSeconds
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[TenantGenerationAnnotation] = want.Annotations[TenantGenerationAnnotation]
	return upd, nil
}
