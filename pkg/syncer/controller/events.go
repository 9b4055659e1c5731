package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// Host Events about host pods are mirrored onto their tenant pods: image
// pull failures, probe failures, evictions and the host scheduler's
// refusals happen on the host, and the tenant would otherwise see a pod
// stuck Pending or restarting with no word why.
//
// This is the one loop that is not level-triggered. Events are lossy by
// design (the recorder drops them under pressure, the apiserver expires
// them after an hour), they have no desired state to converge to, and
// replaying them is worse than missing one: so each is handled once, in
// the informer's handler, and a missed one stays missed.

const (
	// mirroredEventsSize bounds the memory of which host Events were
	// mirrored at which count. An Event that falls out is mirrored again
	// at its next count, at worst: the recorder's spam filter (25 per
	// tenant pod, then one per five minutes) still bounds the tenant.
	mirroredEventsSize = 4096
	// recentEvent is how old a host Event found in the informer's first
	// list may be and still be mirrored. A restart or a new leader lists
	// the workload namespace's last hour of Events; repeating them all on
	// every tenant pod would be a flood of old news, while a leader
	// handover (a 15 s lease) loses nothing newer than this.
	recentEvent = time.Minute
	// podEventSelector: Events about anything but pods are not mirrored,
	// so they need not be cached.
	podEventSelector = "involvedObject.kind=Pod"
)

// newHostEventInformers is the workload namespace's Events. Not s.host:
// that factory selects the syncer's own objects by label, and Events
// carry none.
func newHostEventInformers(o Options) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(o.HostWatch, 0,
		informers.WithNamespace(o.WorkloadNamespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = podEventSelector }),
		informers.WithTransform(func(obj any) (any, error) {
			// The managed fields of every Event would be most of the cache.
			if m, ok := obj.(metav1.Object); ok {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}))
}

// eventKind mirrors host Events onto tenant pods. It is a kind for its
// registration only: it enqueues nothing (each Event is handled once, in
// the informer's handler), so its queue stays empty, and its informer
// starts only once the pod caches have synced and is not waited for.
type eventKind struct {
	*Syncer
	hostEvents informers.SharedInformerFactory
	mirrored   *mirrorLog
}

func (k *eventKind) name() string { return kindEvents }

func (k *eventKind) register(r *registrar) {
	k.hostEvents = newHostEventInformers(k.o)
	k.mirrored = newMirrorLog(mirroredEventsSize)
	r.afterSync(func(ctx context.Context) error {
		if err := k.startEventMirror(ctx); err != nil {
			return fmt.Errorf("mirroring host events: %w", err)
		}
		return nil
	})
}

// sync has nothing to do: nothing is queued (see eventKind).
func (k *eventKind) sync(context.Context, string) error { return nil }

// mirrorLog remembers the count at which each host Event was mirrored.
type mirrorLog struct{ seen *lru.Cache }

func newMirrorLog(size int) *mirrorLog { return &mirrorLog{seen: lru.New(size)} }

// observe records that uid happened count times and reports whether that
// is news: its first sighting, or a higher count than last time. An
// informer's update with the same count (a relist, a label change) is not.
func (m *mirrorLog) observe(uid types.UID, count int32) bool {
	if v, ok := m.seen.Get(uid); ok && v.(int32) >= count {
		return false
	}
	m.seen.Add(uid, count)
	return true
}

// startEventMirror starts mirroring once the pod caches have synced, so
// that the Events of the first list find their pods.
func (k *eventKind) startEventMirror(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("events")
	i := k.hostEvents.Core().V1().Events().Informer()
	_, err := i.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { k.mirrorEvent(logger, obj, initial) },
		UpdateFunc: func(_, obj any) { k.mirrorEvent(logger, obj, false) },
	})
	if err != nil {
		return err
	}
	k.hostEvents.Start(ctx.Done())
	return nil
}

// mirrorEvent records ev on its tenant pod if it is about one of the
// syncer's host pods, allow-listed, and news. initial marks an Event of
// the informer's first list.
func (k *eventKind) mirrorEvent(logger klog.Logger, obj any, initial bool) {
	ev, ok := obj.(*corev1.Event)
	if !ok || ev.InvolvedObject.Kind != "Pod" || ev.InvolvedObject.Namespace != k.o.WorkloadNamespace {
		return
	}
	host, err := k.hostPods.Pods(k.o.WorkloadNamespace).Get(ev.InvolvedObject.Name)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			logger.V(2).Info("host pod lookup failed", "event", klog.KObj(ev), "err", err)
		}
		return // gone, or not the syncer's (the host lister holds only its own)
	}
	id, ok := names.IdentityOf(host.Labels, host.Annotations)
	if !ok {
		return
	}
	tenant, err := k.tenantPods.Pods(id.Namespace).Get(id.Name)
	if err != nil {
		return // the tenant pod is gone: nothing to tell
	}
	te, ok := translate.MirrorEvent(ev, host, tenant)
	if !ok {
		return
	}
	if !k.mirrored.observe(ev.UID, translate.EventCount(ev)) {
		return
	}
	if initial && k.now().Sub(translate.EventLastSeen(ev)) > recentEvent {
		return
	}
	// A reference rather than the pod keeps the host Event's field path
	// (which container); the tenant UID makes it the live pod'k.
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: tenant.Namespace, Name: tenant.Name, UID: tenant.UID,
		ResourceVersion: tenant.ResourceVersion, FieldPath: te.FieldPath,
	}
	k.recorder.Event(ref, te.Type, te.Reason, te.Message)
	logger.V(4).Info("mirrored host event", "pod", klog.KObj(tenant), "event", klog.KObj(ev), "reason", te.Reason)
}
