//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"capn.dev/capn/test/framework"
)

// BenchmarkStandaloneStartup measures exec-to-ready of capn-apiserver
// --standalone on a fresh data dir, and its RSS once ready. Compare with
// BenchmarkEtcdStartup, run in the same invocation, as the baseline: the
// embedded etcd is part of what capn starts.
func BenchmarkStandaloneStartup(b *testing.B) {
	bin := os.Getenv("CAPN_APISERVER")
	if bin == "" {
		b.Fatal("CAPN_APISERVER must be set (make bench-e2e)")
	}
	var total time.Duration
	var rss int
	for i := 0; i < b.N; i++ {
		srv := framework.StartStandalone(b, bin, b.TempDir())
		total += srv.StartupTime
		kib, err := srv.RSSKiB()
		if err != nil {
			b.Fatal(err)
		}
		rss += kib
		srv.Stop(b)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
	b.ReportMetric(float64(rss)/1024/float64(b.N), "MiB-RSS")
}

// BenchmarkEtcdStartup is the baseline: the pinned etcd binary from exec to
// a healthy /health.
func BenchmarkEtcdStartup(b *testing.B) {
	bin := os.Getenv("ETCD")
	if bin == "" {
		b.Fatal("ETCD must be set (make bench-e2e)")
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		client, peer := framework.FreePort(b), framework.FreePort(b)
		clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		start := time.Now()
		p := framework.StartProcess(b, dir, "etcd", bin, "--data-dir="+dir+"/data",
			"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
			"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=default="+peerURL, "--log-level=error")
		if _, err := p.WaitHealthy(http.DefaultClient, clientURL+"/health", 30*time.Second); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		p.Stop()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
}
