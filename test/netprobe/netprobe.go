// Package netprobe is the one vocabulary of the network-boundary e2e: what
// a TCP connect to an address tells, from inside a tenant pod
// (capn-testserver dial) and from the host (the test's control).
package netprobe

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// Verdicts of a TCP connect.
const (
	// Open: something accepted the connection.
	Open = "open"
	// Refused: a reset or an ICMP port-unreachable came back: no
	// listener, or a policy that rejects (kube-router does).
	Refused = "refused"
	// Dropped: no answer before the timeout, or the network said the
	// host is unreachable: what a NetworkPolicy drop looks like.
	Dropped = "dropped"
)

// Dial connects to each address (host:port) at once and reports its
// verdict, or "error: ..." for anything else.
func Dial(ctx context.Context, addrs []string, timeout time.Duration) map[string]string {
	out := make(map[string]string, len(addrs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := Verdict(dialOne(ctx, a, timeout))
			mu.Lock()
			out[a] = v
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func dialOne(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = c.Close()
	}
	return err
}

// Verdict classifies a connect's error.
func Verdict(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return Open
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EPERM):
		return Dropped
	default:
		return "error: " + err.Error()
	}
}

// Blocked says whether a verdict means no connection was made, for a
// reason the network gave (not a local error). A probe that is blocked
// where the control from the host is Open was stopped by policy.
func Blocked(v string) bool { return v == Refused || v == Dropped }
