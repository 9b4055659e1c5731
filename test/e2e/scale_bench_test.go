//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	"capn.dev/capn/test/framework"
)

// BenchmarkScale is `make bench-scale`: for each N in CAPN_BENCH_SCALE_N
// (default 100), a fresh management control plane with kwok nodes (no real
// node) and capn-apiserver with its provisioner as a host process behind
// the aggregator; N NestedClusters are created and the benchmark waits
// until each has EtcdReady, APIServerAvailable, ControllerManagerAvailable
// and SchedulerAvailable True. kwok pods never run an apiserver, so Ready
// (which needs the tenant bootstrap) is not the goal; nothing fakes it.
// Then CAPN_BENCH_STEADY (default 10m) of steady state.
//
// It reports the numbers issue 10 asks for and writes
// CAPN_BENCH_OUT/scale-<N>.csv (a row per sample) for hack/tools/benchplot.
func BenchmarkScale(b *testing.B) {
	ns := []int{100}
	if v := os.Getenv("CAPN_BENCH_SCALE_N"); v != "" {
		ns = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("CAPN_BENCH_SCALE_N=%q: want a comma-separated list of counts", v)
			}
			ns = append(ns, n)
		}
	}
	steady := 10 * time.Minute
	if v := os.Getenv("CAPN_BENCH_STEADY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("CAPN_BENCH_STEADY: %v", err)
		}
		steady = d
	}
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	// CAPN_BENCH_BASELINE_QPS, when set, also runs each N with capn's
	// --management-qps at that value; CAPN_BENCH_BASELINE_APISERVER, with
	// that capn-apiserver binary (e.g. built from an older commit). Both in
	// the same invocation, as the baselines the default is compared with.
	type variant struct {
		name, csv, bin string
		extra          []string
	}
	for _, n := range ns {
		variants := []variant{{name: fmt.Sprintf("N=%d", n), csv: fmt.Sprintf("scale-%d.csv", n)}}
		if qps := os.Getenv("CAPN_BENCH_BASELINE_QPS"); qps != "" {
			variants = append(variants, variant{name: fmt.Sprintf("N=%d/qps=%s", n, qps), csv: fmt.Sprintf("baseline-qps%s-%d.csv", qps, n),
				extra: []string{"--management-qps=" + qps, "--management-burst=" + qps}})
		}
		if bin := os.Getenv("CAPN_BENCH_BASELINE_APISERVER"); bin != "" {
			// First, so the code under test runs second on a machine
			// that has warmed up the same way.
			variants = append([]variant{{name: fmt.Sprintf("N=%d/baseline", n), csv: fmt.Sprintf("baseline-%d.csv", n), bin: bin}}, variants...)
		}
		for _, v := range variants {
			b.Run(v.name, func(b *testing.B) {
				if v.bin != "" {
					b.Setenv("CAPN_APISERVER", v.bin)
				}
				for range b.N {
					r := runScale(b, n, steady, v.extra...)
					r.report(b)
					if err := r.writeCSV(filepath.Join(out, v.csv)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// sample is one point of the time series, taken every sampleEvery.
type sample struct {
	at            time.Duration // since the first create
	available     int
	reads, writes float64 // cumulative management requests
	rssKiB        int
	cpuSeconds    float64
	listLatency   time.Duration
}

type scaleResult struct {
	n                         int
	wall                      time.Duration // first create to last available
	perCluster                []time.Duration
	baseRSS, peakRSS          int
	cpuCreate                 float64
	readsCreate, writesCreate float64
	syncsCreate               float64
	procCPU                   map[string]float64 // CPU-seconds per process during creation
	steady                    time.Duration
	readsSteady, writesSteady float64
	getLatency, listLatency   []time.Duration
	samples                   []sample
	unavailable               int
}

const sampleEvery = 2 * time.Second

func runScale(b *testing.B, n int, steady time.Duration, capnArgs ...string) *scaleResult {
	b.Helper()
	k := startKwokCapn(b, (4*n)/kwokNodePods+2, capnArgs...)
	c, capn := k.c, k.capn
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()

	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// The same counters the e2e resync check reads (managementReads).
	metrics := func() (reads, writes float64) {
		text := capnMetricsDirect(ctx, b, capn, c.FrontProxyClient)
		writes, _ = promValue(text, "capn_provisioner_management_writes_total")
		return managementReads(text), writes
	}
	// Syncs, to tell how many times the queue handed each cluster over.
	syncCount := func() float64 {
		v, _ := promValue(capnMetricsDirect(ctx, b, capn, c.FrontProxyClient), "capn_provisioner_syncs_total")
		return v
	}
	pid := capn.PID()
	r := &scaleResult{n: n}
	if r.baseRSS, err = framework.RSSKiB(pid); err != nil {
		b.Fatal(err)
	}
	cpu0, err := framework.CPUSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	reads0, writes0 := metrics()
	syncs0 := syncCount()
	// Every process on the machine that takes part, to name the one that
	// limits: CPU-seconds each spent during creation.
	procs := map[string]int{"capn-apiserver": pid}
	for _, p := range append(slices.Clone(c.Processes), c.Kwok) {
		if p != nil {
			procs[p.Name] = p.PID()
		}
	}
	procCPU0 := map[string]float64{}
	for name, p := range procs {
		procCPU0[name], _ = framework.CPUSeconds(p)
	}

	// Create, 16 at a time, recording when each create returned.
	start := time.Now()
	created := make([]time.Time, n)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				nc := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("s%04d", i)}}
				// Control planes only, as when these numbers were first
				// taken (docs/benchmarks.md): a Shared data plane adds a
				// syncer and a workload namespace per cluster.
				nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneNone
				for {
					if _, err := client.CapnV1alpha1().NestedClusters("default").Create(ctx, nc, metav1.CreateOptions{}); err == nil {
						break
					} else if ctx.Err() != nil {
						b.Error(err)
						break
					}
					time.Sleep(100 * time.Millisecond) // the client's retry, not a wait for a condition
				}
				created[i] = time.Now()
			}
		}()
	}
	go func() {
		for i := range n {
			work <- i
		}
		close(work)
	}()

	// Until all are available (or the deadline): LIST every sampleEvery,
	// GET one cluster between LISTs, sample capn's counters and process.
	deadline := time.Now().Add(max(10*time.Minute, time.Duration(n)*time.Second))
	availableAt := map[string]time.Time{}
	var getLat []time.Duration
	stopGets := make(chan struct{})
	var getMu sync.Mutex
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopGets:
				return
			case <-t.C:
			}
			t0 := time.Now()
			if _, err := client.CapnV1alpha1().NestedClusters("default").Get(ctx, fmt.Sprintf("s%04d", i%max(1, n)), metav1.GetOptions{}); err == nil {
				getMu.Lock()
				getLat = append(getLat, time.Since(t0))
				getMu.Unlock()
			}
		}
	}()
	take := func(listLatency time.Duration) {
		rd, wr := metrics()
		rss, _ := framework.RSSKiB(pid)
		cpu, _ := framework.CPUSeconds(pid)
		r.samples = append(r.samples, sample{at: time.Since(start), available: len(availableAt), reads: rd - reads0, writes: wr - writes0,
			rssKiB: rss, cpuSeconds: cpu - cpu0, listLatency: listLatency})
	}
	for len(availableAt) < n && time.Now().Before(deadline) {
		t0 := time.Now()
		list, err := client.CapnV1alpha1().NestedClusters("default").List(ctx, metav1.ListOptions{})
		lat := time.Since(t0)
		if err == nil {
			r.listLatency = append(r.listLatency, lat)
			for i := range list.Items {
				nc := &list.Items[i]
				if _, done := availableAt[nc.Name]; !done && allAvailable(nc) {
					availableAt[nc.Name] = time.Now()
				}
			}
		}
		take(lat)
		time.Sleep(max(0, sampleEvery-time.Since(t0))) // the sampling period
	}
	wg.Wait()
	close(stopGets)
	getMu.Lock()
	r.getLatency = getLat
	getMu.Unlock()
	r.unavailable = n - len(availableAt)
	var last time.Time
	for i := range n {
		at, ok := availableAt[fmt.Sprintf("s%04d", i)]
		if !ok {
			continue
		}
		r.perCluster = append(r.perCluster, at.Sub(created[i]))
		if at.After(last) {
			last = at
		}
	}
	r.wall = last.Sub(start)
	if r.peakRSS, err = framework.PeakRSSKiB(pid); err != nil {
		b.Fatal(err)
	}
	cpu1, _ := framework.CPUSeconds(pid)
	r.cpuCreate = cpu1 - cpu0
	reads1, writes1 := metrics()
	r.readsCreate, r.writesCreate = reads1-reads0, writes1-writes0
	r.syncsCreate = syncCount() - syncs0
	r.procCPU = map[string]float64{}
	for name, p := range procs {
		v, _ := framework.CPUSeconds(p)
		r.procCPU[name] = v - procCPU0[name]
	}

	// Steady state: nothing changes; capn should send (almost) nothing.
	r.steady = steady
	time.Sleep(steady) // the measurement window itself
	reads2, writes2 := metrics()
	r.readsSteady, r.writesSteady = reads2-reads1, writes2-writes1
	take(0)
	if r.unavailable > 0 {
		b.Errorf("%d of %d clusters never had all components available", r.unavailable, n)
	}
	return r
}

