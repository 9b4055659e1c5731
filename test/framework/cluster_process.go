package framework

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// logTailLines is how much of each component's log a failed test prints.
const logTailLines = 80

// Process is a host process started by a test, logging to a file in the
// run directory.
type Process struct {
	Name    string
	Log     string
	Started time.Time

	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	// How it was started, for Restart.
	dir, bin  string
	env, args []string
	restarts  int
}

// StartProcess runs bin with args, logging to <dir>/<name>.log. It is
// stopped at test cleanup (SIGTERM, then SIGKILL after stopGrace) and its
// log tail is printed if the test failed.
func StartProcess(t TB, dir, name, bin string, args ...string) *Process {
	t.Helper()
	return StartProcessEnv(t, dir, name, bin, nil, args...)
}

// StartProcessEnv is StartProcess with extra environment variables
// ("KEY=value") on top of this process's own.
func StartProcessEnv(t TB, dir, name, bin string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, Log: filepath.Join(dir, name+".log"), exited: make(chan struct{}),
		dir: dir, bin: bin, env: env, args: args}
	logFile, err := os.Create(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	// If the test binary dies without running cleanups (e.g. killed on
	// timeout), the kernel kills its children instead of orphaning them.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.Started = time.Now()
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s (%s): %v", name, bin, err)
	}
	go func() { p.err = p.cmd.Wait(); logFile.Close(); close(p.exited) }()
	t.Cleanup(func() {
		begin := time.Now()
		if killed := p.Stop(); killed {
			t.Logf("%s did not exit within %s of SIGTERM; killed", name, stopGrace)
			p.DumpTail(t)
		} else if d := time.Since(begin); d > 5*time.Second {
			t.Logf("%s took %s to stop", name, d.Round(time.Millisecond))
		}
		if t.Failed() {
			p.DumpTail(t)
		}
	})
	return p
}

// stopGrace is how long a component may take to shut down after SIGTERM;
// kube-apiserver drains for a few seconds by design.
const stopGrace = 20 * time.Second

// Stop sends SIGTERM to the process (by PID) and SIGKILL after stopGrace,
// reporting whether it had to kill. It is idempotent.
func (p *Process) Stop() (killed bool) {
	select {
	case <-p.exited:
		return false
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return false
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return true
	}
}

// Restart ends the process, with SIGKILL when kill is set (a crash: no
// drain, no cleanup) or as Stop does, and starts the same command line
// again, logging to <name>-restart<N>.log. The caller uses the returned
// Process from then on.
func (p *Process) Restart(t TB, kill bool) *Process {
	t.Helper()
	if kill {
		_ = p.cmd.Process.Kill()
		<-p.exited
	} else {
		p.Stop()
	}
	n := StartProcessEnv(t, p.dir, fmt.Sprintf("%s-restart%d", p.Name, p.restarts+1), p.bin, p.env, p.args...)
	n.Name, n.restarts = p.Name, p.restarts+1
	return n
}

// Exited reports whether the process has ended, with its error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.err
	default:
		return false, nil
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// DumpTail prints the last logTailLines lines of the log.
func (p *Process) DumpTail(t TB) {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		t.Logf("reading %s: %v", p.Log, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	t.Logf("---- last %d lines of %s ----\n%s", len(lines), p.Log, strings.Join(lines, "\n"))
}

// WaitHealthy polls url with client until it answers 200, the process
// exits, or timeout passes; it returns the time since the process started.
func (p *Process) WaitHealthy(client *http.Client, url string, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.Started), nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.exited:
			return 0, fmt.Errorf("%s exited before %s answered 200: %v", p.Name, url, p.err)
		case <-ctx.Done():
			return 0, fmt.Errorf("%s: %s not healthy within %s (last: %s)", p.Name, url, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Consistently polls cond every second for d, failing the test the first
// time it does not hold: for "keeps saying so" checks, never as a wait.
func Consistently(t TB, d time.Duration, what string, cond func() (ok bool, last string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if ok, last := cond(); !ok {
			t.Fatalf("%s stopped holding after %s of %s; last: %s", what, d-time.Until(deadline), d, last)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Second)
	}
}

// Eventually polls cond every 200ms until it holds, failing the test after
// timeout with what was awaited and cond's last report.
func Eventually(t TB, timeout time.Duration, what string, cond func() (ok bool, last string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
