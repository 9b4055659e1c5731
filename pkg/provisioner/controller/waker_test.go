package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/pki"
)

func TestAssignWakerPort(t *testing.T) {
	base := int32(provisioner.WakerPortBase)
	for name, tc := range map[string]struct {
		live     map[int32]types.UID
		reserved map[types.UID]int32
		want     int32
	}{
		"first":                        {want: base},
		"its live slice's":             {live: map[int32]types.UID{base: "x", base + 7: "me"}, want: base + 7},
		"its reservation":              {reserved: map[types.UID]int32{"me": base + 3}, live: map[int32]types.UID{base + 3: "x"}, want: base + 3},
		"lowest neither live nor held": {live: map[int32]types.UID{base: "x", base + 2: "y"}, reserved: map[types.UID]int32{"z": base + 1}, want: base + 3},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := assignWakerPort("me", tc.live, tc.reserved)
			require.True(t, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	full := map[int32]types.UID{}
	for p := base; p < base+provisioner.WakerPortCount; p++ {
		full[p] = "x"
	}
	_, ok := assignWakerPort("me", full, nil)
	assert.False(t, ok, "every port taken")
}

// kubeWaker reads the waker slices from the fixture's management cluster.
type kubeWaker struct {
	kube      kubernetes.Interface
	addresses []string
}

func (k kubeWaker) Addresses() []string { return k.addresses }

func (k kubeWaker) Port(namespace string) (int32, bool) {
	s, err := k.kube.DiscoveryV1().EndpointSlices(namespace).Get(context.Background(), provisioner.WakerEndpointSliceName, metav1.GetOptions{})
	if err != nil || !isWakerSlice(s) {
		return 0, false
	}
	return *s.Ports[0].Port, true
}

// APIServerReady plays the EndpointSlice controller from the Deployment's
// status.
func (k kubeWaker) APIServerReady(namespace string) bool {
	d, err := k.kube.AppsV1().Deployments(namespace).Get(context.Background(), provisioner.APIServerName, metav1.GetOptions{})
	return err == nil && d.Status.ReadyReplicas > 0
}

func (k kubeWaker) Ports() map[int32]types.UID {
	out := map[int32]types.UID{}
	list, _ := k.kube.DiscoveryV1().EndpointSlices("").List(context.Background(), metav1.ListOptions{})
	for i := range list.Items {
		s := &list.Items[i]
		if isWakerSlice(s) {
			out[*s.Ports[0].Port] = types.UID(s.Labels[provisioner.OwnerUIDLabel])
		}
	}
	return out
}

// While a cluster sleeps for inactivity its apiserver address leads to
// the waker; a connection the waker held wakes it (its own reason), and
// the address leads back to the apiserver once it is ready.
func TestWakerWhileAsleepForInactivity(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Sleep.AfterInactivity = &metav1.Duration{Duration: 5 * time.Minute}
	})
	f := newFixture(t, nc)
	f.c.wakers = newWakerPorts(kubeWaker{f.kube, []string{"10.0.0.5", "10.0.0.6"}})
	clock := testNow
	f.c.now = func() time.Time { return clock }
	var mu sync.Mutex
	f.c.activity.tenantRequests = func(context.Context, string, *pki.CA) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		return 10, nil
	}
	step := func(d time.Duration) {
		clock = clock.Add(d)
		f.sync()
		f.c.tenants.tenantWG.Wait()
		f.c.activity.activityWG.Wait()
		f.sync()
	}
	slice := func() (*discoveryv1.EndpointSlice, bool) {
		s, err := f.kube.DiscoveryV1().EndpointSlices(managementNamespace(f.nc)).Get(context.Background(), provisioner.WakerEndpointSliceName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false
		}
		require.NoError(t, err)
		return s, true
	}
	f.sync()
	f.markReady()
	step(0)
	_, ok := slice()
	assert.False(t, ok, "awake: no waker")

	step(6 * time.Minute)
	step(0)
	require.Zero(t, f.replicas()[provisioner.APIServerName], "asleep for inactivity")
	f.markReady() // zero pods, zero ready
	step(0)
	s, ok := slice()
	require.True(t, ok, "asleep for inactivity: the address leads to the waker")
	assert.Equal(t, int32(provisioner.WakerPortBase), *s.Ports[0].Port)
	assert.Equal(t, provisioner.APIServerName, s.Labels[discoveryv1.LabelServiceName])
	assert.Equal(t, string(f.nc.UID), s.Labels[provisioner.OwnerUIDLabel])
	assert.Len(t, s.Endpoints, 2)

	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Annotations = map[string]string{v1alpha1.ConnectionWakeAnnotation: clock.Add(time.Second).Format(time.RFC3339)}
	})
	step(time.Second)
	assert.Equal(t, int32(1), f.replicas()[provisioner.APIServerName], "a held connection wakes it")
	c := condition(t, &f.nc.Status, v1alpha1.ConditionInactive)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1alpha1.ReasonConnectionReceived, c.Reason)
	_, ok = slice()
	assert.True(t, ok, "waking: connections are still held until the apiserver is ready")

	f.markReady()
	step(0)
	_, ok = slice()
	assert.False(t, ok, "awake again: the address leads to the apiserver")
	assert.Empty(t, f.c.wakers.reserved, "its port is free again")
}

