package waker

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/provisioner"
)

func managementNamespace(name, uid, cluster string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		provisioner.ManagedByLabel: provisioner.ManagedByValue, provisioner.OwnerUIDLabel: uid,
		provisioner.ClusterNamespaceLabel: "team", clusterLabel: cluster,
	}}}
}

func wakerSlice(ns string, port int32) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.WakerEndpointSliceName, Labels: map[string]string{
			discoveryv1.LabelServiceName: provisioner.APIServerName, discoveryv1.LabelManagedBy: provisioner.WakerManagedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port)}},
	}
}

// apiserverSlice is the EndpointSlice controller's slice of the Service,
// with one endpoint at addr.
func apiserverSlice(ns string, addr *net.TCPAddr, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.APIServerName + "-abcde", Labels: map[string]string{
			discoveryv1.LabelServiceName: provisioner.APIServerName, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr.IP.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(addr.Port))}},
	}
}

func indexer(objs ...any) cache.Indexer {
	i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		_ = i.Add(o)
	}
	return i
}

func TestRoutesOnlyFromCapnManagementNamespaces(t *testing.T) {
	workload := managementNamespace("wl", "uid-a", "a")
	workload.Labels[provisioner.WorkloadNamespaceLabel] = "true"
	foreign := managementNamespace("foreign", "uid-c", "c")
	delete(foreign.Labels, provisioner.ManagedByLabel)
	namespaces := indexer(managementNamespace("cp-a", "uid-a", "a"), managementNamespace("cp-b", "uid-b", "b"),
		managementNamespace("cp-d", "uid-d", "d"), managementNamespace("cp-e", "uid-e", "e"), workload, foreign)
	renamed := wakerSlice("cp-b", 40010)
	renamed.Name = "something-else"
	w := &Waker{namespaces: namespaces}
	routes := routesOf([]any{
		wakerSlice("cp-a", 40000),
		renamed,
		wakerSlice("wl", 40001),                              // a tenant's syncer writes in its workload namespace
		wakerSlice("foreign", 40002),                         // not capn's
		wakerSlice("cp-d", 40003), wakerSlice("cp-e", 40003), // one port, two clusters
		wakerSlice("missing", 40004),
	}, w.namespaceLabels)
	assert.Equal(t, map[int32]route{40000: {namespace: "cp-a", service: provisioner.APIServerName, portName: "https", uid: "uid-a",
		cluster: types.NamespacedName{Namespace: "team", Name: "a"}}}, routes)
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// echo is an apiserver stand-in: it writes back what it reads.
func echo(t *testing.T) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return l.Addr().(*net.TCPAddr)
}

type wakeLog struct {
	mu    sync.Mutex
	calls []types.UID
	then  func()
}

func (l *wakeLog) wake(_ context.Context, _ types.NamespacedName, uid types.UID) error {
	l.mu.Lock()
	l.calls = append(l.calls, uid)
	then := l.then
	l.mu.Unlock()
	if then != nil {
		go then()
	}
	return nil
}

func (l *wakeLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls)
}

type fixture struct {
	w          *Waker
	slices     cache.Indexer
	namespaces cache.Indexer
	log        *wakeLog
	ctx        context.Context
}

