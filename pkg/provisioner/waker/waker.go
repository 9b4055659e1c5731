// Package waker holds connections to the apiserver of a cluster that
// sleeps for inactivity, wakes it, and passes each connection on to the
// woken apiserver with its bytes untouched (TLS included): the tenant's
// kubeconfig does not change, and its first request is answered late
// instead of refused.
//
// Every capn-apiserver replica runs one. The provisioner points a
// sleeping cluster's kube-apiserver Service at the replicas through an
// extra EndpointSlice (builders.WakerEndpointSlice) on the cluster's own
// port: the port is all the waker reads to tell clusters apart, and it
// parses nothing a client sends.
package waker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

const clusterLabel = v1alpha1.ClusterLabel

// Bounds. A connection is held for at most HoldTimeout while its cluster
// wakes and then closed (a TCP close, nothing written: the bytes are the
// client's TLS). Each cluster may have MaxPerCluster connections through
// the waker, all clusters together MaxTotal: a flood against one
// sleeping address wakes that cluster only and takes its own share.
type Config struct {
	HoldTimeout   time.Duration
	MaxPerCluster int
	MaxTotal      int
	// WakeInterval spaces one cluster's wake requests.
	WakeInterval time.Duration
	// DialTimeout bounds the connection to the woken apiserver.
	DialTimeout time.Duration
	// ListenHost is the address listeners bind (empty: every address).
	ListenHost string
	// Linger keeps a port served, on its last route, this long after its
	// slice is gone: kube-proxy may still send connections there.
	Linger time.Duration
}

// DefaultConfig: 60 s covers a wake on this project's measurements
// (make bench-wake) many times over.
func DefaultConfig() Config {
	return Config{HoldTimeout: time.Minute, MaxPerCluster: 64, MaxTotal: 2048, WakeInterval: 5 * time.Second, DialTimeout: 5 * time.Second,
		Linger: 30 * time.Second}
}

// WakeFunc asks for cluster (by name, and only if its UID is uid) to wake.
type WakeFunc func(ctx context.Context, cluster types.NamespacedName, uid types.UID) error

// route is where one waker port leads.
type route struct {
	// namespace is the cluster's management namespace; service its
	// apiserver Service; portName that Service's port.
	namespace, service, portName string
	uid                          types.UID
	cluster                      types.NamespacedName
}

// Waker is one replica's waker.
type Waker struct {
	cfg Config
	// slices caches the EndpointSlices of every kube-apiserver Service
	// (the waker's and the EndpointSlice controller's); namespaces caches
	// capn's management namespaces, whose labels name the owner.
	slices, namespaces cache.Indexer
	wake               WakeFunc
	now                func() time.Time

	mu        sync.Mutex
	routes    map[int32]route
	listeners map[int32]net.Listener
	// gone: when each port still listened on lost its route (Linger).
	gone     map[int32]time.Time
	open     map[types.UID]int
	total    int
	lastWake map[types.UID]time.Time
	// changed is closed, and replaced, whenever the caches change: held
	// connections wait on it for a ready apiserver.
	changed chan struct{}
	wg      sync.WaitGroup
}

// New returns a waker over the two caches (see Waker); call Changed from
// their event handlers and Run to serve.
func New(cfg Config, slices, namespaces cache.Indexer, wake WakeFunc) *Waker {
	return &Waker{cfg: cfg, slices: slices, namespaces: namespaces, wake: wake, now: time.Now,
		routes: map[int32]route{}, listeners: map[int32]net.Listener{}, gone: map[int32]time.Time{}, open: map[types.UID]int{},
		lastWake: map[types.UID]time.Time{}, changed: make(chan struct{})}
}

// Changed re-reads the routes, opens and closes listeners to match, and
// wakes the held connections to look for their apiserver again.
func (w *Waker) Changed(ctx context.Context) {
	if ctx.Err() != nil {
		return // stopped: Run closed the listeners
	}
	routes := routesOf(w.slices.List(), w.namespaceLabels)
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
	now := w.now()
	for port, l := range w.listeners {
		if _, ok := routes[port]; ok {
			delete(w.gone, port)
			continue
		}
		// kube-proxy follows a removed slice a moment later: until then
		// connections still arrive here, and are passed on (the cluster
		// is awake) rather than refused.
		since, lingering := w.gone[port]
		if !lingering {
			since = now
			w.gone[port] = now
			time.AfterFunc(w.cfg.Linger, func() { w.Changed(ctx) })
		}
		if old, ok := w.routes[port]; ok && now.Sub(since) < w.cfg.Linger {
			routes[port] = old
			continue
		}
		_ = l.Close() // held and passed-on connections stay
		delete(w.listeners, port)
		delete(w.gone, port)
	}
	w.routes = routes
	for port := range routes {
		if _, ok := w.listeners[port]; ok {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(w.cfg.ListenHost, strconv.Itoa(int(port))))
		if err != nil {
			klog.FromContext(ctx).Error(err, "Waker cannot listen", "port", port)
			continue
		}
		w.listeners[port] = l
		w.wg.Add(1)
		go w.serve(ctx, l, port)
	}
}

