//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	capnclient "capn.dev/capn/pkg/generated/clientset/versioned/typed/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/controller"
	"capn.dev/capn/test/framework"
)

// TestCapnHAOnNode deploys capn from the HA overlay (two capn-apiserver
// replicas on a three-member TLS etcd) onto a real node, and runs a client
// loop of nestedclusters GET, LIST and UPDATE through the aggregator while,
// in each round, the provisioning leader's pod is evicted (as a drain
// does) and then the etcd leader's pod; a second eviction right after each
// must be refused by the PodDisruptionBudgets. It requires no failed read, every write to succeed once
// retried (conflicts and server errors alike, as a client does), the
// provisioner's Lease to move to the other replica, the new leader to
// provision, and no NestedCluster lost.
//
// CAPN_HA_ROUNDS is the number of rounds: 1 in `make test` (the smoke), 3
// in `make test-ha`.
func TestCapnHAOnNode(t *testing.T) {
	rounds := intEnv(t, "CAPN_HA_ROUNDS", 1)
	kubectl, images := env(t, "KUBECTL"), env(t, "CAPN_IMAGES")
	if _, err := os.Stat(images); err != nil {
		t.Fatalf("CAPN_IMAGES: %v (build it with `make images`)", err)
	}
	t.Setenv("KUBECACHEDIR", t.TempDir())
	c := framework.StartCluster(t, clusterOptions(t))
	node := c.StartNode(t, framework.NodeOptions{Kubelet: env(t, "KUBELET"), KubeProxy: env(t, "KUBE_PROXY"), Images: []string{images}})
	admin := framework.Kubectl{Bin: kubectl, Kubeconfig: c.AdminKubeconfig}
	dns := framework.DeployManagementDNS(t, c, admin)
	deployed := framework.DeployCapnHA(t, c, node, admin, repoFile(t, ""), dns)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	require.NoError(t, err)
	cfg.Timeout = 30 * time.Second
	// client-go's default 5 QPS would make the loop too slow to notice a
	// short outage.
	cfg.QPS, cfg.Burst = 500, 500
	raw := &statusCounter{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { raw.next = rt; return raw })
	client, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	ncs := client.CapnV1alpha1().NestedClusters("default")

	// Tenants asleep from the start: the provisioner acts on them (their
	// namespace and etcd) at the cost of one etcd pod each.
	uids := map[string]string{}
	createAsleep := func(name string) {
		t.Helper()
		framework.Eventually(t, time.Minute, "creating "+name, func() (bool, string) {
			nc, err := ncs.Create(ctx, &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1alpha1.NestedClusterSpec{Sleep: v1alpha1.SleepSpec{Asleep: true}}}, metav1.CreateOptions{})
			if err == nil {
				uids[name] = string(nc.UID)
			}
			return err == nil, fmt.Sprint(err)
		})
	}
	waitSleeping := func(name string) {
		t.Helper()
		framework.Eventually(t, 3*time.Minute, name+" provisioned (phase Sleeping)", func() (bool, string) {
			nc, err := ncs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return nc.Status.Phase == v1alpha1.PhaseSleeping, string(nc.Status.Phase)
		})
	}
	for _, name := range []string{"ha-a", "ha-b"} {
		createAsleep(name)
	}
	for _, name := range []string{"ha-a", "ha-b"} {
		waitSleeping(name)
	}

	// The client loop: CAPN_HA_READERS readers and one writer.
	loop := &haLoop{ncs: ncs, name: "ha-a"}
	loopCtx, stopLoop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { loop.run(loopCtx, intEnv(t, "CAPN_HA_READERS", 2)) })
	raw.reset()

	var failovers, etcdRecoveries, capnRecoveries []time.Duration
	for r := range rounds {
		// The provisioning leader's pod, evicted as a drain does (SIGTERM,
		// then --shutdown-delay-duration of serving); the other replica,
		// right after, is refused by the PodDisruptionBudget.
		leader := provisionerLeader(ctx, c)
		evicted := evictPod(ctx, t, c, leader)
		refuseEviction(ctx, t, c, framework.CapnPodSelector, leader)
		var next string
		framework.Eventually(t, time.Minute, "the provisioner's Lease held by another replica", func() (bool, string) {
			next = provisionerLeader(ctx, c)
			return next != "" && next != leader, "holder " + next
		})
		failovers = append(failovers, time.Since(evicted))
		waitReadyPods(ctx, t, c, framework.CapnPodSelector, 2, leader)
		capnRecoveries = append(capnRecoveries, time.Since(evicted))
		// The new leader provisions.
		name := fmt.Sprintf("ha-round-%d", r)
		createAsleep(name)
		waitSleeping(name)

		// The etcd leader's pod, the worst member to lose; a second
		// member, right after, is refused: that would lose the quorum.
		member := etcdLeader(ctx, t, c)
		evicted = evictPod(ctx, t, c, member)
		refuseEviction(ctx, t, c, framework.CapnEtcdPodSelector, member)
		waitReadyPods(ctx, t, c, framework.CapnEtcdPodSelector, framework.CapnEtcdMembers, "")
		etcdRecoveries = append(etcdRecoveries, time.Since(evicted))
		t.Logf("round %d: evicted capn pod %s (provisioner leader; %s took over after %s), etcd leader %s (3 members Ready again after %s); a second eviction of each was refused",
			r, leader, next, failovers[r].Round(time.Millisecond), member, etcdRecoveries[r].Round(time.Millisecond))
	}
	// Some more writes on the recovered deployment.
	settled := loop.writes.Load() + 10
	framework.Eventually(t, 2*time.Minute, "10 more writes", func() (bool, string) {
		return loop.writes.Load() >= settled, fmt.Sprint(loop.writes.Load())
	})
	stopLoop()
	wg.Wait()

	for name, uid := range uids {
		nc, err := ncs.Get(ctx, name, metav1.GetOptions{})
		if assert.NoError(t, err, "NestedCluster %s lost", name) {
			assert.Equal(t, uid, string(nc.UID), "NestedCluster %s replaced", name)
		}
	}
	t.Logf("numbers: HA: %d rounds | reads %d (GET %d, LIST %d), failed %d | writes %d, all succeeded; %d attempts failed and were retried (%d conflicts, %d other: %s) | underneath client-go: %s | provisioner failover %v | capn replicas Ready again %v | etcd members Ready again %v | deployed in %s",
		rounds, loop.gets.Load()+loop.lists.Load(), loop.gets.Load(), loop.lists.Load(), loop.readFailures.Load(),
		loop.writes.Load(), loop.writeConflicts.Load()+loop.writeErrors.Load(), loop.writeConflicts.Load(), loop.writeErrors.Load(), loop.errorSummary(),
		raw.summary(), roundAll(failovers), roundAll(capnRecoveries), roundAll(etcdRecoveries), deployed.Round(time.Millisecond))
	assert.Zero(t, loop.readFailures.Load(), "failed reads: %s", loop.errorSummary())
	assert.Zero(t, loop.writesGivenUp.Load(), "writes that never succeeded: %s", loop.errorSummary())
	assert.Greater(t, loop.writes.Load(), int64(rounds*10), "the loop wrote too little to show anything")
}

