package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"

	"capn.dev/capn/pkg/syncer/translate"
)

// A StatefulSet pod's replacement has the same host name, so it inherits
// its predecessor's pod Secret, created long ago. Between the replacement's
// create and its appearance in the host pod cache, that Secret looks old
// and unreferenced; the collector must leave it, or the new pod never
// mounts it (conformance: "StatefulSet should perform rolling updates and
// roll backs", FailedMount "secret ... not found").
func TestCollectorLeavesWhatAPodCreateJustUsed(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	longAgo := metav1.NewTime(now.Add(-time.Hour))
	podSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: "ss-1-x-shop-abc-pod", UID: "s1", CreationTimestamp: longAgo}}
	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: "gone-x-shop-def-pod", UID: "s2", CreationTimestamp: longAgo}}
	client := fake.NewClientset(podSecret.DeepCopy(), orphan.DeepCopy())
	k := &gcKind{Syncer: &Syncer{
		o:              Options{WorkloadNamespace: testWorkloads, Host: client},
		now:            func() time.Time { return now },
		hostPods:       corelisters.NewPodLister(indexOf(t)),
		hostConfigMaps: corelisters.NewConfigMapLister(indexOf(t)),
		hostSecrets:    corelisters.NewSecretLister(indexOf(t, podSecret, orphan)),
	}, q: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	t.Cleanup(k.q.ShutDown)

	k.markUsed("shop", &translate.Result{SecretName: podSecret.Name})
	require.NoError(t, k.collect(context.Background()))
	_, err := client.CoreV1().Secrets(testWorkloads).Get(context.Background(), podSecret.Name, metav1.GetOptions{})
	require.NoError(t, err, "the Secret a pod create relied on a moment ago")
	_, err = client.CoreV1().Secrets(testWorkloads).Get(context.Background(), orphan.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "an old Secret nothing uses is collected: %v", err)

	// A minute on, with still no pod referencing it, it goes too.
	now = now.Add(gcMinAge + time.Second)
	require.NoError(t, k.collect(context.Background()))
	_, err = client.CoreV1().Secrets(testWorkloads).Get(context.Background(), podSecret.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}
