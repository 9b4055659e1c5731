// Package framework starts real capn processes for end-to-end tests and
// drives them with a real kubectl.
package framework

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Standalone is a capn-apiserver process in --standalone mode with its own
// embedded etcd and admin kubeconfig.
type Standalone struct {
	*Process
	URL        string
	Kubeconfig string
	Dir        string
	// StartupTime is from exec to the first successful /readyz.
	StartupTime time.Duration
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
// waits until it is ready. StartProcess stops it at test cleanup and prints
// its log tail if the test failed.
func StartStandalone(t TB, bin, dir string) *Standalone {
	t.Helper()
	port := FreePort(t)
	s := &Standalone{
		URL:        "https://127.0.0.1:" + strconv.Itoa(port),
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		Dir:        dir,
	}
	s.Process = StartProcess(t, dir, fmt.Sprintf("capn-apiserver-%d", port), bin, "--standalone",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--admin-kubeconfig="+s.Kubeconfig,
		"--embedded-etcd-data-dir="+filepath.Join(dir, "etcd"))

	// Readiness is polled without credentials: /readyz is the one path
	// capn serves to anonymous callers, exactly as a kubelet probe would.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness only, no data
	}}
	d, err := s.WaitHealthy(client, s.URL+"/readyz", 90*time.Second)
	if err != nil {
		s.DumpTail(t)
		t.Fatalf("capn-apiserver standalone: %v", err)
	}
	// The kubeconfig is written before the server listens.
	if _, err := os.Stat(s.Kubeconfig); err != nil {
		t.Fatalf("capn-apiserver is ready but wrote no admin kubeconfig: %v", err)
	}
	s.StartupTime = d
	return s
}

// Stop ends the server (SIGTERM) and fails the test if it had to be killed.
func (s *Standalone) Stop(t TB) {
	t.Helper()
	if killed := s.Process.Stop(); killed {
		t.Fatalf("capn-apiserver did not exit within %s of SIGTERM", stopGrace)
	}
}

// RSSKiB reads the server's resident set size from /proc.
func (s *Standalone) RSSKiB() (int, error) { return RSSKiB(s.PID()) }
