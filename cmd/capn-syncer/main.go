// Command capn-syncer runs one tenant's pods on the management cluster: it
// publishes virtual Nodes in the tenant and syncs the pods bound to them,
// with what they reference, into the tenant's workload namespace. capn
// provisions one per NestedCluster in Shared data-plane mode.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/pod-security-admission/api"

	"capn.dev/capn/pkg/placement"
	"capn.dev/capn/pkg/syncer/controller"
	"capn.dev/capn/pkg/syncer/translate"
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
	so = controller.Options{
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
	if so.Tenant, err = kubernetes.NewForConfig(tenantCfg); err != nil {
		return err
	}
	if so.Host, err = kubernetes.NewForConfig(hostCfg); err != nil {
		return err
	}
	return controller.New(so).Run(ctx)
}
