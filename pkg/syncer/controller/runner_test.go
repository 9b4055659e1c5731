package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"capn.dev/capn/pkg/tenant/names"
)

// A kind is one line in Syncer.kinds: it gets its own queue by its name,
// and nothing else needs to know it.
func TestEveryKindHasItsOwnQueue(t *testing.T) {
	s := New(Options{Tenant: fake.NewClientset(), Host: fake.NewClientset(), WorkloadNamespace: testWorkloads})
	t.Cleanup(s.reg.shutDown)
	seen := map[string]bool{}
	queues := map[queue]string{}
	for _, k := range s.reg.kinds {
		require.False(t, seen[k.name()], "two kinds named %q", k.name())
		seen[k.name()] = true
		q := s.reg.queue(k.name())
		require.NotNil(t, q)
		require.NotContains(t, queues, q, "%s shares a queue with %s", k.name(), queues[q])
		queues[q] = k.name()
	}
	assert.Len(t, s.reg.queues, len(s.reg.kinds), "no queue without a kind")
	assert.Panics(t, func() { s.reg.queue("objects") }, "an unknown kind is a programming error")
}

// A change of one kind that is another kind's work lands on that kind's
// queue: the DNS addon's ConfigMap is both a copied ConfigMap and the
// addon's.
func TestCrossKindEnqueue(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: names.DNSNamespace, Name: names.DNSName}}
	s := New(Options{Tenant: fake.NewClientset(cm), Host: fake.NewClientset(), WorkloadNamespace: testWorkloads})
	startSynced(t, s, s.tenant)
	require.Eventually(t, func() bool {
		return s.reg.queue(kindConfigMaps).Len() == 1 && s.reg.queue(kindDNS).Len() == 1
	}, 5*time.Second, 10*time.Millisecond)
	k, _ := s.reg.queue(kindConfigMaps).Get()
	assert.Equal(t, names.DNSNamespace+"/"+names.DNSName, k)
	k, _ = s.reg.queue(kindDNS).Get()
	assert.Equal(t, dnsKey, k)
}

// The last event about a host pod is its removal: the collector runs then,
// whoever deleted it, since a terminating pod still held its references
// when the syncer asked for its deletion.
func TestHostPodRemovalCollects(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: "p",
		Labels: map[string]string{managedByLabel: names.ManagedByValue}}}
	host := fake.NewClientset(pod)
	s := New(Options{Tenant: fake.NewClientset(), Host: host, WorkloadNamespace: testWorkloads})
	ctx := startSynced(t, s, s.host)
	gc := s.reg.queue(kindGC)
	require.Zero(t, gc.Len(), "nothing to collect while the pod is there")
	require.NoError(t, host.CoreV1().Pods(testWorkloads).Delete(ctx, "p", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return gc.Len() == 1 }, 5*time.Second, 10*time.Millisecond)
	k, _ := gc.Get()
	assert.Equal(t, gcKey, k)
}

// startSynced starts factory, the side of s a test drives, and waits for
// its caches; s's queues shut down with the test.
func startSynced(t *testing.T, s *Syncer, factory informers.SharedInformerFactory) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	t.Cleanup(s.reg.shutDown)
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "%v", typ)
	}
	return ctx
}
