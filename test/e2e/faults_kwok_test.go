//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/test/framework"
)

// TestFaultMatrix is issue 14's fault matrix on kwok (no real node):
// capn-apiserver, provisioner on, is killed with SIGKILL at seeded points
// while NestedClusters are created, scaled, upgraded and deleted, and the
// management kube-apiserver is restarted once while they provision. After
// the last fault every cluster must converge: none lost (same UIDs), each
// at its spec (version, replicas, every component available, the upgrade
// finished), the deleted ones gone with nothing left (0 orphaned
// namespaces), one workload per component and no extra pods (0
// duplicates), and no status ever claiming Ready (kwok runs no apiserver,
// so capn can never bootstrap a tenant: Ready would be a lie).
//
// The defaults are the smoke `make test` runs; `make test-faults` runs the
// full matrix (CAPN_FAULTS_N=50 CAPN_FAULTS_KILLS=20). CAPN_FAULTS_SEED
// replays a run: the kill points and the operations follow from it.
func TestFaultMatrix(t *testing.T) {
	n := intEnv(t, "CAPN_FAULTS_N", 8)
	kills := intEnv(t, "CAPN_FAULTS_KILLS", 4)
	seed := uint64(intEnv(t, "CAPN_FAULTS_SEED", 14))
	// The operations are spread over the window; the faults follow one
	// another at seeded gaps of 1–10 s after the previous one is over (a
	// killed capn-apiserver serves again only once its embedded-etcd Lease
	// expires, about 15 s), so that they land at every stage of the work.
	window := time.Duration(intEnv(t, "CAPN_FAULTS_WINDOW_SECONDS", 25*(kills+1))) * time.Second
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("numbers: fault matrix: seed %d, %d NestedClusters, %d capn kills and 1 management kube-apiserver restart over %s", seed, n, kills, window)

	k := startKwokCapn(t, (8*n)/kwokNodePods+2)
	cfg, err := clientcmd.BuildConfigFromFlags("", k.c.AdminKubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 100, 200
	client, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	ncs := client.CapnV1alpha1().NestedClusters("default")

	// The plan, from the seed: what happens to each cluster, and when each
	// fault strikes (gaps after the previous fault is over; one of them is the
	// management apiserver's restart).
	plans := make([]*faultPlan, n)
	for i := range plans {
		p := &faultPlan{name: fmt.Sprintf("f%03d", i)}
		switch r := rng.IntN(10); {
		case r < 2:
			p.deleted = true
		case r < 5:
			p.upgrade = true
		case r < 8:
			p.scale = true
		default:
			p.scale, p.upgrade = true, true
		}
		plans[i] = p
	}
	gaps := make([]time.Duration, kills+1)
	for i := range gaps {
		gaps[i] = time.Second + time.Duration(rng.Int64N(int64(9*time.Second)))
	}
	restartAt := rng.IntN(len(gaps))

	// Every request is retried until it succeeds, as a client would while
	// capn is away; failed attempts are counted for the note.
	var (
		failed  atomic.Int64
		mu      sync.Mutex
		reasons = map[string]int{} // why requests failed, by HTTP reason
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// retry runs in the operations' goroutines: it must not fail the test
	// from there, so a request that never succeeds is an error, reported.
	retry := func(what string, fn func() error) {
		deadline := time.Now().Add(5 * time.Minute)
		for {
			err := fn()
			if err == nil {
				return
			}
			failed.Add(1)
			mu.Lock()
			reasons[string(apierrors.ReasonForError(err))]++
			mu.Unlock()
			if time.Now().After(deadline) {
				t.Errorf("%s: still failing after 5m: %v", what, err)
				return
			}
			time.Sleep(200 * time.Millisecond) // polling a request with its own deadline
		}
	}
	var done atomic.Int64
	total := 0
	for _, p := range plans {
		total++ // the create
		if p.scale || p.upgrade || p.deleted {
			total++ // one change or the delete
		}
	}
	phase := func() string { return fmt.Sprintf("%d/%d operations done", done.Load(), total) }

	// Honest status throughout: sampled every 2 s until the end.
	var lies []string
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(2 * time.Second):
			}
			list, err := ncs.List(ctx, metav1.ListOptions{})
			if err != nil {
				continue // capn is down: nothing to read
			}
			for _, nc := range list.Items {
				if meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionReady) || nc.Status.Phase == v1alpha1.PhaseReady {
					lies = append(lies, nc.Name+" Ready with no tenant apiserver to bootstrap")
				}
			}
		}
	}()

	// throughAggregator waits until a NestedClusters list goes through the
	// aggregator again: the next fault waits for it, so that operations go
	// on between faults. (The aggregator marks the APIService unavailable
	// when capn dies and checks it again on its own schedule; until then
	// it answers 503 for a capn that already serves.)
	//
	// It also plays capn's kubelet: a capn-apiserver that cannot renew its
	// embedded-etcd Lease for 10 s (the management apiserver is away)
	// exits rather than risk a second etcd, and in a pod the kubelet
	// starts it again. That is recorded, not counted as a fault of ours.
	var exits []string
	throughAggregator := func() time.Duration {
		began := time.Now()
		for time.Since(began) < 3*time.Minute {
			if exited, err := k.capn.Exited(); exited {
				exits = append(exits, fmt.Sprintf("capn-apiserver exited (%v) %s into a fault and was started again, as its kubelet would", err, time.Since(began).Round(time.Second)))
				k.capn.Process = k.capn.Process.Restart(t, true)
			}
			if _, err := ncs.List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond) // polling with its own deadline
		}
		return time.Since(began)
	}

	// The faults, on their own clock.
	start := time.Now()
	var faultLog []string
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		for i, gap := range gaps {
			time.Sleep(gap)
			at := time.Since(start)
			if i == restartAt {
				during := phase()
				began := time.Now()
				away := k.c.RestartAPIServer(t)
				throughAggregator()
				faultLog = append(faultLog, fmt.Sprintf("%s: management kube-apiserver restarted during %s; ready again after %s, capn answering through it after %s",
					at.Round(time.Second), during, away.Round(time.Millisecond), time.Since(began).Round(time.Millisecond)))
				continue
			}
			during := phase()
			killed := time.Now()
			k.capn.Process = k.capn.Process.Restart(t, true)
			ready, err := k.capn.WaitHealthy(k.capn.HTTPClient(nil), k.capn.URL+"/readyz", 3*time.Minute)
			if err != nil {
				t.Errorf("capn-apiserver after kill %d: %v", i, err)
				return
			}
			throughAggregator()
			faultLog = append(faultLog, fmt.Sprintf("%s: capn-apiserver SIGKILLed during %s; ready again after %s, answering through the aggregator after %s",
				at.Round(time.Second), during, ready.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond)))
		}
	}()

	// The operations, on the same clock as the faults, so that faults
	// strike between and during them: each cluster is created in the
	// first third of the window, then changed (scaled, upgraded) or
	// deleted at a seeded time after its create, each cluster in its own
	// goroutine, as independent clients would. A change may reach a
	// cluster that is not available yet; that is part of the matrix.
	older, newer := "v1.36.3", "v1.37.2"
	var wg sync.WaitGroup
	for _, p := range plans {
		created := time.Duration(rng.Int64N(int64(window / 3)))
		later := created + time.Duration(rng.Int64N(int64(window/2)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(created)))
			nc := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Name: p.name}}
			nc.Spec.Version = older
			nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneNone
			retry("create "+p.name, func() error {
				got, err := ncs.Create(ctx, nc, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) { // the create went through before capn died
					got, err = ncs.Get(ctx, p.name, metav1.GetOptions{})
				}
				if err == nil {
					p.uid = got.UID
				}
				return err
			})
			done.Add(1)
			time.Sleep(time.Until(start.Add(later)))
			switch {
			case p.deleted:
				retry("delete "+p.name, func() error {
					err := ncs.Delete(ctx, p.name, metav1.DeleteOptions{})
					if apierrors.IsNotFound(err) {
						return nil
					}
					return err
				})
				done.Add(1)
			case p.scale || p.upgrade:
				retry("change "+p.name, func() error {
					nc, err := ncs.Get(ctx, p.name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if p.scale {
						nc.Spec.APIServer.Replicas = ptr.To[int32](2)
					}
					if p.upgrade {
						nc.Spec.Version = newer
					}
					_, err = ncs.Update(ctx, nc, metav1.UpdateOptions{})
					return err
				})
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	<-faultsDone
	lastFault := time.Now()

	// Converged: every check at once, polled with a deadline.
	framework.Eventually(t, 10*time.Minute, "every cluster converged after the last fault", func() (bool, string) {
		problems := converged(ctx, k, ncs, plans, older, newer)
		// A management component that died is the answer to "why not".
		problems = append(k.c.ExitedProcesses(), problems...)
		return len(problems) == 0, strings.Join(problems, "; ")
	})
	took := time.Since(lastFault)
	close(stopSampling)
	<-sampled
	assert.Empty(t, lies, "a status claimed Ready")
	for _, l := range faultLog {
		t.Logf("numbers: fault matrix: %s", l)
	}
	for _, l := range exits {
		t.Logf("numbers: fault matrix: %s", l)
	}
	t.Logf("numbers: fault matrix: converged %s after the last fault; %d client requests failed while capn or the management apiserver was away (by reason: %v) and succeeded on retry; 0 lost, 0 orphaned, 0 duplicates",
		took.Round(time.Millisecond), failed.Load(), reasons)
}

// faultPlan is what the matrix does to one cluster.
type faultPlan struct {
	name                    string
	scale, upgrade, deleted bool
	// uid is the cluster's UID at create: the same cluster must be there
	// at the end, not a re-created one.
	uid types.UID
}

// converged lists what is not yet as the plans say; empty when all is.
func converged(ctx context.Context, k *kwokCapn, ncs versionedNCs, plans []*faultPlan, older, newer string) []string {
	var problems []string
	list, err := ncs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"listing: " + err.Error()}
	}
	live := map[string]*v1alpha1.NestedCluster{}
	uids := map[string]bool{}
	for i := range list.Items {
		live[list.Items[i].Name] = &list.Items[i]
		uids[string(list.Items[i].UID)] = true
	}
	for _, p := range plans {
		nc := live[p.name]
		if p.deleted {
			if nc != nil {
				problems = append(problems, p.name+" not deleted yet")
			}
			continue
		}
		if nc == nil {
			problems = append(problems, p.name+" LOST")
			continue
		}
		if nc.UID != p.uid {
			problems = append(problems, fmt.Sprintf("%s has UID %s, created as %s", p.name, nc.UID, p.uid))
		}
		version, replicas := older, int32(1)
		if p.upgrade {
			version = newer
		}
		if p.scale {
			replicas = 2
		}
		st := nc.Status
		switch {
		case !allAvailable(nc):
			problems = append(problems, p.name+" not all components available")
		case st.ObservedGeneration != nc.Generation:
			problems = append(problems, p.name+" status not at its generation")
		case st.Upgrade != nil && st.Upgrade.FinishedAt == nil:
			problems = append(problems, p.name+" upgrade not finished")
		case st.APIServer.Version != version || st.ControllerManager.Version != version || st.Scheduler.Version != version:
			problems = append(problems, fmt.Sprintf("%s at %s/%s/%s, want %s", p.name, st.APIServer.Version, st.ControllerManager.Version, st.Scheduler.Version, version))
		case st.APIServer.ReadyReplicas != replicas || st.APIServer.Replicas != replicas:
			problems = append(problems, fmt.Sprintf("%s apiserver %d/%d ready, want %d", p.name, st.APIServer.ReadyReplicas, st.APIServer.Replicas, replicas))
		}
		if len(problems) > 0 {
			continue
		}
		// One workload per component, and exactly its pods.
		ns := provisioner.ManagementNamespace(nc)
		deps, err := k.c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return append(problems, err.Error())
		}
		sts, err := k.c.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return append(problems, err.Error())
		}
		pods, err := k.c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return append(problems, err.Error())
		}
		workloads := map[string]int{}
		for _, d := range deps.Items {
			workloads[d.Labels[v1alpha1.ComponentLabel]]++
		}
		for _, s := range sts.Items {
			workloads[s.Labels[v1alpha1.ComponentLabel]]++
		}
		want := map[string]int{v1alpha1.ComponentEtcd: 1, v1alpha1.ComponentAPIServer: 1, v1alpha1.ComponentControllerManager: 1, v1alpha1.ComponentScheduler: 1}
		if fmt.Sprint(workloads) != fmt.Sprint(want) {
			problems = append(problems, fmt.Sprintf("%s workloads %v, want one per component", p.name, workloads))
		}
		podsOf := map[string]int{}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp == nil {
				podsOf[pod.Labels[v1alpha1.ComponentLabel]]++
			}
		}
		wantPods := map[string]int{v1alpha1.ComponentEtcd: 1, v1alpha1.ComponentAPIServer: int(replicas), v1alpha1.ComponentControllerManager: 1, v1alpha1.ComponentScheduler: 1}
		if fmt.Sprint(podsOf) != fmt.Sprint(wantPods) {
			problems = append(problems, fmt.Sprintf("%s pods %v, want %v", p.name, podsOf, wantPods))
		}
	}
	// Orphans: every namespace capn manages belongs to a live cluster.
	nss, err := k.c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: provisioner.ManagedByLabel + "=" + provisioner.ManagedByValue})
	if err != nil {
		return append(problems, err.Error())
	}
	for _, ns := range nss.Items {
		if !uids[ns.Labels[provisioner.OwnerUIDLabel]] {
			problems = append(problems, "orphaned namespace "+ns.Name)
		}
	}
	return problems
}

// versionedNCs is the one call converged makes of the NestedClusters client.
type versionedNCs interface {
	List(context.Context, metav1.ListOptions) (*v1alpha1.NestedClusterList, error)
}

func intEnv(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}