// haLoop is a client of nestedclusters through the aggregator: GETs and
// LISTs, which must not fail, and UPDATEs of an annotation, each retried on
// any error for up to a minute.
type haLoop struct {
	ncs  capnclient.NestedClusterInterface
	name string

	gets, lists, readFailures                          atomic.Int64
	writes, writeConflicts, writeErrors, writesGivenUp atomic.Int64
	mu                                                 sync.Mutex
	errs                                               map[string]int
}

// run keeps readers GETting and LISTing without pause, so that a window
// in which a replica refuses requests is hit, and one writer updating.
func (l *haLoop) run(ctx context.Context, readers int) {
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := l.ncs.Get(ctx, l.name, metav1.GetOptions{}); ctx.Err() == nil {
					l.gets.Add(1)
					l.read(err)
				}
				if _, err := l.ncs.List(ctx, metav1.ListOptions{}); ctx.Err() == nil {
					l.lists.Add(1)
					l.read(err)
				}
			}
		})
	}
	for i := 0; ctx.Err() == nil; i++ {
		l.write(ctx, i)
	}
	wg.Wait()
}

func (l *haLoop) read(err error) {
	if err != nil {
		l.readFailures.Add(1)
		l.note("read: " + err.Error())
	}
}

func (l *haLoop) write(ctx context.Context, i int) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		nc, err := l.ncs.Get(ctx, l.name, metav1.GetOptions{})
		if err == nil {
			if nc.Annotations == nil {
				nc.Annotations = map[string]string{}
			}
			nc.Annotations["ha.e2e.capn.dev/iteration"] = fmt.Sprint(i)
			_, err = l.ncs.Update(ctx, nc, metav1.UpdateOptions{})
		}
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			l.writes.Add(1)
			return
		case apierrors.IsConflict(err):
			l.writeConflicts.Add(1)
		default:
			l.writeErrors.Add(1)
			l.note("write: " + err.Error())
		}
	}
	l.writesGivenUp.Add(1)
}

// note keeps a count per error text (the first 120 characters).
func (l *haLoop) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs == nil {
		l.errs = map[string]int{}
	}
	l.errs[s[:min(len(s), 120)]]++
}

func (l *haLoop) errorSummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) == 0 {
		return "none"
	}
	var parts []string
	for s, n := range l.errs {
		parts = append(parts, fmt.Sprintf("%d× %q", n, s))
	}
	return strings.Join(parts, "; ")
}

// statusCounter counts what client-go's transparent retries hide: every
// HTTP response by status class, and transport errors.
type statusCounter struct {
	next                             http.RoundTripper
	ok, clientErr, serverErr, errors atomic.Int64
	mu                               sync.Mutex
	firstErrors                      []string
}

