package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// kube-apiserver writes its own bootstrap objects (the system: RBAC that
// kcm and the scheduler act with) only when it starts, and the other
// components cache the old etcd's resourceVersions: after a one-member
// EmptyDir or Memory etcd came back empty, capn restarts the control-plane
// pods that started before it (never etcd's), once, and never on a new
// cluster, a PVC etcd or an etcd that did not change.
func TestApiserverRestartsAfterEtcdLoss(t *testing.T) {
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(d)) }
	pod := func(ns, name, component, uid string, created metav1.Time, nc *v1alpha1.NestedCluster) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: created,
			Labels: provisioner.SelectorLabels(nc, component)}}
	}
	for name, tc := range map[string]struct {
		storage  v1alpha1.EtcdStorageType
		recorded string // TenantEtcdPodsAnnotation; "" means none
		apiAge   time.Duration
		want     bool
	}{
		"etcd replaced, apiserver older":     {v1alpha1.EtcdStorageMemory, "old-etcd", -time.Hour, true},
		"EmptyDir too":                       {v1alpha1.EtcdStorageEmptyDir, "old-etcd", -time.Hour, true},
		"apiserver already restarted":        {v1alpha1.EtcdStorageMemory, "old-etcd", time.Minute, false},
		"etcd unchanged":                     {v1alpha1.EtcdStorageMemory, "new-etcd", -time.Hour, false},
		"never bootstrapped (a new cluster)": {v1alpha1.EtcdStorageMemory, "", -time.Hour, false},
		"a PersistentVolumeClaim keeps data": {v1alpha1.EtcdStoragePersistentVolumeClaim, "old-etcd", -time.Hour, false},
	} {
		t.Run(name, func(t *testing.T) {
			nc := testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Etcd.Managed.Storage.Type = tc.storage })
			ns := managementNamespace(nc)
			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if tc.recorded != "" {
				namespace.Annotations = map[string]string{TenantEtcdPodsAnnotation: tc.recorded}
			}
			f := newFixture(t, nc, namespace,
				pod(ns, "etcd-0", v1alpha1.ComponentEtcd, "new-etcd", at(0), nc),
				pod(ns, "kube-apiserver-1", v1alpha1.ComponentAPIServer, "api", at(tc.apiAge), nc),
				pod(ns, "kube-controller-manager-1", v1alpha1.ComponentControllerManager, "kcm", at(tc.apiAge), nc))
			restarted, err := f.c.tenants.restartAfterEtcdLoss(context.Background(), nc, ns, []string{"new-etcd"})
			require.NoError(t, err)
			assert.Equal(t, tc.want, restarted)
			left, err := f.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			if tc.want {
				assert.Len(t, left.Items, 1, "the apiserver and kcm pods are deleted, etcd's is not")
				assert.Equal(t, "etcd-0", left.Items[0].Name)
				assert.Contains(t, <-f.recorder.Events, "EtcdDataLost")
			} else {
				assert.Len(t, left.Items, 3)
			}
		})
	}
}
