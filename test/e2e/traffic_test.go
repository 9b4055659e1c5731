//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// traffic is a tenant client that keeps reading from the tenant apiserver
// (through its Service, so kube-proxy spreads it over the replicas) and
// counts every failed request.
type traffic struct {
	total, failed atomic.Int64
	mu            sync.Mutex
	firstErrors   []string
	cancel        context.CancelFunc
	done          chan struct{}
}

// trafficInterval paces the client (about 20 requests a second): enough to
// hit every moment of a rollout without loading the 2-core machine.
const trafficInterval = 50 * time.Millisecond

func startTraffic(t *testing.T, kubeconfig string) *traffic {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = 100, 100, 15*time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := &traffic{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		tick := time.NewTicker(trafficInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			if ctx.Err() != nil {
				return // cancelled mid-request: not the tenant's failure
			}
			tr.total.Add(1)
			if err != nil {
				tr.failed.Add(1)
				tr.mu.Lock()
				if len(tr.firstErrors) < 10 {
					tr.firstErrors = append(tr.firstErrors, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
				}
				tr.mu.Unlock()
			}
		}
	}()
	t.Cleanup(tr.stop)
	return tr
}

// stop ends the client and waits for it; it returns the counts.
func (tr *traffic) stop() {
	tr.cancel()
	<-tr.done
}

func (tr *traffic) errors() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.firstErrors...)
}
