package framework

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FrontProxyClientName is the CN kube-apiserver's aggregator presents to
// aggregated API servers; they accept identity headers only from it.
const FrontProxyClientName = "front-proxy-client"

// KubeletClientName is the user kube-apiserver presents to kubelets (logs,
// exec, port-forward); a node binds it to system:kubelet-api-admin.
const KubeletClientName = "kube-apiserver-kubelet-client"

// ClusterOptions says which binaries make up the management control plane.
type ClusterOptions struct {
	KubeAPIServer, KubeControllerManager, KubeScheduler, Etcd string
	// ServiceCIDR and PodCIDR get unreachable routes for the cluster's
	// lifetime. Defaults: 10.96.0.0/16 and 10.244.0.0/16.
	ServiceCIDR, PodCIDR string
	// StartTimeout bounds each component's start (default 2m: a busy
	// 2-core machine, e.g. one that is compiling, is several times slower).
	StartTimeout time.Duration
	// ControllerManagerArgs and SchedulerArgs are appended to those
	// components' flags (a benchmark tunes the management cluster).
	ControllerManagerArgs, SchedulerArgs []string
}

// Cluster is a running etcd + kube-apiserver + kube-controller-manager +
// kube-scheduler on this machine, without nodes.
type Cluster struct {
	// Dir is the run directory: PKI, kubeconfigs, data and logs.
	Dir string
	// NodeIP is this machine's address; kube-apiserver serves on it.
	NodeIP net.IP
	// URL is kube-apiserver's address.
	URL string
	// ServiceCIDR and PodCIDR are the cluster's networks (see ClusterOptions).
	ServiceCIDR, PodCIDR string
	// AdminKubeconfig authenticates as kubernetes-admin (system:masters).
	AdminKubeconfig string
	Client          *kubernetes.Clientset
	// CA signs the cluster's client and serving certificates; FrontProxyCA
	// signs FrontProxyClient, the aggregator's client certificate.
	CA, FrontProxyCA *CA
	FrontProxyClient KeyPair
	// Processes are the components in start order.
	Processes []*Process
	// Kwok is the kwok process StartKwok started, if any.
	Kwok *Process
	// Startup is each component's time from exec to healthy, plus "total".
	Startup map[string]time.Duration

	t TB
}

// StartCluster starts a management control plane in a fresh directory and
// waits until it serves; everything is stopped and removed at test cleanup.
func StartCluster(t TB, opts ClusterOptions) *Cluster {
	t.Helper()
	opts.defaults()
	for name, bin := range map[string]string{"kube-apiserver": opts.KubeAPIServer,
		"kube-controller-manager": opts.KubeControllerManager, "kube-scheduler": opts.KubeScheduler, "etcd": opts.Etcd} {
		if bin == "" {
			t.Fatalf("ClusterOptions: no binary for %s", name)
		}
	}
	begin := time.Now()
	// Created first, so that t.Cleanup removes it after the processes that
	// write into it have stopped.
	dir := t.TempDir()
	c := &Cluster{Dir: dir, NodeIP: NodeIP(), ServiceCIDR: opts.ServiceCIDR, PodCIDR: opts.PodCIDR,
		Startup: map[string]time.Duration{}, t: t}
	if c.NodeIP.IsLoopback() {
		t.Logf("no non-loopback address found; kube-apiserver serves on 127.0.0.1")
	}

	guard, err := blackholeRoutes([]string{opts.ServiceCIDR, opts.PodCIDR})
	if err != nil {
		t.Fatalf("network safety routes: %v", err)
	}
	t.Cleanup(func() {
		if err := guard.release(); err != nil {
			t.Errorf("removing routes: %v", err)
		}
	})

	_, svcNet, err := net.ParseCIDR(opts.ServiceCIDR)
	if err != nil {
		t.Fatalf("service CIDR: %v", err)
	}
	pki, err := newClusterPKI(filepath.Join(dir, "pki"), c.NodeIP, firstIP(svcNet))
	if err != nil {
		t.Fatalf("creating PKI: %v", err)
	}
	c.CA, c.FrontProxyCA, c.FrontProxyClient = pki.CA, pki.FrontProxyCA, pki.FrontProxyClient

	etcdURL := c.startEtcd(opts)
	apiPort := freePortOn(t, c.NodeIP)
	c.URL = "https://" + net.JoinHostPort(c.NodeIP.String(), strconv.Itoa(apiPort))
	c.AdminKubeconfig = c.certKubeconfig("admin", pki.Admin)
	c.startAPIServer(opts, pki, etcdURL, apiPort)
	c.startControllers(opts, pki)
	c.waitBootstrapped(opts.StartTimeout)
	c.Startup["total"] = time.Since(begin)
	for _, p := range c.Processes {
		t.Logf("cluster startup: %-24s %s", p.Name, c.Startup[p.Name].Round(time.Millisecond))
	}
	t.Logf("cluster startup: %-24s %s (dir %s)", "total", c.Startup["total"].Round(time.Millisecond), dir)
	return c
}

func (o *ClusterOptions) defaults() {
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = "10.96.0.0/16"
	}
	if o.PodCIDR == "" {
		o.PodCIDR = "10.244.0.0/16"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
}

// Kubeconfig mints a client certificate for user in groups and returns the
// path of a kubeconfig that uses it. Every authenticated user is also in
// system:authenticated implicitly.
func (c *Cluster) Kubeconfig(user string, groups ...string) string {
	c.t.Helper()
	kp, err := c.CA.ClientCert(user, groups...)
	if err != nil {
		c.t.Fatalf("client certificate for %s: %v", user, err)
	}
	return c.certKubeconfig(fileSafe(user), kp)
}

// TokenKubeconfig returns the path of a kubeconfig that presents token.
func (c *Cluster) TokenKubeconfig(name, token string) string {
	c.t.Helper()
	path := filepath.Join(c.Dir, "kubeconfigs", name+".kubeconfig")
	if err := writeKubeconfig(path, c.URL, c.CA.CertPEM, name, &clientcmdapi.AuthInfo{Token: token}); err != nil {
		c.t.Fatal(err)
	}
	return path
}

func (c *Cluster) certKubeconfig(name string, kp KeyPair) string {
	c.t.Helper()
	path := filepath.Join(c.Dir, "kubeconfigs", name+".kubeconfig")
	auth := &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	if err := writeKubeconfig(path, c.URL, c.CA.CertPEM, name, auth); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// adminClients builds the admin clientset and an HTTP client for raw
// requests (health checks), both trusting the cluster CA and presenting the
// admin certificate.
func (c *Cluster) adminClients() (*kubernetes.Clientset, *http.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.Timeout = 5 * time.Second
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	return cs, hc, err
}

// firstIP is the service CIDR's first address, kubernetes.default's ClusterIP.
func firstIP(n *net.IPNet) net.IP {
	ip := make(net.IP, len(n.IP))
	copy(ip, n.IP)
	ip[len(ip)-1]++
	return ip
}

// freePortOn asks the kernel for a port that is free on ip.
func freePortOn(t TB, ip net.IP) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatalf("finding a free port on %s: %v", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ExitedProcesses names each of c's processes (kwok's too) that has ended,
// and how: a component that died leaves the cluster silently stuck, which
// a test waiting for convergence should say rather than time out on.
func (c *Cluster) ExitedProcesses() []string {
	var out []string
	for _, p := range append(append([]*Process(nil), c.Processes...), c.Kwok) {
		if p == nil {
			continue
		}
		if exited, err := p.Exited(); exited {
			out = append(out, fmt.Sprintf("%s exited (%v); its log: %s", p.Name, err, p.Log))
		}
	}
	return out
}
