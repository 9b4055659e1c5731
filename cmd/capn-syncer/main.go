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
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/pod-security-admission/api"

	cmdsyncer "capn.dev/capn/pkg/cmd/syncer"
	"capn.dev/capn/pkg/placement"
	"capn.dev/capn/pkg/syncer/addons"
	"capn.dev/capn/pkg/syncer/controller"
	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

type options = cmdsyncer.Options

func main() {
	klog.InitFlags(nil)
	o := cmdsyncer.Defaults()
	o.AddFlags(flag.CommandLine)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("capn-syncer"))
	if err := run(ctx, o); err != nil {
		klog.Background().Error(err, "capn-syncer failed")
		os.Exit(1)
	}
}

func syncerOptions(o *options) (controller.Options, error) {
	var so controller.Options
	if o.TenantKubeconfig == "" || o.WorkloadNamespace == "" || o.TenantAPIServerAddress == "" {
		return so, errors.New("--" + cmdsyncer.FlagTenantKubeconfig + ", --" + cmdsyncer.FlagWorkloadNamespace + " and --" + cmdsyncer.FlagTenantAPIServerAddress + " are required")
	}
	host, portStr, err := net.SplitHostPort(o.TenantAPIServerAddress)
	if err != nil {
		return so, flagErr(cmdsyncer.FlagTenantAPIServerAddress, err)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil || port < 1 || port > 65535 {
		return so, fmt.Errorf("--%s: port %q", cmdsyncer.FlagTenantAPIServerAddress, portStr)
	}
	level, err := api.ParseLevel(o.TenantPodSecurity)
	if err != nil || level == api.LevelPrivileged {
		return so, fmt.Errorf("--%s must be baseline or restricted, not %q", cmdsyncer.FlagTenantPodSecurity, o.TenantPodSecurity)
	}
	sel, err := labels.Parse(o.HostNodeSelector)
	if err != nil {
		return so, flagErr(cmdsyncer.FlagHostNodeSelector, err)
	}
	var tols []corev1.Toleration
	for _, s := range splitList(o.HostTolerations) {
		t, err := placement.ParseToleration(s)
		if err != nil {
			return so, flagErr(cmdsyncer.FlagHostTolerations, err)
		}
		tols = append(tols, t)
	}
	maxEmptyDir, err := resource.ParseQuantity(o.MaxEmptyDirSize)
	if err != nil || maxEmptyDir.Sign() <= 0 {
		return so, fmt.Errorf("--%s %q is not a positive quantity", cmdsyncer.FlagMaxEmptyDirSize, o.MaxEmptyDirSize)
	}
	maxCopied, err := resource.ParseQuantity(o.MaxCopiedBytes)
	if err != nil || maxCopied.Sign() <= 0 {
		return so, fmt.Errorf("--%s %q is not a positive quantity", cmdsyncer.FlagMaxCopiedBytes, o.MaxCopiedBytes)
	}
	if net.ParseIP(o.TenantNameserver) == nil {
		return so, fmt.Errorf("--%s %q is not an IP address", cmdsyncer.FlagTenantNameserver, o.TenantNameserver)
	}
	if o.WebhookAdvertiseAddress != "" {
		if _, _, err := net.SplitHostPort(o.WebhookAdvertiseAddress); err != nil {
			return so, flagErr(cmdsyncer.FlagWebhookAdvertiseAddress, err)
		}
	}
	if o.KubeletAdvertiseAddress != "" {
		h, p, err := net.SplitHostPort(o.KubeletAdvertiseAddress)
		port, perr := strconv.ParseInt(p, 10, 32)
		if err != nil || net.ParseIP(h) == nil || perr != nil || port < 1 || port > 65535 {
			return so, fmt.Errorf("--%s %q is not IP:port", cmdsyncer.FlagKubeletAdvertiseAddress, o.KubeletAdvertiseAddress)
		}
		so.Kubelet = controller.KubeletOptions{AdvertiseIP: h, Port: int32(port), BindAddress: o.KubeletBindAddress,
			ClientCommonNames: []string{names.KubeletClientCommonName}}
	}
	dns := controller.DNSOptions{Enabled: o.DNSAddon, Image: o.DNSImage, Upstreams: splitList(o.DNSUpstreams)}
	if o.DNSAddon {
		if err := (addons.DNSConfig{Image: dns.Image, Domain: o.TenantDNSDomain, Upstreams: dns.Upstreams}).Validate(); err != nil {
			return so, fmt.Errorf("--%s, --%s, --%s: %w", cmdsyncer.FlagDNSImage, cmdsyncer.FlagDNSUpstreams, cmdsyncer.FlagTenantDNSDomain, err)
		}
	}
	metrics := controller.MetricsOptions{Enabled: o.MetricsAddon, Image: o.MetricsImage, BindAddress: o.KubeletMetricsBindAddress}
	if o.MetricsAddon {
		if so.Kubelet.AdvertiseIP == "" {
			return so, fmt.Errorf("--%s needs --%s: metrics-server reaches the virtual Nodes there", cmdsyncer.FlagMetricsAddon, cmdsyncer.FlagKubeletAdvertiseAddress)
		}
		_, p, err := net.SplitHostPort(o.KubeletMetricsBindAddress)
		port, perr := strconv.ParseInt(p, 10, 32)
		if err != nil || perr != nil || port < 1 || port > 65535 {
			return so, fmt.Errorf("--%s %q is not host:port", cmdsyncer.FlagKubeletMetricsBindAddress, o.KubeletMetricsBindAddress)
		}
		if err := (addons.MetricsConfig{Image: o.MetricsImage, KubeletPort: int32(port)}).Validate(); err != nil {
			return so, fmt.Errorf("--%s: %w", cmdsyncer.FlagMetricsImage, err)
		}
	}
	so = controller.Options{
		Kubelet:           so.Kubelet,
		DNS:               dns,
		Metrics:           metrics,
		Webhook:           controller.WebhookOptions{BindAddress: o.WebhookBindAddress, AdvertiseAddress: o.WebhookAdvertiseAddress},
		WorkloadNamespace: o.WorkloadNamespace,
		HostNodeSelector:  sel,
		HostTolerations:   tols,
		Workers:           o.Workers,
		MaxCopiedBytes:    maxCopied,
		StorageClasses:    splitList(o.StorageClasses),
		Pod: translate.Context{
			APIServerHost: host, APIServerPort: int32(port),
			Nameserver: o.TenantNameserver, DNSDomain: o.TenantDNSDomain,
			Level: level, RuntimeClasses: splitList(o.AllowedRuntimeClasses), MaxGracePeriodSeconds: o.MaxTerminationGracePeriod,
			AllowNetRaw: o.AllowNetRaw, MaxEmptyDirSize: maxEmptyDir,
			PullAlways: o.PullAlways, CachedImages: cachedImages(o),
		},
	}
	return so, nil
}

// cachedImages are --cached-images and the images of the addons that
// are on: the provider's, which the node may run from its cache.
func cachedImages(o *options) []string {
	images := splitList(o.CachedImages)
	if o.DNSAddon && o.DNSImage != "" {
		images = append(images, o.DNSImage)
	}
	if o.MetricsAddon && o.MetricsImage != "" {
		images = append(images, o.MetricsImage)
	}
	return images
}

func flagErr(name string, err error) error { return fmt.Errorf("--%s: %w", name, err) }

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func run(ctx context.Context, o *options) error {
	so, err := syncerOptions(o)
	if err != nil {
		return err
	}
	tenantCfg, err := clientcmd.BuildConfigFromFlags("", o.TenantKubeconfig)
	if err != nil {
		return fmt.Errorf("tenant kubeconfig: %w", err)
	}
	var hostCfg *rest.Config
	if o.HostKubeconfig == "" {
		hostCfg, err = rest.InClusterConfig()
	} else {
		hostCfg, err = clientcmd.BuildConfigFromFlags("", o.HostKubeconfig)
	}
	if err != nil {
		return fmt.Errorf("management kubeconfig: %w", err)
	}
	for _, c := range []*rest.Config{tenantCfg, hostCfg} {
		c.QPS, c.Burst, c.Timeout = float32(o.QPS), o.Burst, 30*time.Second
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
	if o.WebhookRequireClientCert {
		// The apiserver presents its kubelet client certificate to
		// webhooks too (its admission configuration).
		if so.Webhook.ClientCAs, err = tenantCAs(tenantCfg); err != nil {
			return err
		}
		so.Webhook.ClientCommonNames = []string{names.KubeletClientCommonName}
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
	// One client for the APIService's watch and its rare applies, so
	// without the client-side timeout.
	if so.TenantAggregator, err = aggregatorclient.NewForConfig(withoutTimeout(tenantCfg)); err != nil {
		return err
	}
	var ready atomic.Bool
	so.Synced = func() { ready.Store(true) }
	if o.HealthAddress != "" {
		if err := serveHealth(ctx, o.HealthAddress, &ready); err != nil {
			return err
		}
	}
	if !o.LeaderElect {
		return controller.New(so).Run(ctx)
	}
	// A standby is healthy and ready: it is what takes over.
	ready.Store(true)
	return lead(ctx, so.Tenant, o.LeaderElectNamespace, func(ctx context.Context) error {
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
		return flagErr(cmdsyncer.FlagHealthAddress, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}
