package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func genPod(gen string, policy corev1.PullPolicy, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TenantGenerationAnnotation: gen, "kept": "yes"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "example.com/init:1", ImagePullPolicy: corev1.PullAlways}},
			Containers:     []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: policy}},
		},
	}
}

// A running pod takes the tenant's new images and deadline, and records
// the generation they came from; nothing else of the host pod changes.
func TestSpecUpdateTakesImagesAndDeadline(t *testing.T) {
	host := genPod("1", corev1.PullAlways, "example.com/app:1")
	want := genPod("3", corev1.PullAlways, "example.com/app:2")
	want.Spec.InitContainers[0].Image = "example.com/init:2"
	want.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	want.Annotations["kept"] = "no"

	got, errs := SpecUpdate(host, want)
	require.Empty(t, errs)
	assert.Equal(t, "example.com/app:2", got.Spec.Containers[0].Image)
	assert.Equal(t, "example.com/init:2", got.Spec.InitContainers[0].Image)
	assert.Equal(t, ptr.To[int64](30), got.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, "3", got.Annotations[TenantGenerationAnnotation])
	assert.Equal(t, "yes", got.Annotations["kept"], "only the generation annotation is the update's")
	assert.Equal(t, "example.com/app:1", host.Spec.Containers[0].Image, "host is not modified")
}

// An image that would need another pull policy is refused: kept at
// IfNotPresent, an image the provider does not cache would run from the
// node's cache without a pull.
func TestSpecUpdateRefusesAnImageNeedingAnotherPullPolicy(t *testing.T) {
	host := genPod("1", corev1.PullIfNotPresent, "capn.dev/cached:1")
	want := genPod("2", corev1.PullAlways, "example.com/private:1")
	_, errs := SpecUpdate(host, want)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.containers[0].image", errs[0].Field)
	assert.Contains(t, errs[0].Error(), "recreate the pod")
}

// The tenant's observedGeneration is the generation the host was rendered
// from once the kubelet has seen the host's current generation; until
// then (or for a host pod that records none) it stays as it was. Host
// conditions carry the tenant's number too, never the host's.
func TestStatusObservedGenerationIsTheTenants(t *testing.T) {
	tenant := &corev1.Pod{Status: corev1.PodStatus{ObservedGeneration: 4}}
	host := genPod("5", corev1.PullAlways, "example.com/app:1")
	host.Generation = 2
	host.Status.ObservedGeneration = 2
	host.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: 2}}

	got := Status(tenant, host)
	assert.Equal(t, int64(5), got.ObservedGeneration)
	require.Len(t, got.Conditions, 1)
	assert.Equal(t, int64(5), got.Conditions[0].ObservedGeneration)

	host.Status.ObservedGeneration = 1 // the kubelet has not seen the update
	assert.Equal(t, int64(4), Status(tenant, host).ObservedGeneration)

	delete(host.Annotations, TenantGenerationAnnotation)
	host.Status.ObservedGeneration = 2
	got = Status(tenant, host)
	assert.Equal(t, int64(4), got.ObservedGeneration)
	assert.Zero(t, got.Conditions[0].ObservedGeneration, "the host's generation means nothing in the tenant")
}
