//go:build e2e

package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/test/framework"
)

// Names of the benchmark's objects.
const (
	dpCluster      = "bench"
	dpTenantNS     = "bench"        // in the tenant
	dpDirectNS     = "bench-direct" // in the management cluster: the baseline
	dpRunLabel     = "capn.dev/bench-run"
	dpSyncerPort   = "10270"
	dpPauseImage   = "registry.k8s.io/pause:3.10"
	dpFloorSamples = 30
)

// BenchmarkDataPlane is `make bench-dataplane`, the numbers of issue 11. It
// starts a management control plane with one real node, deploys capn as a
// pod, creates one Shared NestedCluster (the default mode), and measures:
//
//   - create of a Deployment of CAPN_BENCH_DATAPLANE_REPLICAS (default 10)
//     pause pods → every pod Running and Ready, in the tenant against the
//     same Deployment created directly in a management namespace, taking
//     turns, CAPN_BENCH_DATAPLANE_RUNS times (default 3), then once with
//     CAPN_BENCH_DATAPLANE_PODS (default 50) each;
//   - status propagation: from the benchmark's host pod watch seeing a host
//     pod Ready to its tenant pod watch seeing the tenant pod Ready, both
//     timestamps taken at receipt in this process, over every tenant pod of
//     the above; the floor it is compared with is one write to the tenant
//     apiserver and its watch event (a ConfigMap patch), which is the least
//     the syncer's status update can cost;
//   - capn-syncer's RSS (through the node: its container's PID) idle, and
//     with the PODS tenant pods running (and its peak, VmHWM);
//   - management API requests, from capn-syncer's own
//     capn_syncer_management_requests_total: per tenant pod created, and
//     per minute over CAPN_BENCH_DATAPLANE_STEADY (default 2m) of steady
//     state, idle and with the PODS pods.
//
// It prints a table and writes CAPN_BENCH_OUT/dataplane.csv (the summary),
// dataplane-runs.csv (a row per Deployment run) and dataplane-latency.csv
// (a row per propagation sample). CAPN_BENCH_DATAPLANE=1 must be set: it
// takes minutes and the real node, so `go test -bench .` alone skips it.
func BenchmarkDataPlane(b *testing.B) {
	if os.Getenv("CAPN_BENCH_DATAPLANE") != "1" {
		b.Skip("CAPN_BENCH_DATAPLANE=1 runs it (make bench-dataplane)")
	}
	o := dataPlaneBenchOptions{
		runs:     envInt(b, "CAPN_BENCH_DATAPLANE_RUNS", 3),
		replicas: envInt(b, "CAPN_BENCH_DATAPLANE_REPLICAS", 10),
		pods:     envInt(b, "CAPN_BENCH_DATAPLANE_PODS", 50),
		steady:   2 * time.Minute,
		out:      os.Getenv("CAPN_BENCH_OUT"),
	}
	if v := os.Getenv("CAPN_BENCH_DATAPLANE_STEADY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("CAPN_BENCH_DATAPLANE_STEADY=%q: want a positive duration", v)
		}
		o.steady = d
	}
	if o.out == "" {
		o.out = b.TempDir()
	}
	for range b.N {
		r := runDataPlaneBench(b, o)
		r.print(o)
		if err := r.write(o); err != nil {
			b.Fatal(err)
		}
		r.report(b)
	}
}

