package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// A sync that fails at a step says so in status (it used to return before
// the status write, leaving Ready=True and only an Event), and clears it
// when a later sync gets through.
func TestFailedStepReachesStatus(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	f.markReady()
	f.syncTenant()
	require.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReady))
	require.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReconciled))

	broken := true
	f.kube.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return broken, nil, errors.New("admission webhook denied the request")
	})
	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.ControllerManager.ExtraArgs = map[string]string{"v": "4"}
		nc.Generation++
	})
	f.events()
	_, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	require.Error(t, err)
	f.refresh()
	c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionReconciled)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, "ApplyFailed", c.Reason)
	assert.Contains(t, c.Message, "admission webhook denied the request")
	assert.Equal(t, f.nc.Generation, c.ObservedGeneration)
	assert.Contains(t, f.events(), "Warning ApplyFailed "+c.Message)

	broken = false
	f.sync()
	assert.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReconciled))
}

// The etcd image capn keeps is the running StatefulSet's, not what status
// says: a status write (by anyone with /status access) must not roll etcd.
func TestEtcdImageComesFromTheLiveStatefulSet(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ctx, ns := context.Background(), managementNamespace(f.nc)
	before, err := f.kube.AppsV1().StatefulSets(ns).Get(ctx, "etcd", metav1.GetOptions{})
	require.NoError(t, err)
	image := before.Spec.Template.Spec.Containers[0].Image

	st := f.nc.DeepCopy()
	st.Status.Etcd.Image = "registry.example/evil-etcd:1"
	_, err = f.capn.CapnV1alpha1().NestedClusters(st.Namespace).UpdateStatus(ctx, st, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh()
	f.sync()

	after, err := f.kube.AppsV1().StatefulSets(ns).Get(ctx, "etcd", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, image, after.Spec.Template.Spec.Containers[0].Image)
}

// An Event that describes status is recorded only once that status is
// written: a failed status write leaves no Warning behind for a condition
// nobody can see.
func TestNoEventWithoutItsStatusWrite(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	f.kube.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission webhook denied the request")
	})
	statusDown := true
	f.capn.PrependReactor("update", "nestedclusters", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return statusDown && a.GetSubresource() == "status", nil, errors.New("etcdserver: request timed out")
	})
	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.ControllerManager.ExtraArgs = map[string]string{"v": "4"}
		nc.Generation++
	})
	f.events()
	_, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "admission webhook denied the request")
	assert.Contains(t, err.Error(), "request timed out")
	assert.NotContains(t, strings.Join(f.events(), "\n"), "ApplyFailed")

	statusDown = false
	_, err = f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	require.Error(t, err)
	assert.Contains(t, strings.Join(f.events(), "\n"), "Warning ApplyFailed")
}