func (s *statusCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	switch {
	case err != nil && req.Context().Err() != nil:
		// The loop's own requests, cancelled when it stops.
	case err != nil:
		s.errors.Add(1)
		s.mu.Lock()
		if len(s.firstErrors) < 5 {
			s.firstErrors = append(s.firstErrors, fmt.Sprintf("%s %s: %v", req.Method, req.URL.Path, err))
		}
		s.mu.Unlock()
	case resp.StatusCode >= 500:
		s.serverErr.Add(1)
	case resp.StatusCode >= 400:
		s.clientErr.Add(1)
	default:
		s.ok.Add(1)
	}
	return resp, err
}

func (s *statusCounter) reset() {
	s.mu.Lock()
	s.firstErrors = nil
	s.mu.Unlock()
	s.ok.Store(0)
	s.clientErr.Store(0)
	s.serverErr.Store(0)
	s.errors.Store(0)
}

func (s *statusCounter) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d responses 2xx, %d 4xx, %d 5xx, %d transport errors %q",
		s.ok.Load(), s.clientErr.Load(), s.serverErr.Load(), s.errors.Load(), s.firstErrors)
}

// evictPod evicts the pod as kubectl drain does, retrying while its
// PodDisruptionBudget does not allow it yet (after the previous round, the
// budget's status catches up asynchronously), and returns when it was
// evicted.
func evictPod(ctx context.Context, t *testing.T, c *framework.Cluster, name string) time.Time {
	t.Helper()
	var at time.Time
	framework.Eventually(t, time.Minute, "evicting "+name, func() (bool, string) {
		err := c.Client.CoreV1().Pods(capnNS).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: capnNS, Name: name}})
		at = time.Now()
		return err == nil, fmt.Sprint(err)
	})
	return at
}

// refuseEviction requires the eviction of another Ready pod matching
// selector, right after gone's, to be refused (429) by the budget.
func refuseEviction(ctx context.Context, t *testing.T, c *framework.Cluster, selector, gone string) {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(capnNS).List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	for _, p := range pods.Items {
		// A pod not yet ready may go while the budget is healthy
		// (unhealthyPodEvictionPolicy IfHealthyBudget): try a Ready one.
		if p.Name == gone || p.DeletionTimestamp != nil || !podReady(&p) {
			continue
		}
		err := c.Client.CoreV1().Pods(capnNS).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: capnNS, Name: p.Name}})
		require.Truef(t, apierrors.IsTooManyRequests(err), "evicting %s right after %s: got %v, want 429 from its PodDisruptionBudget", p.Name, gone, err)
		return
	}
	t.Fatalf("no other pod %s to try to evict after %s", selector, gone)
}

// provisionerLeader is the pod whose capn-apiserver holds the provisioner's
// Lease (its identity is "<hostname>_<uuid>"), or "".
func provisionerLeader(ctx context.Context, c *framework.Cluster) string {
	lease, err := c.Client.CoordinationV1().Leases(capnNS).Get(ctx, controller.LeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return pod
}

// etcdLeader is the member pod whose etcd reports itself leader on its
// metrics port (plain HTTP, as the overlay's probes use it).
func etcdLeader(ctx context.Context, t *testing.T, c *framework.Cluster) string {
	t.Helper()
	var leader string
	framework.Eventually(t, time.Minute, "an etcd leader", func() (bool, string) {
		pods, err := c.Client.CoreV1().Pods(capnNS).List(ctx, metav1.ListOptions{LabelSelector: framework.CapnEtcdPodSelector})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, p := range pods.Items {
			is, err := etcdIsLeader(ctx, p.Status.PodIP)
			seen = append(seen, fmt.Sprintf("%s: %v %v", p.Name, is, err))
			if is {
				leader = p.Name
				return true, ""
			}
		}
		return false, strings.Join(seen, ", ")
	})
	return leader
}

func etcdIsLeader(ctx context.Context, ip string) (bool, error) {
	if ip == "" {
		return false, fmt.Errorf("no pod IP")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, "2381")+"/metrics", nil)
	if err != nil {
		return false, err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_server_is_leader "); ok {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, fmt.Errorf("no etcd_server_is_leader in the metrics (%v)", sc.Err())
}

// waitReadyPods waits for want Ready pods matching selector, none being
// deleted and none named gone.
func waitReadyPods(ctx context.Context, t *testing.T, c *framework.Cluster, selector string, want int, gone string) {
	t.Helper()
	framework.Eventually(t, 5*time.Minute, fmt.Sprintf("%d Ready pods %s", want, selector), func() (bool, string) {
		pods, err := c.Client.CoreV1().Pods(capnNS).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		ready, all := 0, 0
		var seen []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Name == gone {
				seen = append(seen, p.Name+": terminating")
				all = -1000 // not settled while any pod is going away
				continue
			}
			all++
			if podReady(&p) {
				ready++
			}
			seen = append(seen, p.Name+": "+string(p.Status.Phase))
		}
		return ready == want && all == want, strings.Join(seen, ", ")
	})
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Millisecond)
	}
	return out
}