// Run serves until ctx ends, then closes every listener.
func (w *Waker) Run(ctx context.Context) {
	<-ctx.Done()
	w.mu.Lock()
	for port, l := range w.listeners {
		_ = l.Close()
		delete(w.listeners, port)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

func (w *Waker) namespaceLabels(name string) (map[string]string, bool) {
	obj, ok, err := w.namespaces.GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, false
	}
	return ns.Labels, true
}

// routesOf maps waker ports to clusters from the cached EndpointSlices. A
// slice counts only in a management namespace capn made (its labels,
// which only capn writes, name the owner: a workload namespace, where a
// tenant's syncer writes EndpointSlices, never counts), under the waker's
// name and manager. A port two slices claim leads nowhere.
func routesOf(slices []any, namespaceLabels func(string) (map[string]string, bool)) map[int32]route {
	out := map[int32]route{}
	dup := map[int32]bool{}
	for _, obj := range slices {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Name != provisioner.WakerEndpointSliceName || s.Labels[discoveryv1.LabelManagedBy] != provisioner.WakerManagedBy ||
			len(s.Ports) != 1 || s.Ports[0].Port == nil || s.Ports[0].Name == nil {
			continue
		}
		l, ok := namespaceLabels(s.Namespace)
		if !ok || l[provisioner.ManagedByLabel] != provisioner.ManagedByValue || l[provisioner.WorkloadNamespaceLabel] != "" ||
			l[provisioner.OwnerUIDLabel] == "" || l[provisioner.ClusterNamespaceLabel] == "" || l[clusterLabel] == "" {
			continue
		}
		port := *s.Ports[0].Port
		if _, taken := out[port]; taken {
			dup[port] = true
			continue
		}
		out[port] = route{namespace: s.Namespace, service: s.Labels[discoveryv1.LabelServiceName], portName: *s.Ports[0].Name,
			uid:     types.UID(l[provisioner.OwnerUIDLabel]),
			cluster: types.NamespacedName{Namespace: l[provisioner.ClusterNamespaceLabel], Name: l[clusterLabel]}}
	}
	for port := range dup {
		delete(out, port)
	}
	return out
}

func (w *Waker) serve(ctx context.Context, l net.Listener, port int32) {
	defer w.wg.Done()
	for {
		conn, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.handle(ctx, conn, port)
		}()
	}
}

// handle holds conn until its cluster has a ready apiserver, then passes
// it on.
func (w *Waker) handle(ctx context.Context, conn net.Conn, port int32) {
	defer conn.Close()
	logger := klog.FromContext(ctx).WithValues("port", port)
	r, ok := w.admit(port)
	if !ok {
		return
	}
	defer w.leave(r.uid)
	logger = logger.WithValues("nestedcluster", r.cluster.String())
	start := w.now()
	held.Inc()
	// While it is held the client's first bytes (its TLS hello) are kept
	// aside, unread by anyone, so that a client that gives up frees its
	// slot at once rather than at the hold timeout.
	hc := holdConn(conn, maxHeldBytes)
	holdCtx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-hc.gone:
			cancel()
		case <-holdCtx.Done():
		}
	}()
	addr, woke, err := w.backend(holdCtx, r)
	cancel()
	held.Dec()
	kept, ok := hc.release()
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil && !hc.closed() {
			heldTimeouts.Inc()
			logger.V(2).Info("Closing a held connection", "reason", err)
		}
		return
	}
	dialer := net.Dialer{Timeout: w.cfg.DialTimeout}
	up, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		logger.V(2).Info("Woken apiserver unreachable", "address", addr, "err", err)
		return
	}
	defer up.Close()
	if _, err := up.Write(kept); err != nil {
		return
	}
	var first func()
	if woke {
		first = func() { firstByte.Observe(w.now().Sub(start).Seconds()) }
	}
	splice(conn, up, first)
}

// admit takes a slot for port's cluster, or refuses the connection.
func (w *Waker) admit(port int32) (route, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.routes[port]
	switch {
	case !ok:
		refused.WithLabelValues("no-route").Inc()
		return r, false
	case w.total >= w.cfg.MaxTotal:
		refused.WithLabelValues("total").Inc()
		return r, false
	case w.open[r.uid] >= w.cfg.MaxPerCluster:
		refused.WithLabelValues("cluster").Inc()
		return r, false
	}
	w.open[r.uid]++
	w.total++
	return r, true
}

