//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"capn.dev/capn/test/framework"
)

// BenchmarkAPI is `make bench-api`: nestedclusters through the aggregator
// against a CRD with the same OpenAPI schema in the same kube-apiserver.
// One management control plane (no node), capn-apiserver as a host
// process behind the aggregator with --provisioner=none (the store only:
// no controller reads or writes while it is measured), and the CRD
// nestedclusters.bench.capn.dev whose schema is converted at run time from
// the capn.dev/v1alpha1 OpenAPI v3 the aggregator serves
// (framework.NestedClusterMirrorCRD).
//
// The same admin dynamic client, one request at a time, runs the same
// workload on each: create CAPN_BENCH_API_N (default 200) objects, get
// each, list the namespace as often, update each (a label), and the watch
// latency: from a create or update returning to its event on a watch
// opened before. The targets take turns request by request, the first of
// each turn rotating, so machine noise hits them alike. A third target,
// capn-apiserver reached directly as the front proxy (no aggregator hop),
// tells the proxy's share from capn's own.
//
// CAPN_BENCH_API_ETCD (default "shared,embedded") says where capn stores:
// "shared" is the management etcd under its own prefix, the storage the
// CRD has (the framework's etcd runs without fsync), so only the API paths
// differ; "embedded" is capn's default embedded etcd, which fsyncs.
//
// It prints p50/p99 per op and the ratio aggregated/CRD, and writes
// CAPN_BENCH_OUT/api.csv (those tables) and api-samples.csv (every
// sample). A benchmark: nothing is asserted about time.
func BenchmarkAPI(b *testing.B) {
	n := 200
	if v := os.Getenv("CAPN_BENCH_API_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("CAPN_BENCH_API_N=%q: want a positive count", v)
		}
	}
	modes := []string{"shared", "embedded"}
	if v := os.Getenv("CAPN_BENCH_API_ETCD"); v != "" {
		modes = strings.Split(v, ",")
		for _, m := range modes {
			if m != "shared" && m != "embedded" {
				b.Fatalf("CAPN_BENCH_API_ETCD=%q: want shared and/or embedded", v)
			}
		}
	}
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	summary, samples := "etcd,"+apiCSVHeader, "etcd,target,op,i,ms\n"
	for _, mode := range modes {
		b.Run("etcd="+mode, func(b *testing.B) {
			for range b.N {
				targets := runAPIBench(b, n, mode)
				table := apiSummary(targets)
				fmt.Print(table.text(n, mode))
				for _, r := range table {
					for _, p := range []float64{0.5, 0.99} {
						if x := r.ratio(p); !math.IsNaN(x) {
							b.ReportMetric(x, fmt.Sprintf("%s-p%.0f-x", r.op, p*100))
						}
					}
				}
				summary += table.csv(mode + ",")
				samples += apiSamples(mode+",", targets)
			}
		})
	}
	if err := writeFile(filepath.Join(out, "api.csv"), summary); err != nil {
		b.Fatal(err)
	}
	if err := writeFile(filepath.Join(out, "api-samples.csv"), samples); err != nil {
		b.Fatal(err)
	}
}

// watch is from a write returning to its event (0 when the event came
// first); write-to-event is from the write being sent to its event.
var apiOps = []string{"create", "get", "list", "update", "watch", "write-to-event"}

// apiTarget is one way of serving NestedClusters and what was measured on it.
type apiTarget struct {
	name, apiVersion, ns string
	client               dynamic.NamespaceableResourceInterface

	lat  map[string][]time.Duration // op -> samples
	objs []*unstructured.Unstructured
	// sent, wrote and seen are, per resourceVersion, when a create or
	// update was sent and returned, and when its watch event arrived.
	sending           time.Time
	mu                sync.Mutex
	sent, wrote, seen map[string]time.Time
}

func newAPITarget(name, apiVersion, ns string, client dynamic.NamespaceableResourceInterface) *apiTarget {
	return &apiTarget{name: name, apiVersion: apiVersion, ns: ns, client: client}
}

// in is the same target on namespace ns, with nothing measured yet.
func (t *apiTarget) in(ns string) *apiTarget {
	return newAPITarget(t.name, t.apiVersion, ns, t.client)
}

