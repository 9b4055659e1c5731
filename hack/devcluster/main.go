// Command devcluster runs a local management cluster for development: the
// e2e framework's control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler), one real node (containerd, kubelet, kube-proxy), a
// dynamic storage provisioner with the default StorageClass
// (artifacts/deploy/local-path-storage, docs/storage.md) and capn-apiserver
// deployed onto it from artifacts/deploy/overlays/dev. It
// writes <state-dir>/admin.kubeconfig and <state-dir>/ready, then runs until
// SIGTERM or SIGINT and tears everything down as the e2e tests do.
//
// hack/dev-up.sh and hack/dev-down.sh (make run / make down) drive it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"capn.dev/capn/test/framework"
)

func main() {
	var (
		stateDir = flag.String("state-dir", "_output/devcluster", "where the kubeconfig, ready and pid files, logs and run directories go")
		repoRoot = flag.String("repo-root", ".", "the capn repository (its artifacts/deploy is applied)")
		reap     = flag.Bool("reap", false, "only remove what a launcher killed with SIGKILL left behind, then exit")
		bins     = map[string]*string{}
	)
	for _, name := range []string{"KUBECTL", "KUBE_APISERVER", "KUBE_CONTROLLER_MANAGER", "KUBE_SCHEDULER", "ETCD", "KUBELET", "KUBE_PROXY", "KUBE_ROUTER", "CAPN_IMAGES"} {
		flagName := flagName(name)
		bins[name] = flag.String(flagName, os.Getenv(name), "path of "+flagName+" (default $"+name+")")
	}
	flag.Parse()
	if *reap {
		abs, err := filepath.Abs(*stateDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "devcluster:", err)
			os.Exit(2)
		}
		t := newRunner(abs)
		reapStale(t)
		t.exit("", 0)
	}
	for name, v := range bins {
		if *v == "" {
			fmt.Fprintf(os.Stderr, "devcluster: --%s or $%s is required\n", flagName(name), name)
			os.Exit(2)
		}
	}

	abs, err := filepath.Abs(*stateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(2)
	}
	t := newRunner(abs)
	// A signal during start-up tears down what has started so far.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	started := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			t.exit(fmt.Sprintf("%s during start-up", s), 1)
		case <-started:
		}
	}()
	run(t, *repoRoot, bins)
	close(started)

	s := <-sigs
	t.Logf("%s: tearing down", s)
	t.exit("", 0)
}

