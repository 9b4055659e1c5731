package framework

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// NodeIP is this machine's own address: the first IPv4 address of the
// interface that holds the default route. Servers that other components
// must reach by a non-loopback address (aggregated APIs need an endpoint,
// and endpoints may not be loopback) bind to it. Falls back to 127.0.0.1
// on a machine without a default route.
func NodeIP() net.IP {
	ifName := defaultRouteInterface()
	if ifName == "" {
		return net.ParseIP("127.0.0.1")
	}
	iface, err := net.InterfaceByName(ifName)
	if err != nil {
		return net.ParseIP("127.0.0.1")
	}
	addrs, _ := iface.Addrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.To4()
		}
	}
	return net.ParseIP("127.0.0.1")
}

// defaultRouteInterface reads /proc/net/route: the row whose destination
// and mask are both 0 is the default route.
func defaultRouteInterface() string {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 && fields[1] == "00000000" && fields[7] == "00000000" {
			return fields[0]
		}
	}
	return ""
}

// routeStateDir keeps which unreachable routes the framework added and which
// live runs depend on them. Several test processes may run clusters at once
// and share the routes; only the last one out removes them, and only routes
// the framework itself added (never one that was there before).
const routeStateDir = "/run/capn-e2e/routes"

// routeGuard holds one cluster's claim on the unreachable routes.
type routeGuard struct {
	cidrs  []string
	holder string // file name: <pid>-<n>, so dead holders can be pruned
}

// guards numbers the clusters of this process (parallel tests may run several).
var guards atomic.Int64

// blackholeRoutes makes sure `unreachable <cidr>` routes exist, so a packet
// to a service or pod address that nothing on this machine answers fails
// locally instead of leaving through the default gateway.
func blackholeRoutes(cidrs []string) (*routeGuard, error) {
	g := &routeGuard{cidrs: cidrs, holder: fmt.Sprintf("%d-%d", os.Getpid(), guards.Add(1))}
	err := withRouteLock(func() error {
		for _, cidr := range cidrs {
			present, err := unreachableRouteExists(cidr)
			if err != nil {
				return err
			}
			if present {
				continue
			}
			if out, err := exec.Command("ip", "route", "add", "unreachable", cidr).CombinedOutput(); err != nil {
				return fmt.Errorf("ip route add unreachable %s: %v: %s", cidr, err, out)
			}
			if err := os.WriteFile(filepath.Join(routeStateDir, "added-"+fileSafeCIDR(cidr)), nil, 0o600); err != nil {
				return err
			}
		}
		return os.WriteFile(filepath.Join(routeStateDir, "holder-"+g.holder), nil, 0o600)
	})
	return g, err
}

// release drops this run's claim and deletes the routes the framework added
// once no live run holds them.
func (g *routeGuard) release() error {
	return withRouteLock(func() error {
		_ = os.Remove(filepath.Join(routeStateDir, "holder-"+g.holder))
		if liveHolders() > 0 {
			return nil
		}
		for _, cidr := range g.cidrs {
			marker := filepath.Join(routeStateDir, "added-"+fileSafeCIDR(cidr))
			if _, err := os.Stat(marker); err != nil {
				continue // not ours: it existed before any run added it
			}
			if out, err := exec.Command("ip", "route", "del", "unreachable", cidr).CombinedOutput(); err != nil {
				return fmt.Errorf("ip route del unreachable %s: %v: %s", cidr, err, out)
			}
			_ = os.Remove(marker)
		}
		return nil
	})
}

// liveHolders counts holders whose process still runs, removing the files
// of processes that died without cleaning up (e.g. a test binary killed on
// timeout).
func liveHolders() int {
	entries, _ := os.ReadDir(routeStateDir)
	n := 0
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), "holder-")
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(name, "-")
		pid, err := strconv.Atoi(pidStr)
		if err == nil && syscall.Kill(pid, 0) == nil {
			n++
			continue
		}
		_ = os.Remove(filepath.Join(routeStateDir, e.Name()))
	}
	return n
}

// withRouteLock serialises route bookkeeping across test processes.
func withRouteLock(fn func() error) error {
	if err := os.MkdirAll(routeStateDir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(routeStateDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	return fn()
}

// unreachableRouteExists reports whether cidr already has an unreachable
// route. Any other route for exactly that prefix is an error: traffic to it
// would leave the machine.
func unreachableRouteExists(cidr string) (bool, error) {
	out, err := exec.Command("ip", "route", "show", "exact", cidr).CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("ip route show exact %s: %v: %s", cidr, err, out)
	}
	s := strings.TrimSpace(string(out))
	switch {
	case s == "":
		return false, nil
	case strings.HasPrefix(s, "unreachable "):
		return true, nil
	default:
		return false, fmt.Errorf("a route for %s already exists and is not unreachable: %q", cidr, s)
	}
}

func fileSafeCIDR(cidr string) string { return strings.ReplaceAll(cidr, "/", "_") }
