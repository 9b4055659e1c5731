//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
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
	window := time.Duration(intEnv(t, "CAPN_FAULTS_WINDOW_SECONDS", 90)) * time.Second
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
	// fault strikes (offsets into the window, sorted; one of them is the
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
	offsets := make([]time.Duration, kills+1)
	for i := range offsets {
		offsets[i] = time.Duration(rng.Int64N(int64(window)))
	}
	slices.Sort(offsets)
	restartAt := rng.IntN(len(offsets))

	// Every request is retried until it succeeds, as a client would while
	// capn is away; failed attempts are counted for the note.
	var failed atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	retry := func(what string, fn func() error) {
		framework.Eventually(t, 3*time.Minute, what, func() (bool, string) {
			err := fn()
			if err != nil {
				failed.Add(1)
				return false, err.Error()
			}
			return true, ""
		})
	}
	var phase atomic.Value
	phase.Store("create")

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

	// The faults, on their own clock.
	start := time.Now()
	var faultLog []string
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		for i, at := range offsets {
			time.Sleep(time.Until(start.Add(at)))
			if i == restartAt {
				away := k.c.RestartAPIServer(t)
				faultLog = append(faultLog, fmt.Sprintf("%s: management kube-apiserver restarted during %s (away %s)", at.Round(time.Second), phase.Load(), away.Round(time.Millisecond)))
				continue
			}
			killed := time.Now()
			k.capn.Process = k.capn.Process.Restart(t, true)
			if _, err := k.capn.WaitHealthy(k.capn.HTTPClient(nil), k.capn.URL+"/readyz", 3*time.Minute); err != nil {
				t.Errorf("capn-apiserver after kill %d: %v", i, err)
				return
			}
			faultLog = append(faultLog, fmt.Sprintf("%s: capn-apiserver SIGKILLed during %s, serving again %s later", at.Round(time.Second), phase.Load(), time.Since(killed).Round(time.Millisecond)))
		}
	}()

	// The operations: create all, then scale, upgrade and delete, each
	// wave once the previous one is written (not converged: the faults
	// strike while capn works).
	older, newer := "v1.36.3", "v1.37.2"
	var wg sync.WaitGroup
	for _, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Name: p.name}}
			nc.Spec.Version = older
			nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneNone
			retry("create "+p.name, func() error {
				got, err := ncs.Create(ctx, nc, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					got, err = ncs.Get(ctx, p.name, metav1.GetOptions{})
				}
				if err == nil {
					p.uid = got.UID
				}
				return err
			})
		}()
	}
	wg.Wait()
	// Let provisioning get under way before the spec changes.
	framework.Eventually(t, 5*time.Minute, "half the clusters available", func() (bool, string) {
		list, err := ncs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		avail := 0
		for i := range list.Items {
			if allAvailable(&list.Items[i]) {
				avail++
			}
		}
		return avail >= n/2, fmt.Sprintf("%d/%d available", avail, n)
	})
	phase.Store("scale and upgrade")
	for _, p := range plans {
		if !p.scale && !p.upgrade {
			continue
		}
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
	}
	phase.Store("delete")
	for _, p := range plans {
		if p.deleted {
			retry("delete "+p.name, func() error {
				err := ncs.Delete(ctx, p.name, metav1.DeleteOptions{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			})
		}
	}
	phase.Store("convergence")
	<-faultsDone
	lastFault := time.Now()

	// Converged: every check at once, polled with a deadline.
	framework.Eventually(t, 10*time.Minute, "every cluster converged after the last fault", func() (bool, string) {
		problems := converged(ctx, k, ncs, plans, older, newer)
		return len(problems) == 0, strings.Join(problems, "; ")
	})
	took := time.Since(lastFault)
	close(stopSampling)
	<-sampled
	assert.Empty(t, lies, "a status claimed Ready")
	for _, l := range faultLog {
		t.Logf("numbers: fault matrix: %s", l)
	}
	t.Logf("numbers: fault matrix: converged %s after the last fault; %d client requests failed while capn was away and succeeded on retry; 0 lost, 0 orphaned, 0 duplicates",
		took.Round(time.Millisecond), failed.Load())
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
