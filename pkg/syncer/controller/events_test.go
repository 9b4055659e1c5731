package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

const testWorkloads = "capn-w"

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// eventSyncer is the Event mirror with just what mirrorEvent reads: a host pod
// web-0 of tenant pod shop/web-0, and a fake recorder.
func eventSyncer(t *testing.T) (*eventKind, *corev1.Pod, *record.FakeRecorder) {
	tenant := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "tenant-uid"}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	host := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: testWorkloads, Name: names.Host("shop", "web-0"), UID: "host-uid",
		Labels:      translate.HostLabels("shop", "tenant-uid"),
		Annotations: map[string]string{names.TenantNameAnnotation: "web-0"},
	}}
	tenants := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	hosts := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, tenants.Add(tenant))
	require.NoError(t, hosts.Add(host))
	rec := record.NewFakeRecorder(100)
	rec.IncludeObject = true
	s := &eventKind{Syncer: &Syncer{
		o:          Options{WorkloadNamespace: testWorkloads},
		now:        func() time.Time { return testNow },
		tenantPods: corelisters.NewPodLister(tenants), hostPods: corelisters.NewPodLister(hosts),
		recorder: rec,
	}, mirrored: newMirrorLog(mirroredEventsSize)}
	return s, host, rec
}

func podEvent(host *corev1.Pod, reason string, count int32, last time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: host.Namespace, Name: host.Name + "." + reason, UID: types.UID("ev-uid-" + reason)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: host.Namespace, Name: host.Name, UID: host.UID, FieldPath: "spec.containers{web}"},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: "Error: cannot start the container of pod " + host.Namespace + "/" + host.Name,
		Count: count, LastTimestamp: metav1.NewTime(last),
	}
}

func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestMirrorEventOncePerCount(t *testing.T) {
	s, host, rec := eventSyncer(t)
	log := klog.Background()
	ev := podEvent(host, "Failed", 1, testNow)

	s.mirrorEvent(log, ev, false)
	got := drain(rec)
	require.Len(t, got, 1)
	assert.Equal(t, `Warning Failed Error: cannot start the container of pod shop/web-0 involvedObject{kind=Pod,apiVersion=v1}`, got[0])

	s.mirrorEvent(log, ev.DeepCopy(), false)
	assert.Empty(t, drain(rec), "an update with the same count (a relist) is not news")

	again := ev.DeepCopy()
	again.Count = 3
	s.mirrorEvent(log, again, false)
	assert.Len(t, drain(rec), 1, "a higher count is mirrored, once")
	s.mirrorEvent(log, ev, false)
	assert.Empty(t, drain(rec), "a stale copy at a lower count is not")
}

func TestMirrorEventHidesThePullError(t *testing.T) {
	s, host, rec := eventSyncer(t)
	ev := podEvent(host, "Failed", 1, testNow)
	ev.Message = `Failed to pull image "x": failed to resolve reference: dial tcp 10.0.0.1:5000: connect: connection refused`
	s.mirrorEvent(klog.Background(), ev, false)
	got := drain(rec)
	require.Len(t, got, 1)
	assert.NotContains(t, got[0], "10.0.0.1")
	assert.NotContains(t, got[0], "connection refused")
	assert.Contains(t, got[0], "the registry's answer is not shown")
}

func TestMirrorEventFirstListOnlyRecent(t *testing.T) {
	s, host, rec := eventSyncer(t)
	log := klog.Background()
	old := podEvent(host, "Failed", 2, testNow.Add(-30*time.Minute))
	s.mirrorEvent(log, old, true)
	assert.Empty(t, drain(rec), "a restart does not replay the last hour")
	s.mirrorEvent(log, podEvent(host, "BackOff", 1, testNow.Add(-10*time.Second)), true)
	assert.Len(t, drain(rec), 1, "a handover loses nothing recent")

	// The old Event happens again after the restart: that is news.
	old.Count, old.LastTimestamp = 3, metav1.NewTime(testNow)
	s.mirrorEvent(log, old, false)
	assert.Len(t, drain(rec), 1)
}

func TestMirrorEventNeedsTheLiveTenantPod(t *testing.T) {
	log := klog.Background()
	t.Run("host pod of an earlier tenant pod", func(t *testing.T) {
		s, host, rec := eventSyncer(t)
		host.Labels[names.TenantUIDLabel] = "earlier-uid"
		s.mirrorEvent(log, podEvent(host, "Failed", 1, testNow), false)
		assert.Empty(t, drain(rec))
	})
	t.Run("not the syncer's host pod", func(t *testing.T) {
		s, host, rec := eventSyncer(t)
		ev := podEvent(host, "Failed", 1, testNow)
		ev.InvolvedObject.Name = "someone-else"
		s.mirrorEvent(log, ev, false)
		assert.Empty(t, drain(rec))
	})
	t.Run("not allow-listed", func(t *testing.T) {
		s, host, rec := eventSyncer(t)
		s.mirrorEvent(log, podEvent(host, "Pulled", 1, testNow), false)
		assert.Empty(t, drain(rec))
	})
}

func TestMirrorLogIsBounded(t *testing.T) {
	m := newMirrorLog(2)
	for i := range 3 {
		assert.True(t, m.observe(typesUID(i), 1))
	}
	assert.Equal(t, 2, m.seen.Len())
	assert.True(t, m.observe(typesUID(0), 1), "forgotten: mirrored again at worst")
	assert.False(t, m.observe(typesUID(2), 1))
}

func typesUID(i int) types.UID { return types.UID(fmt.Sprintf("uid-%d", i)) }
