package controller

import (
	"fmt"
	"slices"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

// WakerEndpoints is what the controller reads of the waker: where it
// listens and which of its ports are taken.
type WakerEndpoints interface {
	// Addresses are the ready capn-apiserver pods' addresses: every
	// replica runs the waker.
	Addresses() []string
	// Port is the port of namespace's live waker EndpointSlice, if any:
	// every sync asks, so it is a single cache lookup.
	Port(namespace string) (int32, bool)
	// Ports are the ports of every live waker EndpointSlice, each with the
	// UID of the cluster it belongs to: read only to hand out a new port.
	Ports() map[int32]types.UID
	// APIServerReady reports whether the EndpointSlice controller lists a
	// ready kube-apiserver pod in namespace: kube-proxy can then send the
	// address there, and the waker's slice may go.
	APIServerReady(namespace string) bool
}

// wakerPorts hands each cluster sleeping with wake on request its own
// waker port.
type wakerPorts struct {
	source WakerEndpoints
	mu     sync.Mutex
	// reserved are the ports handed out in this term, which the cache may
	// not show yet: two clusters falling asleep at once get two ports.
	reserved map[types.UID]int32
}

func newWakerPorts(source WakerEndpoints) *wakerPorts {
	return &wakerPorts{source: source, reserved: map[types.UID]int32{}}
}

// wakerFor decides Params.Waker: set while nc sleeps for inactivity, and
// while it wakes until its apiserver has a ready pod (connections in
// between are held, not refused). A cluster put to sleep by spec.sleep.
// asleep gets none: that sleep is its owner's word, and a connection must
// not undo it. nil releases the cluster's port.
func (w *wakerPorts) wakerFor(nc *v1alpha1.NestedCluster, namespace string, o *observation) *builders.Waker {
	if w == nil || w.source == nil {
		return nil
	}
	port, has := w.source.Port(namespace)
	want := o.sleep.asleep && o.sleep.idle
	if !o.sleep.asleep && has {
		want = !w.source.APIServerReady(namespace)
	}
	if !want {
		w.release(nc.UID)
		return nil
	}
	addresses := w.source.Addresses()
	if len(addresses) == 0 {
		w.release(nc.UID)
		return nil
	}
	if !has {
		var ok bool
		if port, ok = w.assign(nc.UID, w.source.Ports()); !ok {
			return nil
		}
	}
	return &builders.Waker{Port: port, Addresses: addresses}
}

func (w *wakerPorts) assign(uid types.UID, live map[int32]types.UID) (int32, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	port, ok := assignWakerPort(uid, live, w.reserved)
	if ok {
		w.reserved[uid] = port
	}
	return port, ok
}

func (w *wakerPorts) release(uid types.UID) {
	if w == nil {
		return
	}
	w.mu.Lock()
	delete(w.reserved, uid)
	w.mu.Unlock()
}

// assignWakerPort is uid's port: the one it holds (reserved, or its live
// slice's), else the lowest port neither live nor reserved. ok is false
// when every port is taken.
func assignWakerPort(uid types.UID, live map[int32]types.UID, reserved map[types.UID]int32) (int32, bool) {
	if p, ok := reserved[uid]; ok {
		return p, true
	}
	used := make(map[int32]bool, len(live)+len(reserved))
	var mine []int32
	for p, u := range live {
		used[p] = true
		if u == uid {
			mine = append(mine, p)
		}
	}
	if len(mine) > 0 {
		return slices.Min(mine), true
	}
	for _, p := range reserved {
		used[p] = true
	}
	for p := int32(provisioner.WakerPortBase); p < provisioner.WakerPortBase+provisioner.WakerPortCount; p++ {
		if !used[p] {
			return p, true
		}
	}
	return 0, false
}

// informerWaker implements WakerEndpoints over two caches: the
// EndpointSlices of capn-apiserver's Service (capn's own namespace), and
// capn's owned EndpointSlices, which hold the waker slices.
type informerWaker struct {
	capn, owned cache.Indexer
}

func (i informerWaker) Addresses() []string {
	var out []string
	for _, obj := range i.capn.List() {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			out = append(out, e.Addresses...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (i informerWaker) Ports() map[int32]types.UID {
	out := map[int32]types.UID{}
	for _, obj := range i.owned.List() {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || !isWakerSlice(s) || len(s.Ports) != 1 || s.Ports[0].Port == nil {
			continue
		}
		out[*s.Ports[0].Port] = types.UID(s.Labels[provisioner.OwnerUIDLabel])
	}
	return out
}

func (i informerWaker) Port(namespace string) (int32, bool) {
	obj, ok, err := i.owned.GetByKey(namespace + "/" + provisioner.WakerEndpointSliceName)
	if err != nil || !ok {
		return 0, false
	}
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || !isWakerSlice(s) || len(s.Ports) != 1 || s.Ports[0].Port == nil {
		return 0, false
	}
	return *s.Ports[0].Port, true
}

func (i informerWaker) APIServerReady(namespace string) bool {
	objs, err := i.owned.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return false
	}
	for _, obj := range objs {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Namespace != namespace || isWakerSlice(s) || s.Labels[discoveryv1.LabelServiceName] != provisioner.APIServerName {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				return true
			}
		}
	}
	return false
}

func isWakerSlice(s *discoveryv1.EndpointSlice) bool {
	return s.Name == provisioner.WakerEndpointSliceName && s.Labels[discoveryv1.LabelManagedBy] == provisioner.WakerManagedBy
}

// WatchWaker re-syncs the clusters that sleep for inactivity, and those
// with a waker EndpointSlice, when capn-apiserver's own endpoints change:
// their slices must list the replicas that run now, and a slice dropped
// while no replica was ready (capn's own restart) comes back.
func (c *ClusterController) WatchWaker(capnEndpoints cache.SharedIndexInformer, owned cache.Indexer) error {
	resync := func(any) { c.resyncWakers(owned) }
	if _, err := capnEndpoints.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: resync, UpdateFunc: func(_, obj any) { resync(obj) }, DeleteFunc: resync,
	}); err != nil {
		return fmt.Errorf("watching capn-apiserver's endpoints: %w", err)
	}
	c.synced = append(c.synced, capnEndpoints.HasSynced)
	return nil
}

func (c *ClusterController) resyncWakers(owned cache.Indexer) {
	for _, obj := range owned.List() {
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok && isWakerSlice(s) {
			c.enqueueOwner(s)
		}
	}
	clusters, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, nc := range clusters {
		if meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionInactive) {
			c.queue.Add(nc.Namespace + "/" + nc.Name)
		}
	}
}