type dataPlaneBenchOptions struct {
	runs, replicas, pods int
	steady               time.Duration
	out                  string
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// deploymentRun is one Deployment's create → all pods Running and Ready.
type deploymentRun struct {
	target   string // tenant or direct
	run      int    // -1: the PODS run
	replicas int
	phases   map[string]time.Duration // since the create was sent
}

// requests are capn_syncer_management_requests_total samples by "verb
// resource".
type requests map[string]float64

type dataPlaneResult struct {
	runs []deploymentRun
	// propagation samples, host pod Ready seen → tenant pod Ready seen.
	propagation []propagationSample
	floor       []time.Duration
	// syncer RSS in KiB.
	rssIdle, rssPods, rssPodsSteady, rssPeak int
	// syncer CPU seconds while the PODS pods were created.
	cpuCreate float64
	// request deltas, and how long each window was.
	idle, create, steady            requests
	idleWindow, steadyWindow        time.Duration
	createWindow                    time.Duration
	syncerPod                       string
	syncerRestarts, syncerRestarts0 int32
	tenantReady, virtualNodeReady   time.Duration
	workloadNamespace, controlPlane string
}

type propagationSample struct {
	run                 string
	uid                 types.UID
	hostReady, tenReady time.Time
}

func (s propagationSample) latency() time.Duration { return s.tenReady.Sub(s.hostReady) }

func runDataPlaneBench(b *testing.B, o dataPlaneBenchOptions) *dataPlaneResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	images := env(b, "CAPN_IMAGES")
	c := framework.StartCluster(b, clusterOptions(b))
	node := c.StartNode(b, framework.NodeOptions{Kubelet: env(b, "KUBELET"), KubeProxy: env(b, "KUBE_PROXY"), Images: []string{images}})
	admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	framework.DeployCapn(b, c, node, admin, repoFile(b, ""))
	admin.Namespace = "default"
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	host, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	capn, err := versioned.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	r := &dataPlaneResult{}

	// The workload namespace's default quota is 50 pods and limits of 8
	// CPUs: room for the largest Deployment plus what is still
	// terminating of the previous one.
	quotaPods := strconv.Itoa(max(o.pods, o.replicas) + o.replicas + 10)
	manifest := fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: %s}\nspec:\n  dataPlane:\n    mode: Shared\n    quota: {pods: %q, secrets: \"500\", configmaps: \"500\"}\n",
		dpCluster, quotaPods)
	created := time.Now()
	framework.Eventually(b, time.Minute, "kubectl create of NestedCluster "+dpCluster, func() (bool, string) {
		res := admin.Run(manifest, "create", "-f", "-")
		return res.Err == nil, res.Stdout + res.Stderr
	})
	var nc *v1alpha1.NestedCluster
	framework.Eventually(b, 5*time.Minute, dpCluster+" Ready", func() (bool, string) {
		nc, err = capn.CapnV1alpha1().NestedClusters("default").Get(ctx, dpCluster, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range nc.Status.Conditions {
			if cond.Type == v1alpha1.ConditionReady {
				return cond.Status == metav1.ConditionTrue && nc.Status.WorkloadNamespace != "", cond.Message
			}
		}
		return false, "no Ready condition"
	})
	r.tenantReady = time.Since(created)
	r.workloadNamespace, r.controlPlane = nc.Status.WorkloadNamespace, provisioner.ManagementNamespace(nc)
	tenantCfg := benchTenantConfig(b, admin, dpCluster)
	tenant, err := kubernetes.NewForConfig(tenantCfg)
	if err != nil {
		b.Fatal(err)
	}
	framework.Eventually(b, 2*time.Minute, "virtual node "+node.Name+" Ready in the tenant", func() (bool, string) {
		n, err := tenant.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, cond.Message
			}
		}
		return false, "no Ready condition"
	})
	r.virtualNodeReady = time.Since(created)
	// Pods wait for their namespace's default ServiceAccount, which each
	// kcm creates: that is not what is measured.
	for _, side := range []struct {
		client kubernetes.Interface
		ns     string
	}{{tenant, dpTenantNS}, {host, dpDirectNS}} {
		if _, err := side.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: side.ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		framework.Eventually(b, time.Minute, "ServiceAccount default in "+side.ns, func() (bool, string) {
			_, err := side.client.CoreV1().ServiceAccounts(side.ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}

	w := startPodWatches(b, ctx, host, tenant, r.workloadNamespace)
	sp := findSyncer(b, ctx, host, node, r.controlPlane)
	r.syncerPod, r.syncerRestarts0 = sp.pod, sp.restarts
	metrics := func() requests { return syncerRequests(b, ctx, host, r.controlPlane, sp.pod) }

	b.ResetTimer()
	// Idle: the virtual node is up and nothing else happens. The syncer
	// still heartbeats (tenant writes) and keeps its watches.
	quiet(b, metrics)
	m0, t0 := metrics(), time.Now()
	time.Sleep(o.steady)
	m1, t1 := metrics(), time.Now()
	r.idle, r.idleWindow = m1.minus(m0), t1.Sub(t0)
	r.rssIdle = sp.rss(b)
	b.Logf("idle: syncer RSS %d MiB, %s", r.rssIdle/1024, r.idle.summary(r.idleWindow))

	// Deployment runs, tenant and direct taking turns (and turns at going
	// first), so the machine's noise falls on both.
	for i := range o.runs {
		order := []string{"tenant", "direct"}
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, target := range order {
			d := w.deployment(b, ctx, host, tenant, target, fmt.Sprintf("%s-%d", target, i), o.replicas)
			d.run = i
			r.runs = append(r.runs, d)
			b.Logf("run %d %s: Deployment(%d) all Running and Ready after %s", i, target, o.replicas, d.phases[phaseReady].Round(time.Millisecond))
		}
	}

	r.floor = tenantWriteFloor(b, ctx, tenant)

	// The PODS pods: the direct baseline first (it is deleted again; the
	// node runs both sets at once only if it must), then the tenant's,
	// which stay for the steady state.
	d := w.deployment(b, ctx, host, tenant, "direct", "direct-pods", o.pods)
	d.run = -1
	r.runs = append(r.runs, d)
	// The collector deletes the earlier runs' host copies a minute after
	// their pods went: those deletes belong to no window measured here.
	framework.Eventually(b, 3*time.Minute, "host copies of the earlier runs collected", func() (bool, string) {
		// The benchmark's namespace only: the DNS addon's pods in
		// kube-system keep their copies.
		sel := metav1.ListOptions{LabelSelector: names.TenantNamespaceLabel + "=" + dpTenantNS}
		cms, err := host.CoreV1().ConfigMaps(r.workloadNamespace).List(ctx, sel)
		if err != nil {
			return false, err.Error()
		}
		secrets, err := host.CoreV1().Secrets(r.workloadNamespace).List(ctx, sel)
		if err != nil {
			return false, err.Error()
		}
		return len(cms.Items)+len(secrets.Items) == 0, fmt.Sprintf("%d ConfigMaps, %d Secrets", len(cms.Items), len(secrets.Items))
	})
	quiet(b, metrics)
	m2, cpu0 := metrics(), sp.cpu(b)
	start := time.Now()
	d = w.createDeployment(b, ctx, host, tenant, "tenant", dpPodsRun, o.pods)
	d.run = -1
	r.runs = append(r.runs, d)
	b.Logf("Deployment(%d): tenant %s, direct %s", o.pods, d.phases[phaseReady].Round(time.Millisecond), r.runs[len(r.runs)-2].phases[phaseReady].Round(time.Millisecond))
	// The creation ends when the syncer has sent its last request for it.
	m3 := quiet(b, metrics)
	r.createWindow = time.Since(start)
	r.cpuCreate = sp.cpu(b) - cpu0
	r.create = m3.minus(m2)
	r.rssPods = sp.rss(b)
	t3 := time.Now()
	time.Sleep(o.steady)
	m4 := metrics()
	r.steady, r.steadyWindow = m4.minus(m3), time.Since(t3)
	// The kernel updates VmHWM lazily; it can read below an RSS sampled
	// earlier.
	r.rssPodsSteady = sp.rss(b)
	r.rssPeak = max(sp.peak(b), r.rssIdle, r.rssPods, r.rssPodsSteady)
	b.StopTimer()

	if n := countRunning(b, ctx, tenant, dpTenantNS, dpPodsRun); n != o.pods {
		b.Errorf("%d of %d tenant pods still Running and Ready after the steady state", n, o.pods)
	}
	r.syncerRestarts = findSyncer(b, ctx, host, node, r.controlPlane).restarts
	if r.syncerRestarts != r.syncerRestarts0 {
		b.Errorf("capn-syncer restarted during the benchmark (%d → %d restarts): its RSS and counters are not one process's", r.syncerRestarts0, r.syncerRestarts)
	}
	r.propagation = w.propagation()
	return r
}

// benchTenantConfig asks /kubeconfig for the longest credential (2 h):
// the 30 min of tenantKubeconfig may not last a full run.
func benchTenantConfig(b *testing.B, admin framework.Kubectl, name string) *rest.Config {
	b.Helper()
	body := `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterKubeconfigRequest","spec":{"expirationSeconds":7200}}`
	raw := admin.MustRun(b, body, "create", "--raw", kubeconfigPath(admin.Namespace, name), "-f", "-")
	var resp struct {
		Status struct {
			Kubeconfig string `json:"kubeconfig"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(raw), &resp); err != nil {
		b.Fatalf("decoding the kubeconfig answer: %v\n%s", err, raw)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(resp.Status.Kubeconfig))
	if err != nil {
		b.Fatalf("tenant kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

// Phases of a Deployment run, each the time its last pod reached it.
const (
	phaseCreated     = "pods created"
	phaseBound       = "pods bound"
	phaseHostCreated = "host pods created"
	phaseHostReady   = "host pods Ready"
	phaseReady       = "pods Running and Ready"
)

var phaseNames = []string{phaseCreated, phaseBound, phaseHostCreated, phaseHostReady, phaseReady}

// podTrack is when this process's watches first saw a pod reach each
// phase. A tenant pod and its host pod share one, by the tenant UID the
// host pod's label records; a direct pod has no host fields.
type podTrack struct {
	run                                           string
	created, bound, hostCreated, hostReady, ready time.Time
}

type podWatches struct {
	workloads string // the tenant's workload namespace
	mu        sync.Mutex
	pods      map[types.UID]*podTrack
}

// hostNamespace is where target's host pods are: none for direct.
func (w *podWatches) hostNamespace(target string) string {
	if target == "tenant" {
		return w.workloads
	}
	return ""
}

func setOnce(t *time.Time, now time.Time) {
	if t.IsZero() {
		*t = now
	}
}

func runningAndReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// startPodWatches watches the tenant's benchmark namespace, the workload
// namespace and the direct namespace. Handlers take their timestamp
// first: they run as the informer delivers each event, so both sides
// carry the same (small) delivery delay.
func startPodWatches(b *testing.B, ctx context.Context, host, tenant kubernetes.Interface, workloads string) *podWatches {
	w := &podWatches{workloads: workloads, pods: map[types.UID]*podTrack{}}
	track := func(uid types.UID) *podTrack {
		p := w.pods[uid]
		if p == nil {
			p = &podTrack{}
			w.pods[uid] = p
		}
		return p
	}
	own := func(obj any) {
		now := time.Now()
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		t := track(p.UID)
		t.run = p.Labels[dpRunLabel]
		setOnce(&t.created, now)
		if p.Spec.NodeName != "" {
			setOnce(&t.bound, now)
		}
		if runningAndReady(p) {
			setOnce(&t.ready, now)
		}
	}
	hostPod := func(obj any) {
		now := time.Now()
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		id, ok := names.IdentityOf(p.Labels, p.Annotations)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		t := track(types.UID(id.UID))
		setOnce(&t.hostCreated, now)
		if runningAndReady(p) {
			setOnce(&t.hostReady, now)
		}
	}
	var synced []cache.InformerSynced
	for _, s := range []struct {
		client kubernetes.Interface
		ns     string
		f      func(any)
	}{{tenant, dpTenantNS, own}, {host, dpDirectNS, own}, {host, workloads, hostPod}} {
		factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.ns))
		inf := factory.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    s.f,
			UpdateFunc: func(_, obj any) { s.f(obj) },
		}); err != nil {
			b.Fatal(err)
		}
		factory.Start(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		b.Fatal("pod watches did not sync")
	}
	return w
}

func benchDeployment(name string, replicas int) *appsv1.Deployment {
	labels := map[string]string{dpRunLabel: name}
	small := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "pause", Image: dpPauseImage, ImagePullPolicy: corev1.PullIfNotPresent,
						// Explicit and small: the LimitRange's default limit of
						// 1 CPU would let the quota's 8 CPUs admit only 8 pods.
						Resources: small,
					}},
				},
			},
		},
	}
}

// deployment measures one Deployment's create → all pods Running and
// Ready, then deletes it and waits until its pods are gone (on the host
// too), so the next run starts from the same state.
func (w *podWatches) deployment(b *testing.B, ctx context.Context, host, tenant kubernetes.Interface, target, name string, replicas int) deploymentRun {
	d := w.createDeployment(b, ctx, host, tenant, target, name, replicas)
	client, ns := host, dpDirectNS
	if target == "tenant" {
		client, ns = tenant, dpTenantNS
	}
	if err := client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	framework.Eventually(b, 3*time.Minute, "pods of "+name+" gone", func() (bool, string) {
		left := 0
		// A synced pod carries the tenant's label under capn's key.
		for _, side := range []struct {
			client kubernetes.Interface
			ns     string
			key    string
		}{{client, ns, dpRunLabel}, {host, w.hostNamespace(target), names.TenantLabelKey(dpRunLabel)}} {
			if side.ns == "" {
				continue
			}
			pods, err := side.client.CoreV1().Pods(side.ns).List(ctx, metav1.ListOptions{LabelSelector: side.key + "=" + name})
			if err != nil {
				return false, err.Error()
			}
			left += len(pods.Items)
		}
		return left == 0, fmt.Sprintf("%d pods left", left)
	})
	return d
}

func (w *podWatches) createDeployment(b *testing.B, ctx context.Context, host, tenant kubernetes.Interface, target, name string, replicas int) deploymentRun {
	client, ns := host, dpDirectNS
	if target == "tenant" {
		client, ns = tenant, dpTenantNS
	}
	start := time.Now()
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, benchDeployment(name, replicas), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var phases map[string]time.Duration
	// The poll only decides when to stop; every time is the watch's.
	framework.Eventually(b, 5*time.Minute, fmt.Sprintf("%s: %d pods Running and Ready", name, replicas), func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		last := map[string]time.Time{}
		ready := 0
		for _, t := range w.pods {
			if t.run != name {
				continue
			}
			for phase, at := range map[string]time.Time{phaseCreated: t.created, phaseBound: t.bound,
				phaseHostCreated: t.hostCreated, phaseHostReady: t.hostReady, phaseReady: t.ready} {
				if !at.IsZero() && at.After(last[phase]) {
					last[phase] = at
				}
			}
			if !t.ready.IsZero() {
				ready++
			}
		}
		if ready < replicas {
			return false, fmt.Sprintf("%d Running and Ready", ready)
		}
		phases = map[string]time.Duration{}
		for phase, at := range last {
			phases[phase] = at.Sub(start)
		}
		return true, ""
	})
	return deploymentRun{target: target, replicas: replicas, phases: phases}
}

// propagation is every tenant pod seen Ready on both sides.
func (w *podWatches) propagation() []propagationSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []propagationSample
	for uid, t := range w.pods {
		if !t.hostReady.IsZero() && !t.ready.IsZero() {
			out = append(out, propagationSample{run: t.run, uid: uid, hostReady: t.hostReady, tenReady: t.ready})
		}
	}
	slices.SortFunc(out, func(a, b propagationSample) int { return a.hostReady.Compare(b.hostReady) })
	return out
}

// tenantWriteFloor times dpFloorSamples patches of a tenant ConfigMap,
// each from being sent to its event on a watch opened before: one write
// and its event, as the syncer's status update is.
func tenantWriteFloor(b *testing.B, ctx context.Context, tenant kubernetes.Interface) []time.Duration {
	cms := tenant.CoreV1().ConfigMaps(dpTenantNS)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "floor"}, Data: map[string]string{"seq": "-1"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	seen := make(chan time.Time, 1)
	var want sync.Map
	factory := informers.NewSharedInformerFactoryWithOptions(tenant, 0, informers.WithNamespace(dpTenantNS))
	inf := factory.Core().V1().ConfigMaps().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		now := time.Now()
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			if _, ok := want.LoadAndDelete(cm.Data["seq"]); ok {
				seen <- now
			}
		}
	}}); err != nil {
		b.Fatal(err)
	}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	factory.Start(fctx.Done())
	if !cache.WaitForCacheSync(fctx.Done(), inf.HasSynced) {
		b.Fatal("ConfigMap watch did not sync")
	}
	var out []time.Duration
	for i := range dpFloorSamples {
		seq := strconv.Itoa(i)
		want.Store(seq, true)
		sent := time.Now()
		if _, err := cms.Patch(ctx, "floor", types.MergePatchType, []byte(`{"data":{"seq":"`+seq+`"}}`), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-seen:
			out = append(out, at.Sub(sent))
		case <-time.After(30 * time.Second):
			b.Fatalf("no watch event for ConfigMap patch %d", i)
		}
	}
	return out
}

func countRunning(b *testing.B, ctx context.Context, client kubernetes.Interface, ns, run string) int {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: dpRunLabel + "=" + run})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for i := range pods.Items {
		if runningAndReady(&pods.Items[i]) {
			n++
		}
	}
	return n
}

// syncerProcess is the capn-syncer container's process on the node.
type syncerProcess struct {
	pod      string
	pid      int
	restarts int32
}

func findSyncer(b *testing.B, ctx context.Context, host kubernetes.Interface, node *framework.Node, ns string) syncerProcess {
	b.Helper()
	var sp syncerProcess
	framework.Eventually(b, 2*time.Minute, "a Ready capn-syncer pod in "+ns, func() (bool, string) {
		pods, err := host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.ComponentLabel + "=" + v1alpha1.ComponentSyncer})
		if err != nil {
			return false, err.Error()
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil || !runningAndReady(p) || len(p.Status.ContainerStatuses) != 1 {
				continue
			}
			cs := p.Status.ContainerStatuses[0]
			pid, err := node.ContainerPID(cs.ContainerID)
			if err != nil {
				return false, err.Error()
			}
			sp = syncerProcess{pod: p.Name, pid: pid, restarts: cs.RestartCount}
			return true, ""
		}
		return false, fmt.Sprintf("%d pods, none Ready", len(pods.Items))
	})
	return sp
}

func (s syncerProcess) rss(b *testing.B) int {
	kib, err := framework.RSSKiB(s.pid)
	if err != nil {
		b.Fatalf("capn-syncer RSS: %v", err)
	}
	return kib
}

func (s syncerProcess) peak(b *testing.B) int {
	kib, err := framework.PeakRSSKiB(s.pid)
	if err != nil {
		b.Fatalf("capn-syncer peak RSS: %v", err)
	}
	return kib
}

func (s syncerProcess) cpu(b *testing.B) float64 {
	sec, err := framework.CPUSeconds(s.pid)
	if err != nil {
		b.Fatalf("capn-syncer CPU: %v", err)
	}
	return sec
}

var syncerRequestLine = regexp.MustCompile(`^capn_syncer_management_requests_total\{(.*)\} (\S+)$`)
var promLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// syncerRequests reads capn-syncer's /metrics through the management
// apiserver's pod proxy (its health port has no Service).
func syncerRequests(b *testing.B, ctx context.Context, host kubernetes.Interface, ns, pod string) requests {
	b.Helper()
	raw, err := host.CoreV1().Pods(ns).ProxyGet("http", pod, dpSyncerPort, "metrics", nil).DoRaw(ctx)
	if err != nil {
		b.Fatalf("capn-syncer /metrics: %v", err)
	}
	out := requests{}
	found := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "# ") && strings.Contains(line, "capn_syncer_management_requests_total") {
			found = true
		}
		m := syncerRequestLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range promLabel.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			b.Fatalf("capn-syncer /metrics line %q: %v", line, err)
		}
		out[labels["verb"]+" "+labels["resource"]] += v
	}
	if !found {
		b.Fatalf("capn-syncer /metrics has no capn_syncer_management_requests_total (an old capn-syncer image?)")
	}
	return out
}

// quiet waits until the syncer's requests other than watches have not
// moved for 10 s (at most 3 min) and returns the counters: the end of what
// a change caused. Watches are left out: the syncer re-opens them on its
// own schedule, whatever happens.
func quiet(b *testing.B, metrics func() requests) requests {
	b.Helper()
	const still, limit = 10 * time.Second, 3 * time.Minute
	last, since, deadline := metrics(), time.Now(), time.Now().Add(limit)
	for time.Since(since) < still {
		if time.Now().After(deadline) {
			b.Fatalf("capn-syncer's management requests did not stop for %s within %s", still, limit)
		}
		time.Sleep(time.Second)
		now := metrics()
		if !sameRequests(now, last) {
			since = time.Now()
		}
		last = now
	}
	return last
}

// sameRequests compares everything but watches.
func sameRequests(a, b requests) bool {
	for _, m := range []struct{ x, y requests }{{a, b}, {b, a}} {
		for k, v := range m.x {
			if !strings.HasPrefix(k, "watch ") && m.y[k] != v {
				return false
			}
		}
	}
	return true
}

func (r requests) minus(before requests) requests {
	out := requests{}
	for k, v := range r {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// split is the reads (get, list), the watches opened and the writes
// (everything else).
func (r requests) split() (reads, watches, writes float64) {
	for k, v := range r {
		switch strings.Fields(k)[0] {
		case "get", "list":
			reads += v
		case "watch":
			watches += v
		default:
			writes += v
		}
	}
	return reads, watches, writes
}

// detail lists each verb and resource, most first.
func (r requests) detail(per float64) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if r[a] != r[b] {
			return int(r[b] - r[a])
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, r[k]/per))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (r requests) summary(window time.Duration) string {
	reads, watches, writes := r.split()
	m := window.Minutes()
	return fmt.Sprintf("%.1f reads/min, %.1f watches/min, %.1f writes/min over %s (%s)", reads/m, watches/m, writes/m, window.Round(time.Second), r.detail(m))
}

func medianOf(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// phase is each run's time for phase, target, run ≥ 0 (the repeated
// Deployment) or -1 (the PODS one).
func (r *dataPlaneResult) phase(target, phase string, pods bool) []time.Duration {
	var out []time.Duration
	for _, d := range r.runs {
		if d.target == target && (d.run < 0) == pods {
			if v, ok := d.phases[phase]; ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// dpPodsRun names the PODS Deployment in the tenant.
const dpPodsRun = "tenant-pods"

// latencies are the propagation samples of which: "runs" (the repeated
// Deployments), "pods" (the PODS one, a burst) or "all".
func (r *dataPlaneResult) latencies(which string) []time.Duration {
	var out []time.Duration
	for _, s := range r.propagation {
		if which == "all" || (s.run == dpPodsRun) == (which == "pods") {
			out = append(out, s.latency())
		}
	}
	return out
}

func mib(kib int) float64 { return float64(kib) / 1024 }

func (r *dataPlaneResult) print(o dataPlaneBenchOptions) {
	sec := func(d time.Duration) string {
		if d == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	ratio := func(a, b time.Duration) string {
		if a == 0 || b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", float64(a)/float64(b))
	}
	fmt.Printf("\nbench-dataplane: create Deployment → every pod Running and Ready (watch receipt), tenant (Shared) against the same Deployment created directly in the management cluster\n\n")
	fmt.Printf("| phase | tenant, %d×Deployment(%d) median | direct median | ratio | tenant, Deployment(%d) | direct | ratio |\n|---|---|---|---|---|---|---|\n",
		o.runs, o.replicas, o.pods)
	for _, p := range phaseNames {
		tm, dm := medianOf(r.phase("tenant", p, false)), medianOf(r.phase("direct", p, false))
		tp, dp := medianOf(r.phase("tenant", p, true)), medianOf(r.phase("direct", p, true))
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", p, sec(tm), sec(dm), ratio(tm, dm), sec(tp), sec(dp), ratio(tp, dp))
	}
	var runs []string
	for i := range o.runs {
		var t, d time.Duration
		for _, x := range r.runs {
			if x.run == i && x.target == "tenant" {
				t = x.phases[phaseReady]
			} else if x.run == i {
				d = x.phases[phaseReady]
			}
		}
		runs = append(runs, fmt.Sprintf("%s / %s (%s)", sec(t), sec(d), ratio(t, d)))
	}
	fmt.Printf("\nruns, tenant / direct: %s\n", strings.Join(runs, "; "))
	f50, f99 := percentile(r.floor, 0.5), percentile(r.floor, 0.99)
	fmt.Printf("\nstatus propagation: host pod Ready seen → tenant pod Ready seen; ratio against the floor\n\n")
	fmt.Printf("| samples of | n | p50 | p99 | max | ratio p50 / p99 |\n|---|---|---|---|---|---|\n")
	for _, g := range []struct{ which, name string }{
		{"runs", fmt.Sprintf("%d×Deployment(%d)", o.runs, o.replicas)},
		{"pods", fmt.Sprintf("Deployment(%d)", o.pods)},
		{"all", "all"},
	} {
		lat := r.latencies(g.which)
		p50, p99 := percentile(lat, 0.5), percentile(lat, 0.99)
		fmt.Printf("| %s | %d | %s ms | %s ms | %s ms | %s / %s |\n", g.name, len(lat), ms(p50), ms(p99), ms(percentile(lat, 1)), ratio(p50, f50), ratio(p99, f99))
	}
	fmt.Printf("| floor: one tenant write → its watch event | %d | %s ms | %s ms | %s ms | |\n", len(r.floor), ms(f50), ms(f99), ms(percentile(r.floor, 1)))
	cr, cwa, cw := r.create.split()
	n := float64(o.pods)
	ir, iwa, iw := r.idle.split()
	sr, swa, sw := r.steady.split()
	fmt.Printf("\n| capn-syncer | |\n|---|---|\n")
	fmt.Printf("| RSS idle (virtual node only) | %.1f MiB |\n", mib(r.rssIdle))
	fmt.Printf("| RSS with %d pods: after creation / after %s steady / peak (VmHWM or a sample) | %.1f / %.1f / %.1f MiB |\n", o.pods, r.steadyWindow.Round(time.Second), mib(r.rssPods), mib(r.rssPodsSteady), mib(r.rssPeak))
	fmt.Printf("| CPU while creating %d pods | %.2f s (%.1f ms per pod) |\n", o.pods, r.cpuCreate, 1000*r.cpuCreate/n)
	fmt.Printf("| management requests per tenant pod created | %.2f reads (get, list), %.2f watches, %.2f writes |\n", cr/n, cwa/n, cw/n)
	fmt.Printf("| steady state idle (%s) | %.2f reads/min, %.2f watches/min, %.2f writes/min |\n", r.idleWindow.Round(time.Second), ir/r.idleWindow.Minutes(), iwa/r.idleWindow.Minutes(), iw/r.idleWindow.Minutes())
	fmt.Printf("| steady state with %d pods (%s) | %.2f reads/min, %.2f watches/min, %.2f writes/min |\n", o.pods, r.steadyWindow.Round(time.Second), sr/r.steadyWindow.Minutes(), swa/r.steadyWindow.Minutes(), sw/r.steadyWindow.Minutes())
	fmt.Printf("\nper tenant pod created (%s window): %s\n", r.createWindow.Round(time.Second), r.create.detail(n))
	fmt.Printf("steady, idle: %s\n", r.idle.summary(r.idleWindow))
	fmt.Printf("steady, %d pods: %s\n", o.pods, r.steady.summary(r.steadyWindow))
	fmt.Printf("tenant create→Ready %s, virtual node Ready %s after create\n", r.tenantReady.Round(time.Millisecond), r.virtualNodeReady.Round(time.Millisecond))
}

func (r *dataPlaneResult) write(o dataPlaneBenchOptions) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("output dir: %w", err)
	}
	msStr := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	runs := [][]string{append([]string{"target", "run", "replicas"}, phaseNames...)}
	for _, d := range r.runs {
		row := []string{d.target, strconv.Itoa(d.run), strconv.Itoa(d.replicas)}
		for _, p := range phaseNames {
			if v, ok := d.phases[p]; ok {
				row = append(row, msStr(v))
			} else {
				row = append(row, "")
			}
		}
		runs = append(runs, row)
	}
	lat := [][]string{{"run", "tenant_uid", "host_ready_unix_ms", "tenant_ready_unix_ms", "latency_ms"}}
	for _, s := range r.propagation {
		lat = append(lat, []string{s.run, string(s.uid), strconv.FormatInt(s.hostReady.UnixMilli(), 10),
			strconv.FormatInt(s.tenReady.UnixMilli(), 10), msStr(s.latency())})
	}
	n := float64(o.pods)
	cr, cwa, cw := r.create.split()
	ir, iwa, iw := r.idle.split()
	sr, swa, sw := r.steady.split()
	l, lr, lp := r.latencies("all"), r.latencies("runs"), r.latencies("pods")
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	sum := [][]string{{"metric", "value", "unit"},
		{"deployment_replicas", strconv.Itoa(o.replicas), "pods"},
		{"deployment_runs", strconv.Itoa(o.runs), "runs"},
		{"tenant_ready_median", msStr(medianOf(r.phase("tenant", phaseReady, false))), "ms"},
		{"direct_ready_median", msStr(medianOf(r.phase("direct", phaseReady, false))), "ms"},
		{"pods", strconv.Itoa(o.pods), "pods"},
		{"tenant_pods_ready", msStr(medianOf(r.phase("tenant", phaseReady, true))), "ms"},
		{"direct_pods_ready", msStr(medianOf(r.phase("direct", phaseReady, true))), "ms"},
		{"propagation_samples", strconv.Itoa(len(l)), "samples"},
		{"propagation_p50", msStr(percentile(l, 0.5)), "ms"},
		{"propagation_p99", msStr(percentile(l, 0.99)), "ms"},
		{"propagation_runs_p50", msStr(percentile(lr, 0.5)), "ms"},
		{"propagation_runs_p99", msStr(percentile(lr, 0.99)), "ms"},
		{"propagation_pods_p50", msStr(percentile(lp, 0.5)), "ms"},
		{"propagation_pods_p99", msStr(percentile(lp, 0.99)), "ms"},
		{"floor_tenant_write_to_event_p50", msStr(percentile(r.floor, 0.5)), "ms"},
		{"floor_tenant_write_to_event_p99", msStr(percentile(r.floor, 0.99)), "ms"},
		{"syncer_rss_idle", f(mib(r.rssIdle)), "MiB"},
		{"syncer_rss_pods", f(mib(r.rssPods)), "MiB"},
		{"syncer_rss_pods_steady", f(mib(r.rssPodsSteady)), "MiB"},
		{"syncer_rss_peak", f(mib(r.rssPeak)), "MiB"},
		{"syncer_cpu_create", f(r.cpuCreate), "s"},
		{"management_reads_per_pod", f(cr / n), "requests"},
		{"management_watches_per_pod", f(cwa / n), "requests"},
		{"management_writes_per_pod", f(cw / n), "requests"},
		{"steady_idle_reads_per_min", f(ir / r.idleWindow.Minutes()), "requests/min"},
		{"steady_idle_watches_per_min", f(iwa / r.idleWindow.Minutes()), "requests/min"},
		{"steady_idle_writes_per_min", f(iw / r.idleWindow.Minutes()), "requests/min"},
		{"steady_pods_reads_per_min", f(sr / r.steadyWindow.Minutes()), "requests/min"},
		{"steady_pods_watches_per_min", f(swa / r.steadyWindow.Minutes()), "requests/min"},
		{"steady_pods_writes_per_min", f(sw / r.steadyWindow.Minutes()), "requests/min"},
		{"steady_window", f(r.steadyWindow.Seconds()), "s"},
	}
	for name, rows := range map[string][][]string{"dataplane.csv": sum, "dataplane-runs.csv": runs, "dataplane-latency.csv": lat} {
		if err := writeCSV(filepath.Join(o.out, name), rows); err != nil {
			return err
		}
	}
	return nil
}

func writeCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func (r *dataPlaneResult) report(b *testing.B) {
	l := r.latencies("runs")
	b.ReportMetric(float64(medianOf(r.phase("tenant", phaseReady, false)).Milliseconds()), "ms-tenant-deployment-ready")
	b.ReportMetric(float64(medianOf(r.phase("direct", phaseReady, false)).Milliseconds()), "ms-direct-deployment-ready")
	b.ReportMetric(float64(percentile(l, 0.5).Microseconds())/1000, "ms-propagation-p50")
	b.ReportMetric(float64(percentile(l, 0.99).Microseconds())/1000, "ms-propagation-p99")
	b.ReportMetric(mib(r.rssIdle), "MiB-syncer-idle")
	b.ReportMetric(mib(r.rssPodsSteady), "MiB-syncer-pods")
}