func flagName(env string) string {
	b := []byte(env)
	for i, c := range b {
		if c == '_' {
			b[i] = '-'
		} else if c >= 'A' && c <= 'Z' {
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

func run(t *runner, repoRoot string, bins map[string]*string) {
	begin := time.Now()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(*bins["CAPN_IMAGES"]); err != nil {
		t.Fatalf("CAPN_IMAGES: %v (build it with `make images`)", err)
	}
	// kubectl's discovery cache, otherwise left in ~/.kube/cache.
	os.Setenv("KUBECACHEDIR", t.TempDir())

	c := framework.StartCluster(t, framework.ClusterOptions{
		KubeAPIServer:         *bins["KUBE_APISERVER"],
		KubeControllerManager: *bins["KUBE_CONTROLLER_MANAGER"],
		KubeScheduler:         *bins["KUBE_SCHEDULER"],
		Etcd:                  *bins["ETCD"],
	})
	if c.NodeIP.IsLoopback() {
		t.Fatalf("no non-loopback node IP: kubelet and pods need %s to be a real address", c.NodeIP)
	}
	node := c.StartNode(t, framework.NodeOptions{
		Kubelet: *bins["KUBELET"], KubeProxy: *bins["KUBE_PROXY"], KubeRouter: *bins["KUBE_ROUTER"], Images: []string{*bins["CAPN_IMAGES"]},
	})
	// StartNode removed the nodes of launchers killed with SIGKILL.
	removeStaleRunDirs(t)
	admin := framework.Kubectl{Bin: *bins["KUBECTL"], Kubeconfig: c.AdminKubeconfig}
	// Before capn, so that the cluster offers storage as soon as it does.
	framework.DeployStorage(t, c, node, admin, root)
	framework.DeployCapn(t, c, node, admin, root)

	kubeconfig := filepath.Join(t.stateDir, "admin.kubeconfig")
	b, err := os.ReadFile(c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(kubeconfig) })
	ready := fmt.Sprintf("kubeconfig=%s\napiserver=%s\nnode=%s\nrundir=%s\nstartup=%s\n",
		kubeconfig, c.URL, node.Name, c.Dir, time.Since(begin).Round(time.Millisecond))
	if err := os.WriteFile(filepath.Join(t.stateDir, "ready"), []byte(ready), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("ready in %s: KUBECONFIG=%s (pid %d; SIGTERM tears it down)", time.Since(begin).Round(time.Millisecond), kubeconfig, os.Getpid())
}

// runner is framework.TB for a program: cleanups run last first at exit,
// a fatal error runs them and exits 1.
type runner struct {
	stateDir string

	runDir string // <state-dir>/run-<pid>: this launcher's TempDirs

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	tempDirs int
	exiting  bool
}

var _ framework.TB = (*runner)(nil)

func newRunner(stateDir string) *runner {
	t := &runner{stateDir: stateDir, runDir: filepath.Join(stateDir, fmt.Sprintf("run-%d", os.Getpid()))}
	if err := os.MkdirAll(t.runDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
	return t
}

// reapStale removes what launchers killed with SIGKILL left behind: their
// nodes and routes (framework.ReapStale, which holds the node lock until
// exit, so no node uses the dev hostPath directory), the hostPath
// directory, and their run directories.
func reapStale(t *runner) {
	framework.ReapStale(t, 2*time.Minute, "10.96.0.0/16", "10.244.0.0/16")
	if err := os.RemoveAll(filepath.Dir(framework.CapnDevEtcdDir)); err != nil {
		t.Errorf("%v", err)
	}
	removeStaleRunDirs(t)
}

// removeStaleRunDirs removes the run directories of other launchers (only
// one runs at a time; dev-up.sh checks), once their nodes are gone.
func removeStaleRunDirs(t *runner) {
	dirs, _ := filepath.Glob(filepath.Join(t.stateDir, "run-*"))
	for _, d := range dirs {
		if d == t.runDir {
			continue
		}
		t.Logf("removing %s, left by a launcher that was killed", d)
		if err := os.RemoveAll(d); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func (t *runner) Helper() {}

func (t *runner) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (t *runner) Errorf(format string, args ...any) {
	t.Logf("ERROR: "+format, args...)
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

func (t *runner) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

func (t *runner) Fatalf(format string, args ...any) {
	t.Logf("FATAL: "+format, args...)
	t.mu.Lock()
	t.failed = true
	exiting := t.exiting
	t.mu.Unlock()
	if exiting {
		// In a cleanup: end it and go on with the next one (as testing
		// does). In start-up, interrupted by a signal: the exit in
		// progress ends the process.
		runtime.Goexit()
	}
	t.exit("", 1)
}

func (t *runner) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *runner) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *runner) TempDir() string {
	t.mu.Lock()
	t.tempDirs++
	dir := filepath.Join(t.runDir, fmt.Sprintf("%03d", t.tempDirs))
	t.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// exit runs the cleanups, last registered first, removes the ready and pid
// files and exits. Only the first caller gets through; any other (a fatal
// error in another goroutine, a second signal) waits for it.
func (t *runner) exit(why string, code int) {
	t.mu.Lock()
	if t.exiting {
		t.mu.Unlock()
		select {} // the first exit ends the process
	}
	t.exiting = true
	t.mu.Unlock()
	if why != "" {
		t.Logf("%s: tearing down", why)
	}
	begin := time.Now()
	for {
		t.mu.Lock()
		if len(t.cleanups) == 0 {
			t.mu.Unlock()
			break
		}
		f := t.cleanups[len(t.cleanups)-1]
		t.cleanups = t.cleanups[:len(t.cleanups)-1]
		t.mu.Unlock()
		runCleanup(t, f)
	}
	_ = os.Remove(t.runDir)
	for _, f := range []string{"ready", "devcluster.pid"} {
		_ = os.Remove(filepath.Join(t.stateDir, f))
	}
	if t.Failed() && code == 0 {
		code = 1
	}
	t.Logf("torn down in %s (exit %d)", time.Since(begin).Round(time.Millisecond), code)
	os.Exit(code)
}

// runCleanup runs f in its own goroutine, so that a Fatal in it (Goexit)
// ends f only.
func runCleanup(t *runner, f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				buf := make([]byte, 8<<10)
				t.Errorf("cleanup panicked: %v\n%s", r, buf[:runtime.Stack(buf, false)])
			}
		}()
		f()
	}()
	<-done
}