func allAvailable(nc *v1alpha1.NestedCluster) bool {
	for _, c := range []string{v1alpha1.ConditionEtcdReady, v1alpha1.ConditionAPIServerAvailable,
		v1alpha1.ConditionControllerManagerAvailable, v1alpha1.ConditionSchedulerAvailable} {
		if !meta.IsStatusConditionTrue(nc.Status.Conditions, c) {
			return false
		}
	}
	return true
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func (r *scaleResult) report(b *testing.B) {
	n := float64(r.n)
	perMin := func(v float64) float64 { return v / r.steady.Minutes() }
	b.ReportMetric(r.wall.Seconds(), "s-all-available")
	b.ReportMetric(percentile(r.perCluster, 0.5).Seconds(), "s-p50-per-cluster")
	b.ReportMetric(percentile(r.perCluster, 0.99).Seconds(), "s-p99-per-cluster")
	b.ReportMetric(r.cpuCreate/n, "cpu-s/cluster")
	b.ReportMetric(float64(r.peakRSS-r.baseRSS)/1024/n, "MiB-RSS/cluster")
	b.ReportMetric(r.readsCreate/n, "reads/cluster")
	b.ReportMetric(r.writesCreate/n, "writes/cluster")
	b.ReportMetric(r.syncsCreate/n, "syncs/cluster")
	b.ReportMetric(perMin(r.readsSteady), "steady-reads/min")
	b.ReportMetric(perMin(r.writesSteady), "steady-writes/min")
	b.ReportMetric(float64(percentile(r.getLatency, 0.99).Microseconds())/1000, "ms-GET-p99")
	b.ReportMetric(float64(percentile(r.listLatency, 0.99).Microseconds())/1000, "ms-LIST-p99")
	b.Logf("N=%d: all available in %s (p50 %s, p99 %s per cluster, %d never); capn CPU %.1f s (%.3f s/cluster), RSS %d -> peak %d MiB (%.2f MiB/cluster); "+
		"management requests during creation: %.0f reads, %.0f writes (%.1f and %.1f per cluster), %.1f syncs per cluster; steady %s: %.1f reads/min, %.1f writes/min; "+
		"nestedclusters through the aggregator: GET p50 %s p99 %s (%d), LIST p50 %s p99 %s (%d)",
		r.n, r.wall.Round(time.Millisecond), percentile(r.perCluster, 0.5).Round(time.Millisecond), percentile(r.perCluster, 0.99).Round(time.Millisecond), r.unavailable,
		r.cpuCreate, r.cpuCreate/n, r.baseRSS/1024, r.peakRSS/1024, float64(r.peakRSS-r.baseRSS)/1024/n,
		r.readsCreate, r.writesCreate, r.readsCreate/n, r.writesCreate/n, r.syncsCreate/n, r.steady, perMin(r.readsSteady), perMin(r.writesSteady),
		percentile(r.getLatency, 0.5), percentile(r.getLatency, 0.99), len(r.getLatency),
		percentile(r.listLatency, 0.5), percentile(r.listLatency, 0.99), len(r.listLatency))
	var shares []string
	for _, name := range slices.Sorted(maps.Keys(r.procCPU)) {
		shares = append(shares, fmt.Sprintf("%s %.0f s (%.2f cores)", name, r.procCPU[name], r.procCPU[name]/r.wall.Seconds()))
	}
	b.Logf("N=%d: CPU during creation, of 2 cores: %s", r.n, strings.Join(shares, ", "))
}

// writeCSV writes the time series: seconds since the first create,
// clusters available, cumulative management reads and writes, capn RSS
// (MiB) and CPU seconds, and the LIST latency (ms) of that sample.
func (r *scaleResult) writeCSV(path string) error {
	var sb strings.Builder
	sb.WriteString("seconds,available,reads,writes,rss_mib,cpu_seconds,list_ms\n")
	for _, s := range r.samples {
		fmt.Fprintf(&sb, "%.1f,%d,%.0f,%.0f,%.1f,%.2f,%.1f\n", s.at.Seconds(), s.available, s.reads, s.writes,
			float64(s.rssKiB)/1024, s.cpuSeconds, float64(s.listLatency.Microseconds())/1000)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// capnMetricsDirect reads capn's /metrics straight from the host process,
// authenticated as the aggregator would forward an admin.
func capnMetricsDirect(ctx context.Context, b *testing.B, s *framework.AggregatedServer, proxy framework.KeyPair) string {
	b.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/metrics", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("X-Remote-User", "kubernetes-admin")
	req.Header.Set("X-Remote-Group", "system:masters")
	resp, err := s.HTTPClient(&proxy).Do(req)
	if err != nil {
		b.Fatalf("capn /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("capn /metrics: %d %v", resp.StatusCode, err)
	}
	return string(body)
}
