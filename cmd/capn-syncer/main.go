// Command capn-syncer runs one tenant's pods on the management cluster: it
// publishes virtual Nodes in the tenant and syncs the pods bound to them,
// with what they reference, into the tenant's workload namespace. capn
// provisions one per NestedCluster in Shared data-plane mode.
package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/pod-security-admission/api"

	"capn.dev/capn/pkg/placement"
	"capn.dev/capn/pkg/provisioner/pki"
	"capn.dev/capn/pkg/syncer/addons"
	"capn.dev/capn/pkg/syncer/controller"
	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/versions"
)

type options struct {
	tenantKubeconfig, hostKubeconfig string
	workloadNamespace                string
	apiServer                        string
	nameserver, dnsDomain            string
	podSecurity                      string
	nodeSelector                     string
	tolerations                      string
	runtimeClasses                   string
	maxGrace                         int64
	workers                          int
	qps                              float64
	burst                            int
	leaderElect                      bool
	leaderElectNamespace             string
	healthAddress                    string
	webhookBind, webhookAdvertise    string
	dnsAddon                         bool
	kubeletBind, kubeletAdvertise    string
	dnsImage, dnsUpstreams           string
}

func main() {
	klog.InitFlags(nil)
	var o options
	flag.StringVar(&o.tenantKubeconfig, "tenant-kubeconfig", "", "Kubeconfig of the tenant apiserver (required).")
	flag.StringVar(&o.hostKubeconfig, "host-kubeconfig", "", "Kubeconfig of the management cluster; empty means in-cluster.")
	flag.StringVar(&o.workloadNamespace, "workload-namespace", "", "The management namespace tenant pods run in (required); the syncer touches nothing else there but Nodes, which it reads.")
	flag.StringVar(&o.apiServer, "tenant-apiserver-address", "", "host:port at which host pods reach the tenant apiserver (required): their KUBERNETES_SERVICE_HOST/PORT and kubernetes.default.")
	flag.StringVar(&o.nameserver, "tenant-nameserver", "127.0.0.1", "The tenant DNS server host pods resolve through. Never the node's resolv.conf, which may forward off the machine.")
	flag.StringVar(&o.dnsDomain, "tenant-dns-domain", "cluster.local", "The tenant's cluster domain.")
	flag.StringVar(&o.podSecurity, "tenant-pod-security", "baseline", "Pod Security level tenant pods must meet: baseline or restricted.")
	flag.StringVar(&o.nodeSelector, "host-node-selector", "", "Label selector of the management nodes that get a virtual Node and run tenant pods.")
	flag.StringVar(&o.tolerations, "host-tolerations", "", "Comma-separated tolerations of every host pod, each key[=value][:Effect].")
	flag.StringVar(&o.runtimeClasses, "allowed-runtime-classes", "", "Comma-separated runtime classes tenant pods may name.")
	flag.Int64Var(&o.maxGrace, "max-termination-grace-period", translate.DefaultMaxGracePeriodSeconds, "Largest terminationGracePeriodSeconds a tenant pod may ask for.")
	flag.IntVar(&o.workers, "workers", 2, "Workers per queue.")
	flag.Float64Var(&o.qps, "qps", 50, "Client QPS to each apiserver.")
	flag.IntVar(&o.burst, "burst", 100, "Client burst to each apiserver.")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "Sync from one replica only, elected through the Lease capn-syncer in --leader-elect-namespace of the tenant.")
	flag.StringVar(&o.leaderElectNamespace, "leader-elect-namespace", metav1.NamespaceSystem, "Tenant namespace of the leader-election Lease.")
	flag.StringVar(&o.healthAddress, "health-address", "", "host:port serving /healthz and /readyz over HTTP; empty serves none. /readyz is ok once this replica syncs (caches synced) or stands by as a non-leader.")
	flag.StringVar(&o.webhookBind, "webhook-bind-address", ":10271", "host:port of the HTTPS server for the tenant's Service admission webhook.")
	flag.StringVar(&o.webhookAdvertise, "webhook-advertise-address", "", "host:port the tenant apiserver calls the Service webhook at (the leader registers it in the tenant); empty: no webhook, tenant Services keep the tenant's own ClusterIP allocation.")
	flag.StringVar(&o.kubeletBind, "kubelet-bind-address", ":10250", "host:port of the HTTPS server for the virtual Nodes' kubelet API (logs, exec, attach, port-forward), which the leader serves.")
	flag.StringVar(&o.kubeletAdvertise, "kubelet-advertise-address", "", "IP:port the tenant apiserver reaches the kubelet API at: the virtual Nodes' InternalIP and kubelet port. Empty: virtual Nodes keep the host nodes' addresses and no kubelet API is served.")
	flag.BoolVar(&o.dnsAddon, "dns-addon", false, "Keep the CoreDNS addon (kube-system/coredns behind the Service kube-dns) in the tenant and point host pods at it instead of --tenant-nameserver; false removes the addon the syncer made.")
	flag.StringVar(&o.dnsImage, "dns-image", versions.CoreDNSImage, "The CoreDNS image of the DNS addon.")
	flag.StringVar(&o.dnsUpstreams, "dns-upstreams", "", "Comma-separated resolver IPs the DNS addon forwards names outside the cluster to; empty answers them NXDOMAIN, so no query leaves the addon.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("capn-syncer"))
	if err := run(ctx, o); err != nil {
		klog.Background().Error(err, "capn-syncer failed")
		os.Exit(1)
	}
}