func (w *Waker) leave(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total--
	if w.open[uid]--; w.open[uid] <= 0 {
		delete(w.open, uid)
	}
}

// backend waits, up to HoldTimeout, for a ready apiserver of r, asking for
// a wake (at most every WakeInterval) while there is none. woke reports
// whether this connection had to wait.
func (w *Waker) backend(ctx context.Context, r route) (addr string, woke bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.HoldTimeout)
	defer cancel()
	for {
		w.mu.Lock()
		changed := w.changed
		w.mu.Unlock()
		if addr := readyAddress(w.slices, r); addr != "" {
			return addr, woke, nil
		}
		woke = true
		w.requestWake(ctx, r)
		select {
		case <-changed:
		case <-time.After(w.cfg.WakeInterval):
		case <-ctx.Done():
			return "", woke, fmt.Errorf("no ready apiserver within %s: %w", w.cfg.HoldTimeout, ctx.Err())
		}
	}
}

func (w *Waker) requestWake(ctx context.Context, r route) {
	w.mu.Lock()
	last, asked := w.lastWake[r.uid]
	due := !asked || w.now().Sub(last) >= w.cfg.WakeInterval
	if due {
		w.lastWake[r.uid] = w.now()
	}
	w.mu.Unlock()
	if !due {
		return
	}
	if err := w.wake(ctx, r.cluster, r.uid); err != nil {
		klog.FromContext(ctx).Error(err, "Asking for a wake", "nestedcluster", r.cluster.String())
		return
	}
	wakes.Inc()
}

// readyAddress is a ready endpoint of r's Service from the EndpointSlice
// controller's slices (never the waker's own), as host:port.
func readyAddress(slices cache.Indexer, r route) string {
	objs, err := slices.ByIndex(cache.NamespaceIndex, r.namespace)
	if err != nil {
		return ""
	}
	for _, obj := range objs {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelServiceName] != r.service || s.Labels[discoveryv1.LabelManagedBy] == provisioner.WakerManagedBy {
			continue
		}
		var port int32
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == r.portName && p.Port != nil {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if (e.Conditions.Ready == nil || *e.Conditions.Ready) && len(e.Addresses) > 0 {
				return net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(port)))
			}
		}
	}
	return ""
}

// splice copies both ways. The client finishing its side half-closes the
// apiserver's, which still answers; the apiserver finishing ends the
// connection. first runs at the first byte from up.
func splice(client, up net.Conn, first func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, client)
		closeWrite(up)
	}()
	dst := io.Writer(client)
	if first != nil {
		dst = &firstWrite{w: client, first: first}
	}
	_, _ = io.Copy(dst, up)
	_ = client.Close() // ends the other copy
	<-done
}

func closeWrite(c net.Conn) {
	if t, ok := c.(interface{ CloseWrite() error }); ok {
		_ = t.CloseWrite()
		return
	}
	_ = c.Close()
}

type firstWrite struct {
	w     io.Writer
	first func()
}

func (f *firstWrite) Write(p []byte) (int, error) {
	if f.first != nil && len(p) > 0 {
		f.first()
		f.first = nil
	}
	return f.w.Write(p)
}

// maxHeldBytes bounds what a held connection's client may send before its
// cluster is awake (a TLS ClientHello is well under it); past it the
// client waits, as on a slow server.
const maxHeldBytes = 64 << 10

// heldConn reads a held client's bytes aside (unparsed) to see it leave.
type heldConn struct {
	c    net.Conn
	done chan struct{} // the reader returned
	gone chan struct{} // the client closed or failed
	mu   sync.Mutex
	buf  []byte
}

func holdConn(c net.Conn, limit int) *heldConn {
	h := &heldConn{c: c, done: make(chan struct{}), gone: make(chan struct{})}
	go func() {
		defer close(h.done)
		tmp := make([]byte, 4096)
		for {
			h.mu.Lock()
			room := limit - len(h.buf)
			h.mu.Unlock()
			if room <= 0 {
				return // full: stop reading; the client waits
			}
			n, err := c.Read(tmp[:min(room, len(tmp))])
			h.mu.Lock()
			h.buf = append(h.buf, tmp[:n]...)
			h.mu.Unlock()
			if err != nil {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					close(h.gone)
				}
				return
			}
		}
	}()
	return h
}

// release stops the reader and returns what the client sent meanwhile;
// ok is false if the client left.
func (h *heldConn) release() ([]byte, bool) {
	_ = h.c.SetReadDeadline(time.Unix(1, 0)) // ends a blocked Read
	<-h.done
	_ = h.c.SetReadDeadline(time.Time{})
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf, !h.closed()
}

func (h *heldConn) closed() bool {
	select {
	case <-h.gone:
		return true
	default:
		return false
	}
}
