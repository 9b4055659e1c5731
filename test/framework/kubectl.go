package framework

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Kubectl runs a real kubectl binary against one kubeconfig.
type Kubectl struct {
	Bin        string
	Kubeconfig string
	Namespace  string
}

// Result is one kubectl invocation's outcome.
type Result struct {
	Stdout, Stderr string
	Err            error
}

// Run runs kubectl with args and optional stdin, bounded by a minute.
func (k Kubectl) Run(stdin string, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.Bin, k.args(args)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.Kubeconfig)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return Result{Stdout: out.String(), Stderr: errb.String(), Err: err}
}

// MustRun fails the test when kubectl fails and returns its stdout.
func (k Kubectl) MustRun(t TB, stdin string, args ...string) string {
	t.Helper()
	r := k.Run(stdin, args...)
	if r.Err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Err, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// MustFail fails the test when kubectl succeeds and returns its stderr.
func (k Kubectl) MustFail(t TB, stdin string, args ...string) string {
	t.Helper()
	r := k.Run(stdin, args...)
	if r.Err == nil {
		t.Fatalf("kubectl %s succeeded, expected an error\nstdout: %s", strings.Join(args, " "), r.Stdout)
	}
	return r.Stderr
}

func (k Kubectl) args(args []string) []string {
	if k.Namespace != "" {
		return append([]string{"--namespace", k.Namespace}, args...)
	}
	return args
}

// Stream is a long-running kubectl (e.g. get -w) whose output lines can be
// awaited.
type Stream struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

// Start runs kubectl in the background until the test ends.
func (k Kubectl) Start(t TB, args ...string) *Stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, k.Bin, k.args(args)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.Kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Stream{cmd: cmd, added: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			s.mu.Unlock()
			select {
			case s.added <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; _ = cmd.Wait() })
	return s
}

// WaitFor blocks until a line satisfying match has been printed, or fails
// the test after timeout.
func (s *Stream) WaitFor(t TB, timeout time.Duration, what string, match func(string) bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		for _, l := range s.lines {
			if match(l) {
				s.mu.Unlock()
				return
			}
		}
		seen := append([]string(nil), s.lines...)
		s.mu.Unlock()
		select {
		case <-s.added:
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s; kubectl printed:\n%s", timeout, what, strings.Join(seen, "\n"))
		}
	}
}
