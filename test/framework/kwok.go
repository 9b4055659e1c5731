package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KwokOptions configures fake nodes: Node objects whose status and pods are
// simulated by kwok, for scale tests that need many nodes but no containers.
type KwokOptions struct {
	// Bin is the kwok binary (hack/build-tools.sh --print-path kwok).
	Bin string
	// StageDir is kwok's kustomize/stage directory from its module, which
	// holds the node and pod lifecycle stages.
	StageDir string
	// Nodes is how many fake nodes to create.
	Nodes int
	// Allocatable overrides each node's allocatable (and capacity)
	// resources; unset ones keep 32 CPU, 256Gi and 110 pods.
	Allocatable corev1.ResourceList
}

// FakeNodeAnnotation marks the nodes kwok manages; nothing else is touched.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// FakeNodeTaint keeps real workloads off fake nodes unless they opt in.
var FakeNodeTaint = corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}

// StartKwok runs kwok against the cluster and registers opts.Nodes fake
// nodes, waiting until all are Ready. kwok serves its fake kubelet API on
// loopback only, and fake pod IPs come from a /24 of the cluster's pod CIDR,
// which the cluster already routes to "unreachable".
func (c *Cluster) StartKwok(t TB, opts KwokOptions) []string {
	t.Helper()
	stages := []string{
		"node/fast/node-initialize.yaml",
		"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"pod/fast/pod-ready.yaml",
		"pod/fast/pod-complete.yaml",
		"pod/fast/pod-delete.yaml",
	}
	args := []string{
		"--kubeconfig=" + c.AdminKubeconfig,
		"--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=fake",
		"--server-address=127.0.0.1:" + strconv.Itoa(FreePort(t)),
		"--node-ip=127.0.0.1",
		"--cidr=" + fakePodCIDR(c.PodCIDR),
	}
	for _, s := range stages {
		args = append(args, "--config="+filepath.Join(opts.StageDir, s))
	}
	kwok := StartProcess(t, c.Dir, "kwok", opts.Bin, args...)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := make([]string, 0, opts.Nodes)
	for i := 0; i < opts.Nodes; i++ {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{FakeNodeAnnotation: "fake"},
				Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: name},
			},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{FakeNodeTaint}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
				corev1.ResourcePods: resource.MustParse("110"),
				// Real nodes report their root filesystem; a pod with an
				// ephemeral-storage request (the workload LimitRange gives
				// one) fits no node that reports none.
				corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
			}},
		}
		for k, v := range opts.Allocatable {
			node.Status.Allocatable[k] = v
		}
		node.Status.Capacity = node.Status.Allocatable
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating fake node %s: %v", name, err)
		}
		names = append(names, name)
	}
	start := time.Now()
	restarts := 0
	Eventually(t, 2*time.Minute, "fake nodes Ready", func() (bool, string) {
		// kwok v0.8.0 can die while it starts: its stages initialize CEL
		// environments concurrently and easycel's type cache is a plain
		// map ("fatal error: concurrent map writes"; CI saw it once). That
		// crash is kwok's, not the test's: start it again, a bounded number
		// of times. Any other exit is a failure.
		if exited, err := kwok.Exited(); exited {
			log, _ := os.ReadFile(kwok.Log)
			if restarts == kwokRestarts || !strings.Contains(string(log), "concurrent map writes") {
				t.Fatalf("kwok exited (%v) after %d restarts", err, restarts)
			}
			restarts++
			t.Logf("kwok crashed at start (concurrent map writes in its CEL setup); starting it again (%d/%d)", restarts, kwokRestarts)
			kwok = StartProcess(t, c.Dir, fmt.Sprintf("kwok-%d", restarts), opts.Bin, args...)
		}
		ready := 0
		for _, n := range names {
			node, err := c.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(names), fmt.Sprintf("%d/%d Ready", ready, len(names))
	})
	t.Logf("%d kwok nodes Ready in %s", len(names), time.Since(start).Round(time.Millisecond))
	c.Kwok = kwok
	return names
}

// kwokRestarts bounds how often a kwok that crashed at start is started
// again (StartKwok).
const kwokRestarts = 3

// fakePodCIDR picks the last /24 of the cluster's IPv4 pod CIDR, away from
// the real node's bridge range at the start of it.
func fakePodCIDR(podCIDR string) string {
	var a, b int
	if _, err := fmt.Sscanf(podCIDR, "%d.%d.", &a, &b); err != nil {
		return "10.244.255.0/24"
	}
	return fmt.Sprintf("%d.%d.255.0/24", a, b)
}