func (o options) syncerOptions() (controller.Options, error) {
	var so controller.Options
	if o.tenantKubeconfig == "" || o.workloadNamespace == "" || o.apiServer == "" {
		return so, errors.New("--tenant-kubeconfig, --workload-namespace and --tenant-apiserver-address are required")
	}
	host, portStr, err := net.SplitHostPort(o.apiServer)
	if err != nil {
		return so, fmt.Errorf("--tenant-apiserver-address: %w", err)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil || port < 1 || port > 65535 {
		return so, fmt.Errorf("--tenant-apiserver-address: port %q", portStr)
	}
	level, err := api.ParseLevel(o.podSecurity)
	if err != nil || level == api.LevelPrivileged {
		return so, fmt.Errorf("--tenant-pod-security must be baseline or restricted, not %q", o.podSecurity)
	}
	sel, err := labels.Parse(o.nodeSelector)
	if err != nil {
		return so, fmt.Errorf("--host-node-selector: %w", err)
	}
	var tols []corev1.Toleration
	for _, s := range splitList(o.tolerations) {
		t, err := placement.ParseToleration(s)
		if err != nil {
			return so, fmt.Errorf("--host-tolerations: %w", err)
		}
		tols = append(tols, t)
	}
	if net.ParseIP(o.nameserver) == nil {
		return so, fmt.Errorf("--tenant-nameserver %q is not an IP address", o.nameserver)
	}
	if o.webhookAdvertise != "" {
		if _, _, err := net.SplitHostPort(o.webhookAdvertise); err != nil {
			return so, fmt.Errorf("--webhook-advertise-address: %w", err)
		}
	}
	if o.kubeletAdvertise != "" {
		h, p, err := net.SplitHostPort(o.kubeletAdvertise)
		port, perr := strconv.ParseInt(p, 10, 32)
		if err != nil || net.ParseIP(h) == nil || perr != nil || port < 1 || port > 65535 {
			return so, fmt.Errorf("--kubelet-advertise-address %q is not IP:port", o.kubeletAdvertise)
		}
		so.Kubelet = controller.KubeletOptions{AdvertiseIP: h, Port: int32(port), BindAddress: o.kubeletBind,
			ClientCommonNames: []string{pki.KubeletClientCommonName}}
	}
	dns := controller.DNSOptions{Enabled: o.dnsAddon, Image: o.dnsImage, Upstreams: splitList(o.dnsUpstreams)}
	if o.dnsAddon {
		if err := (addons.DNSConfig{Image: dns.Image, Domain: o.dnsDomain, Upstreams: dns.Upstreams}).Validate(); err != nil {
			return so, fmt.Errorf("--dns-image, --dns-upstreams, --tenant-dns-domain: %w", err)
		}
	}
	so = controller.Options{
		Kubelet:           so.Kubelet,
		DNS:               dns,
		Webhook:           controller.WebhookOptions{BindAddress: o.webhookBind, AdvertiseAddress: o.webhookAdvertise},
		WorkloadNamespace: o.workloadNamespace,
		HostNodeSelector:  sel,
		HostTolerations:   tols,
		Workers:           o.workers,
		Pod: translate.Context{
			APIServerHost: host, APIServerPort: int32(port),
			Nameserver: o.nameserver, DNSDomain: o.dnsDomain,
			Level: level, RuntimeClasses: splitList(o.runtimeClasses), MaxGracePeriodSeconds: o.maxGrace,
		},
	}
	return so, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func run(ctx context.Context, o options) error {
	so, err := o.syncerOptions()
	if err != nil {
		return err
	}
	tenantCfg, err := clientcmd.BuildConfigFromFlags("", o.tenantKubeconfig)
	if err != nil {
		return fmt.Errorf("tenant kubeconfig: %w", err)
	}
	var hostCfg *rest.Config
	if o.hostKubeconfig == "" {
		hostCfg, err = rest.InClusterConfig()
	} else {
		hostCfg, err = clientcmd.BuildConfigFromFlags("", o.hostKubeconfig)
	}
	if err != nil {
		return fmt.Errorf("management kubeconfig: %w", err)
	}
	for _, c := range []*rest.Config{tenantCfg, hostCfg} {
		c.QPS, c.Burst, c.Timeout = float32(o.qps), o.burst, 30*time.Second
		c.UserAgent = "capn-syncer"
	}
	countManagementRequests(hostCfg)
	if so.Kubelet.AdvertiseIP != "" {
		// The tenant apiserver's kubelet client certificate is signed by
		// the tenant CA, the one the syncer's kubeconfig trusts.
		if so.Kubelet.ClientCAs, err = tenantCAs(tenantCfg); err != nil {
			return err
		}
		so.Kubelet.Management = rest.CopyConfig(hostCfg)
	}
	if so.Tenant, err = kubernetes.NewForConfig(tenantCfg); err != nil {
		return err
	}
	if so.Host, err = kubernetes.NewForConfig(hostCfg); err != nil {
		return err
	}
	// Watches are long requests: the informers' clients have no client-side
	// timeout (the server ends each watch after its own timeoutSeconds).
	if so.TenantWatch, err = kubernetes.NewForConfig(withoutTimeout(tenantCfg)); err != nil {
		return err
	}
	if so.HostWatch, err = kubernetes.NewForConfig(withoutTimeout(hostCfg)); err != nil {
		return err
	}
	var ready atomic.Bool
	so.Synced = func() { ready.Store(true) }
	if o.healthAddress != "" {
		if err := serveHealth(ctx, o.healthAddress, &ready); err != nil {
			return err
		}
	}
	if !o.leaderElect {
		return controller.New(so).Run(ctx)
	}
	// A standby is healthy and ready: it is what takes over.
	ready.Store(true)
	return lead(ctx, so.Tenant, o.leaderElectNamespace, func(ctx context.Context) error {
		ready.Store(false)
		return controller.New(so).Run(ctx)
	})
}

// tenantCAs is the CA pool of the tenant kubeconfig.
func tenantCAs(c *rest.Config) (*x509.CertPool, error) {
	data := c.CAData
	if len(data) == 0 && c.CAFile != "" {
		var err error
		if data, err = os.ReadFile(c.CAFile); err != nil {
			return nil, fmt.Errorf("tenant CA: %w", err)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, errors.New("the tenant kubeconfig names no CA certificate")
	}
	return pool, nil
}

func withoutTimeout(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.Timeout = 0
	return c
}

// lead runs fn while this replica holds the tenant Lease capn-syncer, and
// returns when ctx ends or leadership is lost (the process then exits and
// restarts as a candidate, as kube-controller-manager does: a syncer's
// caches and queues are not reused across terms).
func lead(ctx context.Context, tenant kubernetes.Interface, namespace string, fn func(context.Context) error) error {
	id, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("leader election identity: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: "capn-syncer"},
		Client:     tenant.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				if err := fn(ctx); err != nil {
					klog.FromContext(ctx).Error(err, "Syncer stopped")
				}
			},
			OnStoppedLeading: func() {},
		},
	})
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("lost the capn-syncer lease")
}

// serveHealth serves /healthz (the process runs), /readyz (ready) and
// /metrics on address until ctx ends.
func serveHealth(ctx context.Context, address string, ready *atomic.Bool) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.Handle("/metrics", metricsHandler())
	l, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("--health-address: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}