// A cluster deleted while it sleeps gives its waker port back.
func TestDeletedClusterReleasesItsWakerPort(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) {
		now := metav1.NewTime(testNow)
		nc.DeletionTimestamp = &now
		nc.Finalizers = []string{v1alpha1.ProvisionerFinalizer}
	})
	f := newFixture(t, nc)
	f.c.wakers = newWakerPorts(kubeWaker{f.kube, []string{"10.0.0.5"}})
	f.c.wakers.reserved[nc.UID] = provisioner.WakerPortBase
	_, err := f.c.sync(context.Background(), nc.Namespace+"/"+nc.Name)
	require.NoError(t, err)
	assert.Empty(t, f.c.wakers.reserved)
}

// A sleep its owner asked for is not undone by a connection: no waker.
func TestNoWakerWhenAskedToSleep(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Sleep.Asleep = true })
	f := newFixture(t, nc)
	f.c.wakers = newWakerPorts(kubeWaker{f.kube, []string{"10.0.0.5"}})
	f.sync()
	f.markReady()
	f.sync()
	require.Zero(t, f.replicas()[provisioner.APIServerName])
	_, err := f.kube.DiscoveryV1().EndpointSlices(managementNamespace(f.nc)).Get(context.Background(), provisioner.WakerEndpointSliceName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// When capn-apiserver's replicas change, every cluster asleep for
// inactivity is synced again, with or without a waker slice: one dropped
// while no replica was ready (capn's own restart) comes back.
func TestWakersResyncWhenCapnEndpointsChange(t *testing.T) {
	idle := testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInactive, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNoRequests}}
	})
	f := newFixture(t, idle)
	awake := testCluster(func(nc *v1alpha1.NestedCluster) { nc.Name, nc.UID = "awake", "uid-awake" })
	require.NoError(t, f.indexer.Add(awake))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	f.c.queue = q
	f.c.resyncWakers(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	require.Equal(t, 1, q.Len())
	key, _ := q.Get()
	assert.Equal(t, idle.Namespace+"/"+idle.Name, key)
}

// The waker's slice goes only once the EndpointSlice controller lists a
// ready apiserver pod in that namespace: the waker's own slice, another
// Service's or another namespace's do not count.
func TestInformerWakerAPIServerReady(t *testing.T) {
	slice := func(ns, name, service, managedBy string, ready bool) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
				discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: managedBy}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		}
	}
	owned := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range []*discoveryv1.EndpointSlice{
		slice("a", provisioner.WakerEndpointSliceName, provisioner.APIServerName, provisioner.WakerManagedBy, true),
		slice("a", "etcd-x", provisioner.EtcdName, "endpointslice-controller.k8s.io", true),
		slice("a", "kube-apiserver-x", provisioner.APIServerName, "endpointslice-controller.k8s.io", false),
		slice("b", "kube-apiserver-y", provisioner.APIServerName, "endpointslice-controller.k8s.io", true),
	} {
		require.NoError(t, owned.Add(s))
	}
	w := informerWaker{owned: owned}
	assert.False(t, w.APIServerReady("a"))
	assert.True(t, w.APIServerReady("b"))
	port, ok := w.Port("a")
	assert.False(t, ok, "the waker slice has no port: not a usable route")
	assert.Zero(t, port)
	_, ok = w.Port("b")
	assert.False(t, ok, "no waker slice in b")
	withPort := slice("c", provisioner.WakerEndpointSliceName, provisioner.APIServerName, provisioner.WakerManagedBy, true)
	withPort.Ports = []discoveryv1.EndpointPort{{Port: ptr.To[int32](40003)}}
	require.NoError(t, owned.Add(withPort))
	port, ok = w.Port("c")
	assert.True(t, ok)
	assert.Equal(t, int32(40003), port)
}
