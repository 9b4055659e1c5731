// Package framework starts real capn processes for end-to-end tests and
// drives them with a real kubectl.
package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Standalone is a capn-apiserver process in --standalone mode with its own
// embedded etcd and admin kubeconfig.
type Standalone struct {
	URL        string
	Kubeconfig string
	Dir        string
	// StartupTime is from exec to the first successful /readyz.
	StartupTime time.Duration

	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

// FreePort asks the kernel for a free loopback port.
func FreePort(t TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartStandalone runs bin in dir (reusing its etcd data if present) and
// waits until it is ready. The process is stopped at test cleanup, and its
// log is printed if the test failed.
func StartStandalone(t TB, bin, dir string) *Standalone {
	t.Helper()
	port := FreePort(t)
	s := &Standalone{
		URL:        "https://127.0.0.1:" + strconv.Itoa(port),
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		Dir:        dir,
		log:        filepath.Join(dir, fmt.Sprintf("capn-apiserver-%d.log", port)),
	}
	logFile, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(bin, "--standalone",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--admin-kubeconfig="+s.Kubeconfig,
		"--embedded-etcd-data-dir="+filepath.Join(dir, "etcd"))
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	s.exited = make(chan struct{})
	go func() { s.err = s.cmd.Wait(); logFile.Close(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Signal(os.Interrupt)
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		}
		if t.Failed() {
			s.DumpLog(t)
		}
	})

	// Readiness is polled without credentials: /readyz is the one path
	// capn serves to anonymous callers, exactly as a kubelet probe would.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness only, no data
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		resp, err := client.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if _, err := os.Stat(s.Kubeconfig); err == nil {
					break
				}
			}
		}
		select {
		case <-s.exited:
			s.DumpLog(t)
			t.Fatalf("capn-apiserver exited before becoming ready: %v", s.err)
		case <-ctx.Done():
			s.DumpLog(t)
			t.Fatalf("capn-apiserver not ready within 90s")
		case <-time.After(100 * time.Millisecond):
		}
	}
	s.StartupTime = time.Since(start)
	return s
}

// Stop interrupts the server and waits for it to exit.
func (s *Standalone) Stop(t TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("stopping capn-apiserver: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("capn-apiserver did not exit within 30s of SIGINT")
	}
}

// RSSKiB reads the server's resident set size from /proc.
func (s *Standalone) RSSKiB() (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.cmd.Process.Pid)
}

// DumpLog prints the server log into the test output.
func (s *Standalone) DumpLog(t TB) {
	b, err := os.ReadFile(s.log)
	if err != nil {
		t.Logf("reading %s: %v", s.log, err)
		return
	}
	t.Logf("---- %s ----\n%s", s.log, b)
}
