package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// waitingPod is a component pod whose only container waits with reason.
func waitingPod(name, component, image, reason, message string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.ClusterLabel: "demo", v1alpha1.ComponentLabel: component}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: component, Image: image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		}}},
	}
}

func TestImagePullConditionNamesComponentImageAndReason(t *testing.T) {
	pods := []corev1.Pod{
		waitingPod("kube-scheduler-b", v1alpha1.ComponentScheduler, "registry.k8s.io/kube-scheduler:v1.36.3", "ImagePullBackOff", "Back-off pulling image"),
		waitingPod("kube-apiserver-a", v1alpha1.ComponentAPIServer, "registry.k8s.io/kube-apiserver:v1.36.3", "ErrImageNeverPull", `Container image "registry.k8s.io/kube-apiserver:v1.36.3" is not present with pull policy of Never`),
		waitingPod("etcd-0", v1alpha1.ComponentEtcd, "registry.k8s.io/etcd:3.7.0-0", "ContainerCreating", ""),
	}
	c := imagePullCondition(pods)
	assert.Equal(t, v1alpha1.ConditionImagesAvailable, c.Type)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	// The apiserver comes before the scheduler whatever the list order;
	// etcd's ContainerCreating is not an image problem.
	assert.Equal(t, "ErrImageNeverPull", c.Reason)
	assert.Equal(t, `kube-apiserver: image registry.k8s.io/kube-apiserver:v1.36.3 (pod kube-apiserver-a, container kube-apiserver): ErrImageNeverPull: Container image "registry.k8s.io/kube-apiserver:v1.36.3" is not present with pull policy of Never`, c.Message)
}

func TestImagePullConditionTrueWithoutPullProblems(t *testing.T) {
	crash := waitingPod("kube-apiserver-a", v1alpha1.ComponentAPIServer, "img", "CrashLoopBackOff", "back-off restarting")
	gone := waitingPod("kube-apiserver-b", v1alpha1.ComponentAPIServer, "img", "ImagePullBackOff", "")
	gone.DeletionTimestamp = &metav1.Time{}
	c := imagePullCondition([]corev1.Pod{crash, gone})
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, v1alpha1.ReasonImagesPresent, c.Reason)
}

func TestImagePullConditionBoundsTheKubeletMessage(t *testing.T) {
	long := strings.Repeat("é", 1000) // the registry's error text is not capn's to size
	c := imagePullCondition([]corev1.Pod{waitingPod("p", v1alpha1.ComponentEtcd, "img", "ErrImagePull", long)})
	_, msg, ok := strings.Cut(c.Message, "ErrImagePull: ")
	require.True(t, ok, c.Message)
	assert.LessOrEqual(t, len(msg), maxImageMessage+len("…"))
	assert.True(t, strings.HasSuffix(msg, "…"))
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(msg, "…")), "cut inside a rune")
}

// A component pod that cannot get its image shows on the NestedCluster:
// ImagesAvailable False, and Ready says why, not just ComponentsNotReady.
// It clears once the pod has its image.
func TestStatusReportsMissingImage(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ns := managementNamespace(f.nc)
	pod := waitingPod("kube-controller-manager-x", v1alpha1.ComponentControllerManager, "registry.k8s.io/kube-controller-manager:v1.37.2", "ErrImageNeverPull", "not present")
	pod.Namespace = ns
	_, err := f.kube.CoreV1().Pods(ns).Create(context.Background(), &pod, metav1.CreateOptions{})
	require.NoError(t, err)

	assert.Equal(t, notReadyRequeue, f.sync(), "a cluster waiting for an image must be looked at again")
	images := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionImagesAvailable)
	require.NotNil(t, images)
	assert.Equal(t, metav1.ConditionFalse, images.Status)
	assert.Equal(t, "ErrImageNeverPull", images.Reason)
	assert.Contains(t, images.Message, "kube-controller-manager: image registry.k8s.io/kube-controller-manager:v1.37.2")
	ready := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, v1alpha1.ReasonImagePullFailed, ready.Reason)
	assert.Equal(t, images.Message, ready.Message)

	require.NoError(t, f.kube.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}))
	f.markReady()
	f.syncTenant()
	assert.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionImagesAvailable))
	assert.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReady))
}