func runAPIBench(b *testing.B, n int, etcd string) []*apiTarget {
	b.Helper()
	c := framework.StartCluster(b, clusterOptions(b))
	b.Setenv("KUBECACHEDIR", b.TempDir())
	admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	admin.MustRun(b, "", "create", "namespace", capnNS)
	admin.MustRun(b, "", "create", "serviceaccount", capnSA, "-n", capnNS)
	admin.MustRun(b, "", "apply", "-k", repoFile(b, "artifacts/deploy/rbac"))
	// --provisioner=none: the API server and its store only. The
	// provisioner would otherwise reconcile every created NestedCluster
	// (status writes to capn, pods and Secrets in the management
	// kube-apiserver) during the measurement.
	storage := []string{"--embedded-etcd-data-dir=" + filepath.Join(c.Dir, "capn-etcd")}
	if etcd == "shared" {
		storage = []string{"--etcd-servers=" + c.EtcdURL(), "--etcd-prefix=/capn"}
	}
	capn := c.StartAggregatedServer(b, env(b, "CAPN_APISERVER"), capnNS, capnSA, capnSvc, append(storage, "--provisioner=none")...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := capn.Expose(ctx); err != nil {
		b.Fatal(err)
	}
	if err := capn.RegisterAPIService(ctx, "capn.dev", "v1alpha1", 1000, 15); err != nil {
		b.Fatal(err)
	}
	framework.WaitCapnAPIServiceAvailable(ctx, b, c)

	// The CRD's schema is the one the aggregator serves for capn.dev, once
	// it has fetched it.
	var crd map[string]any
	framework.Eventually(b, 2*time.Minute, "capn.dev/v1alpha1 in kube-apiserver's OpenAPI v3, converted to a CRD", func() (bool, string) {
		paths, err := c.Client.Discovery().OpenAPIV3().Paths()
		if err != nil {
			return false, err.Error()
		}
		gv, ok := paths["apis/capn.dev/v1alpha1"]
		if !ok {
			return false, "no path apis/capn.dev/v1alpha1"
		}
		doc, err := gv.Schema(runtime.ContentTypeJSON)
		if err != nil {
			return false, err.Error()
		}
		typed, dropped, err := framework.NestedClusterMirrorCRD(doc, "bench.capn.dev")
		if err != nil {
			return false, err.Error()
		}
		typed.APIVersion, typed.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		if crd, err = runtime.DefaultUnstructuredConverter.ToUnstructured(typed); err != nil {
			return false, err.Error()
		}
		b.Logf("CRD schema from %d bytes of OpenAPI; dropped: %s", len(doc), strings.Join(dropped, ", "))
		return true, ""
	})

	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000 // the client's limiter is not measured
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
		b.Fatalf("creating the mirror CRD: %v", err)
	}
	// Not `kubectl wait`: it fails on the null conditions of a CRD just created.
	framework.Eventually(b, 2*time.Minute, "the mirror CRD Established", func() (bool, string) {
		got, err := dyn.Resource(crdGVR).Get(ctx, "nestedclusters.bench.capn.dev", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			if m, _ := cond.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", conds)
	})

	direct, err := dynamic.NewForConfig(frontProxyConfig(capn, c.FrontProxyClient))
	if err != nil {
		b.Fatal(err)
	}
	nestedclusters := schema.GroupVersionResource{Group: "capn.dev", Version: "v1alpha1", Resource: "nestedclusters"}
	targets := []*apiTarget{
		newAPITarget("aggregated", "capn.dev/v1alpha1", "bench", dyn.Resource(nestedclusters)),
		newAPITarget("crd", "bench.capn.dev/v1alpha1", "bench", dyn.Resource(schema.GroupVersionResource{Group: "bench.capn.dev", Version: "v1alpha1", Resource: "nestedclusters"})),
		newAPITarget("capn-direct", "capn.dev/v1alpha1", "bench-direct", direct.Resource(nestedclusters)),
	}
	for _, ns := range []string{"bench", "bench-direct", "warmup", "warmup-direct", "template"} {
		admin.MustRun(b, "", "create", "namespace", ns)
	}

	// The template is the example as capn stores it (defaulted), so that
	// both APIs store and send the same bytes.
	data, err := os.ReadFile(repoFile(b, "artifacts/examples/nestedcluster.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var example map[string]any
	if err := yaml.Unmarshal(data, &example); err != nil {
		b.Fatal(err)
	}
	delete(example, "metadata")
	var stored *unstructured.Unstructured
	framework.Eventually(b, time.Minute, "a first NestedCluster through the aggregator", func() (bool, string) {
		obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(example)}
		obj.SetNamespace("template")
		obj.SetName("template")
		if stored, err = targets[0].client.Namespace("template").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	template := map[string]any{"kind": "NestedCluster", "spec": stored.Object["spec"]}

	// Warm-up on other namespaces (connections, caches, the CRD handler,
	// capn's namespace informer), retrying until each target serves.
	var warm []*apiTarget
	for _, t := range targets {
		w := t.in("warmup")
		if t.ns != "bench" {
			w = t.in("warmup-" + strings.TrimPrefix(t.ns, "bench-"))
		}
		warm = append(warm, w)
		framework.Eventually(b, time.Minute, w.name+" serving in "+w.ns, func() (bool, string) {
			if _, err := w.client.Namespace(w.ns).List(ctx, metav1.ListOptions{}); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
	}
	apiWorkload(ctx, b, warm, 20, template)
	for _, w := range warm[1:] {
		got, err := w.client.Namespace(w.ns).Get(ctx, "nc0000", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if want := warm[0].objs[0].Object["spec"]; !reflect.DeepEqual(got.Object["spec"], want) {
			b.Errorf("%s stores a different spec than the aggregated API:\n%v\n%v", w.name, got.Object["spec"], want)
		}
	}

	scrape := func() apiMetrics {
		kube, err := c.Client.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return apiMetrics{capn: capnMetricsDirect(ctx, b, capn, c.FrontProxyClient), kube: string(kube)}
	}
	before := scrape()
	apiWorkload(ctx, b, targets, n, template)
	fmt.Print(serverSide(targets, etcd, before, scrape()))
	return targets
}

// frontProxyConfig reaches s directly as kube-apiserver's aggregator does:
// the front-proxy client certificate and the admin's identity in headers.
func frontProxyConfig(s *framework.AggregatedServer, proxy framework.KeyPair) *rest.Config {
	return &rest.Config{
		Host: s.URL, QPS: 1000, Burst: 1000,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.ServingCA.CertPEM, CertData: proxy.CertPEM, KeyData: proxy.KeyPEM},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				r = r.Clone(r.Context())
				r.Header.Set("X-Remote-User", "kubernetes-admin")
				r.Header["X-Remote-Group"] = []string{"system:masters", "system:authenticated"}
				return rt.RoundTrip(r)
			})
		},
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apiWorkload runs create, get, list and update n times on every target,
// taking turns request by request, with a watch on each namespace opened
// before, and waits for every write's watch event.
func apiWorkload(ctx context.Context, b *testing.B, targets []*apiTarget, n int, template map[string]any) {
	b.Helper()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var watching sync.WaitGroup
	for _, t := range targets {
		t.lat, t.objs = map[string][]time.Duration{}, make([]*unstructured.Unstructured, n)
		t.sent, t.wrote, t.seen = map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
		t.watch(wctx, b, &watching)
	}
	phase := func(op string, f func(t *apiTarget, i int) error) {
		for i := range n {
			for k := range targets {
				t := targets[(i+k)%len(targets)]
				t0 := time.Now()
				t.sending = t0
				if err := f(t, i); err != nil {
					b.Fatalf("%s %s #%d: %v", t.name, op, i, err)
				}
				t.lat[op] = append(t.lat[op], time.Since(t0))
			}
		}
	}
	phase("create", func(t *apiTarget, i int) error {
		obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(template)}
		obj.SetAPIVersion(t.apiVersion)
		obj.SetNamespace(t.ns)
		obj.SetName(fmt.Sprintf("nc%04d", i))
		got, err := t.client.Namespace(t.ns).Create(ctx, obj, metav1.CreateOptions{})
		return t.written(got, i, err)
	})
	phase("get", func(t *apiTarget, i int) error {
		_, err := t.client.Namespace(t.ns).Get(ctx, t.objs[i].GetName(), metav1.GetOptions{})
		return err
	})
	phase("list", func(t *apiTarget, _ int) error {
		list, err := t.client.Namespace(t.ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) != n {
			err = fmt.Errorf("listed %d objects, want %d", len(list.Items), n)
		}
		return err
	})
	phase("update", func(t *apiTarget, i int) error {
		obj := t.objs[i].DeepCopy()
		obj.SetLabels(map[string]string{"bench": "updated"})
		got, err := t.client.Namespace(t.ns).Update(ctx, obj, metav1.UpdateOptions{})
		return t.written(got, i, err)
	})
	framework.Eventually(b, time.Minute, "every write's watch event", func() (bool, string) {
		for _, t := range targets {
			t.mu.Lock()
			missing := 0
			for rv := range t.wrote {
				if _, ok := t.seen[rv]; !ok {
					missing++
				}
			}
			t.mu.Unlock()
			if missing > 0 {
				return false, fmt.Sprintf("%s: %d events missing", t.name, missing)
			}
		}
		return true, ""
	})
	stop()
	watching.Wait()
	for _, t := range targets {
		for rv, at := range t.wrote {
			t.lat["watch"] = append(t.lat["watch"], max(0, t.seen[rv].Sub(at)))
			t.lat["write-to-event"] = append(t.lat["write-to-event"], t.seen[rv].Sub(t.sent[rv]))
		}
	}
}

// written records a create or update's result and when it returned.
func (t *apiTarget) written(obj *unstructured.Unstructured, i int, err error) error {
	if err != nil {
		return err
	}
	at := time.Now()
	t.objs[i] = obj
	t.mu.Lock()
	t.wrote[obj.GetResourceVersion()] = at
	t.sent[obj.GetResourceVersion()] = t.sending
	t.mu.Unlock()
	return nil
}

// watch opens a watch on t's namespace from now and records when each
// event arrives until ctx ends.
func (t *apiTarget) watch(ctx context.Context, b *testing.B, wg *sync.WaitGroup) {
	b.Helper()
	list, err := t.client.Namespace(t.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w, err := t.client.Namespace(t.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), TimeoutSeconds: ptr.To[int64](3600)})
	if err != nil {
		b.Fatalf("%s watch: %v", t.name, err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				at := time.Now()
				if obj, ok := ev.Object.(*unstructured.Unstructured); ok {
					t.mu.Lock()
					t.seen[obj.GetResourceVersion()] = at
					t.mu.Unlock()
				}
			}
		}
	}()
}

// apiMetrics is capn's and kube-apiserver's /metrics at one time.
type apiMetrics struct{ capn, kube string }

// apiVerbs are, per op, the request verb, its scope and the etcd operation.
var apiVerbs = map[string][3]string{
	"create": {"POST", "resource", "create"}, "get": {"GET", "resource", "get"},
	"list": {"LIST", "namespace", "listStream"}, "update": {"PUT", "resource", "update"},
}

// histogram is the change of a histogram between two scrapes: the sum of
// its samples, their count and how many took over 50 ms. labels are the
// series' label pairs, all of them from the first that matters to the
// last, in Prometheus' order (le comes after them).
func histogram(before, after string, name, labels string) (sum, count, over50ms float64) {
	delta := func(suffix, pair string) float64 {
		b, _ := promSum(before, name+suffix, pair)
		a, _ := promSum(after, name+suffix, pair)
		return a - b
	}
	sum, count = delta("_sum", labels+"}"), delta("_count", labels+"}")
	return sum, count, count - delta("_bucket", labels+`,le="0.05"}`)
}

// serverSide is where the time went: each target's mean latency as the
// client saw it, next to the mean in the server (capn's metrics hold the
// aggregated and the direct requests, kube-apiserver's the CRD's; the
// aggregator's proxying is in neither) and in its etcd, and how many
// requests took over 50 ms on each side.
func serverSide(targets []*apiTarget, etcd string, before, after apiMetrics) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nbench-api: capn on the %s etcd, where the time went (means in ms; requests over 50 ms)\n\n", etcd)
	sb.WriteString(
		"| op | client: aggregated / crd / capn-direct | server: capn / kube-apiserver (CRD) | etcd: capn / kube-apiserver (CRD) | over 50 ms: aggregated + capn-direct clients, capn server | over 50 ms: crd client, kube-apiserver server |\n" +
			"|---|---|---|---|---|---|\n")
	for _, op := range []string{"create", "get", "list", "update"} {
		v := apiVerbs[op]
		var means []string
		over := map[string]int{}
		for _, t := range targets {
			var total time.Duration
			for _, d := range t.lat[op] {
				total += d
				if d > 50*time.Millisecond {
					over[t.name]++
				}
			}
			means = append(means, ms(total/time.Duration(max(1, len(t.lat[op])))))
		}
		req := func(before, after, group string) (float64, float64) {
			sum, count, over := histogram(before, after, "apiserver_request_duration_seconds",
				fmt.Sprintf(`group=%q,resource="nestedclusters",scope=%q,subresource="",verb=%q,version="v1alpha1"`, group, v[1], v[0]))
			return 1000 * sum / max(1, count), over
		}
		etcd := func(before, after, group string) float64 {
			sum, count, _ := histogram(before, after, "etcd_request_duration_seconds",
				fmt.Sprintf(`group=%q,operation=%q,resource="nestedclusters"`, group, v[2]))
			return 1000 * sum / max(1, count)
		}
		capnMean, capnOver := req(before.capn, after.capn, "capn.dev")
		kubeMean, kubeOver := req(before.kube, after.kube, "bench.capn.dev")
		fmt.Fprintf(&sb, "| %s | %s | %.2f / %.2f | %.2f / %.2f | %d + %d, %.0f | %d, %.0f |\n", op, strings.Join(means, " / "),
			capnMean, kubeMean, etcd(before.capn, after.capn, "capn.dev"), etcd(before.kube, after.kube, "bench.capn.dev"),
			over["aggregated"], over["capn-direct"], capnOver, over["crd"], kubeOver)
	}
	return sb.String()
}

// apiRow is one op's percentiles on each target, in target order.
type apiRow struct {
	op      string
	samples int
	names   []string
	p50     []time.Duration
	p99     []time.Duration
}

// ratio is aggregated / CRD (the first two targets) at p; NaN when the
// CRD's is 0 (a watch event that came before its write returned).
func (r apiRow) ratio(p float64) float64 {
	v := r.p50
	if p != 0.5 {
		v = r.p99
	}
	if v[1] == 0 {
		return math.NaN()
	}
	return float64(v[0]) / float64(v[1])
}

type apiTable []apiRow

func apiSummary(targets []*apiTarget) apiTable {
	var t apiTable
	for _, op := range apiOps {
		r := apiRow{op: op, samples: len(targets[0].lat[op])}
		for _, tg := range targets {
			r.names = append(r.names, tg.name)
			r.p50 = append(r.p50, percentile(tg.lat[op], 0.5))
			r.p99 = append(r.p99, percentile(tg.lat[op], 0.99))
		}
		t = append(t, r)
	}
	return t
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

// text is the table as Markdown, as docs/benchmarks.md shows it.
func (t apiTable) text(n int, etcd string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nbench-api: N=%d per op, capn on the %s etcd, p50 / p99 in ms\n\n", n, etcd)
	sb.WriteString("| op | samples |")
	for _, name := range t[0].names {
		fmt.Fprintf(&sb, " %s p50 / p99 |", name)
	}
	sb.WriteString(" ratio aggregated/crd p50 / p99 |\n|---|---|")
	sb.WriteString(strings.Repeat("---|", len(t[0].names)+1) + "\n")
	for _, r := range t {
		fmt.Fprintf(&sb, "| %s | %d |", r.op, r.samples)
		for i := range r.names {
			fmt.Fprintf(&sb, " %s / %s |", ms(r.p50[i]), ms(r.p99[i]))
		}
		fmt.Fprintf(&sb, " %s / %s |\n", times(r.ratio(0.5)), times(r.ratio(0.99)))
	}
	return sb.String()
}

func times(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x)
}

const apiCSVHeader = "op,samples,aggregated_p50_ms,aggregated_p99_ms,crd_p50_ms,crd_p99_ms,capn_direct_p50_ms,capn_direct_p99_ms,ratio_p50,ratio_p99\n"

// csv is the table's rows (apiCSVHeader's columns), each after prefix.
func (t apiTable) csv(prefix string) string {
	var sb strings.Builder
	for _, r := range t {
		fmt.Fprintf(&sb, "%s%s,%d", prefix, r.op, r.samples)
		for i := range r.names {
			fmt.Fprintf(&sb, ",%s,%s", ms(r.p50[i]), ms(r.p99[i]))
		}
		fmt.Fprintf(&sb, ",%.3f,%.3f\n", r.ratio(0.5), r.ratio(0.99))
	}
	return sb.String()
}

// apiSamples is every sample, a row each: prefix, target, op, sequence,
// milliseconds.
func apiSamples(prefix string, targets []*apiTarget) string {
	var sb strings.Builder
	for _, t := range targets {
		for _, op := range apiOps {
			for i, d := range t.lat[op] {
				fmt.Fprintf(&sb, "%s%s,%s,%d,%s\n", prefix, t.name, op, i, ms(d))
			}
		}
	}
	return sb.String()
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