func newFixture(t *testing.T, cfg Config, clusters map[string]int32) *fixture {
	t.Helper()
	cfg.ListenHost = "127.0.0.1"
	f := &fixture{slices: indexer(), namespaces: indexer(), log: &wakeLog{}}
	for name, port := range clusters {
		require.NoError(t, f.namespaces.Add(managementNamespace("cp-"+name, "uid-"+name, name)))
		require.NoError(t, f.slices.Add(wakerSlice("cp-"+name, port)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.ctx = ctx
	f.w = New(cfg, f.slices, f.namespaces, f.log.wake)
	f.w.Changed(ctx)
	done := make(chan struct{})
	go func() { f.w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func dial(t *testing.T, port int32) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the waker closed c within d (a read ends
// in EOF) rather than holding it (the read times out).
func closedWithin(t *testing.T, c net.Conn, d time.Duration) bool {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	require.ErrorIs(t, err, io.EOF)
	return true
}

// A connection to a sleeping cluster is held, asks for one wake, and is
// passed on, bytes untouched, once the cluster's apiserver is ready.
func TestHeldConnectionPassesOnOnceReady(t *testing.T) {
	port := freePort(t)
	f := newFixture(t, DefaultConfig(), map[string]int32{"a": port})
	backend := echo(t)
	require.NoError(t, f.slices.Add(apiserverSlice("cp-a", backend, false))) // starting, not ready
	f.log.mu.Lock()
	f.log.then = func() {
		assert.NoError(t, f.slices.Update(apiserverSlice("cp-a", backend, true)))
		f.w.Changed(f.ctx)
	}
	f.log.mu.Unlock()
	c := dial(t, port)
	_, err := c.Write([]byte("\x16\x03\x01 hello"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	got := make([]byte, len("\x16\x03\x01 hello"))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "\x16\x03\x01 hello", string(got), "what the client sent while held reaches the apiserver")
	assert.Equal(t, 1, f.log.count(), "one wake asked for")

	// Awake: the next connection goes straight through, no wake.
	c2 := dial(t, port)
	_, err = c2.Write([]byte("again"))
	require.NoError(t, err)
	require.NoError(t, c2.SetReadDeadline(time.Now().Add(10*time.Second)))
	got = make([]byte, 5)
	_, err = io.ReadFull(c2, got)
	require.NoError(t, err)
	assert.Equal(t, 1, f.log.count())
}

// A cluster that does not wake in time has its connections closed at the
// bound, not held forever.
func TestHoldTimeoutCloses(t *testing.T) {
	port := freePort(t)
	cfg := DefaultConfig()
	cfg.HoldTimeout = 300 * time.Millisecond
	f := newFixture(t, cfg, map[string]int32{"a": port})
	c := dial(t, port)
	assert.True(t, closedWithin(t, c, 5*time.Second), "closed after the hold timeout")
	assert.Equal(t, 1, f.log.count())
}

// One cluster's flood takes its own share: past its cap its connections
// are closed at once, and another cluster is still held and served;
// past the total cap every cluster is refused.
func TestCapsPerClusterAndTotal(t *testing.T) {
	pa, pb := freePort(t), freePort(t)
	cfg := DefaultConfig()
	cfg.MaxPerCluster, cfg.MaxTotal = 2, 3
	f := newFixture(t, cfg, map[string]int32{"a": pa, "b": pb})
	flood := []net.Conn{dial(t, pa), dial(t, pa)}
	for _, c := range flood {
		assert.False(t, closedWithin(t, c, 300*time.Millisecond), "within a's cap: held")
	}
	assert.True(t, closedWithin(t, dial(t, pa), 5*time.Second), "past a's cap: closed at once")
	b := dial(t, pb)
	assert.False(t, closedWithin(t, b, 300*time.Millisecond), "b is held while a floods")
	assert.True(t, closedWithin(t, dial(t, pb), 5*time.Second), "past the total cap: closed at once")

	// a's slots free up as its connections end.
	flood[0].Close()
	require.Eventually(t, func() bool {
		f.w.mu.Lock()
		defer f.w.mu.Unlock()
		return f.w.open["uid-a"] == 1
	}, 5*time.Second, 10*time.Millisecond)
	// b's apiserver comes up: b is passed on although a still floods.
	backend := echo(t)
	require.NoError(t, f.slices.Add(apiserverSlice("cp-b", backend, true)))
	f.w.Changed(f.ctx)
	_, err := b.Write([]byte("b"))
	require.NoError(t, err)
	require.NoError(t, b.SetReadDeadline(time.Now().Add(10*time.Second)))
	got := make([]byte, 1)
	_, err = io.ReadFull(b, got)
	require.NoError(t, err)
}

// A route that goes away (the cluster is awake) keeps its port served for
// Linger, passing connections on, since kube-proxy follows a moment later;
// then its listener stops.
func TestRouteLingersThenStops(t *testing.T) {
	port := freePort(t)
	cfg := DefaultConfig()
	cfg.Linger = time.Second
	f := newFixture(t, cfg, map[string]int32{"a": port})
	backend := echo(t)
	require.NoError(t, f.slices.Add(apiserverSlice("cp-a", backend, true)))
	require.NoError(t, f.slices.Delete(wakerSlice("cp-a", port)))
	f.w.Changed(f.ctx)

	c := dial(t, port)
	_, err := c.Write([]byte("late"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	got := make([]byte, 4)
	_, err = io.ReadFull(c, got)
	require.NoError(t, err, "a connection kube-proxy still sends is passed on")
	assert.Zero(t, f.log.count(), "an awake cluster is not asked to wake")

	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 10*time.Second, 50*time.Millisecond, "nothing listens once the linger is over")
}
