package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	apireglisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"

	"capn.dev/capn/pkg/syncer/addons"
	"capn.dev/capn/pkg/syncer/kubelet"
	"capn.dev/capn/pkg/tenant/names"
)

const (
	kindMetrics = "metrics"
	// metricsKey is the metrics queue's one key.
	metricsKey = "metrics"
)

// metricsKind keeps the tenant's metrics-server addon (or removes it), as
// dnsKind keeps CoreDNS: server-side applies, forced, whenever an addon
// object changes. Its APIService is watched by name only.
type metricsKind struct {
	*Syncer
	q               queue
	deployments     appslisters.DeploymentLister
	serviceAccounts corelisters.ServiceAccountLister
	apiServices     apireglisters.APIServiceLister
}

func (k *metricsKind) name() string { return kindMetrics }

func (k *metricsKind) register(r *registrar) {
	k.q = r.queue(kindMetrics)
	enqueue := func() { k.q.Add(metricsKey) }
	k.deployments, k.serviceAccounts = k.addonDeployments(r, isMetricsObject, enqueue)
	handle(k.tenant.Core().V1().Services().Informer(), func(obj any) {
		if isMetricsObject(obj) {
			enqueue()
		}
	})
	if k.o.TenantAggregator != nil {
		f := aggregatorinformers.NewSharedInformerFactoryWithOptions(k.o.TenantAggregator, k.o.ResyncPeriod,
			aggregatorinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", names.MetricsAPIServiceName).String()
			}))
		apis := f.Apiregistration().V1().APIServices()
		k.apiServices = apis.Lister()
		r.waitFor(apis.Informer().HasSynced)
		// Its status moves with metrics-server's availability; only a
		// change of what capn applies needs an apply.
		_, _ = apis.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { enqueue() },
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*apiregv1.APIService)
				c, ok2 := cur.(*apiregv1.APIService)
				if ok1 && ok2 && equality.Semantic.DeepEqual(o.Spec, c.Spec) && equality.Semantic.DeepEqual(o.Labels, c.Labels) {
					return
				}
				enqueue()
			},
			DeleteFunc: func(any) { enqueue() },
		})
		r.beforeSync(func(ctx context.Context) error {
			f.Start(ctx.Done())
			return nil
		})
	}
	r.beforeSync(func(context.Context) error {
		enqueue()
		return nil
	})
}

// isMetricsObject reports whether obj is one of the addon's namespaced
// objects, by namespace and name.
func isMetricsObject(obj any) bool {
	m, ok := obj.(metav1.Object)
	return ok && m.GetNamespace() == names.MetricsNamespace && m.GetName() == names.MetricsServerName
}

func (k *metricsKind) config() addons.MetricsConfig {
	return addons.MetricsConfig{Image: k.o.Metrics.Image, KubeletPort: k.o.Metrics.port()}
}

// sync applies the addon, or removes what the syncer made of it.
func (k *metricsKind) sync(ctx context.Context, _ string) error {
	if !k.o.Metrics.Enabled {
		return k.remove(ctx)
	}
	c := k.config()
	if err := c.Validate(); err != nil {
		return err
	}
	o := addons.MetricsServer(c)
	opts := metav1.ApplyOptions{FieldManager: dnsFieldManager, Force: true}
	ns, tenant := names.MetricsNamespace, k.o.Tenant
	if _, err := tenant.CoreV1().ServiceAccounts(ns).Apply(ctx, o.ServiceAccount, opts); err != nil {
		return fmt.Errorf("applying the metrics ServiceAccount: %w", err)
	}
	if _, err := tenant.CoreV1().Services(ns).Apply(ctx, o.Service, opts); err != nil {
		return fmt.Errorf("applying the metrics Service: %w", err)
	}
	if _, err := tenant.AppsV1().Deployments(ns).Apply(ctx, o.Deployment, opts); err != nil {
		return fmt.Errorf("applying the metrics Deployment: %w", err)
	}
	if k.o.TenantAggregator != nil {
		if _, err := k.o.TenantAggregator.ApiregistrationV1().APIServices().Apply(ctx, o.APIService, opts); err != nil {
			return fmt.Errorf("applying the metrics APIService: %w", err)
		}
	}
	return nil
}

// remove deletes the addon objects that carry the syncer's label: a
// tenant's own metrics-server is not capn's to remove. The APIService
// goes first, so that the tenant apiserver stops routing to a Service
// that is about to go.
func (k *metricsKind) remove(ctx context.Context) error {
	ns, name, tenant := names.MetricsNamespace, names.MetricsServerName, k.o.Tenant
	opts := metav1.DeleteOptions{}
	var objs []addonObject
	if k.apiServices != nil {
		objs = append(objs, addonObject{
			func() (metav1.Object, error) { return k.apiServices.Get(names.MetricsAPIServiceName) },
			func() error {
				return k.o.TenantAggregator.ApiregistrationV1().APIServices().Delete(ctx, names.MetricsAPIServiceName, opts)
			}})
	}
	return removeAddon("metrics", append(objs,
		addonObject{func() (metav1.Object, error) { return k.deployments.Deployments(ns).Get(name) },
			func() error { return tenant.AppsV1().Deployments(ns).Delete(ctx, name, opts) }},
		addonObject{func() (metav1.Object, error) { return k.tenantServices.Services(ns).Get(name) },
			func() error { return tenant.CoreV1().Services(ns).Delete(ctx, name, opts) }},
		addonObject{func() (metav1.Object, error) { return k.serviceAccounts.ServiceAccounts(ns).Get(name) },
			func() error { return tenant.CoreV1().ServiceAccounts(ns).Delete(ctx, name, opts) }},
	))
}

// port is the metrics listener's port, from its bind address.
func (m MetricsOptions) port() int32 {
	_, p, err := net.SplitHostPort(m.BindAddress)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// kubeletEndpoint is where the virtual Nodes say their kubelet is, with
// the resource metrics path while the metrics addon is on.
func (s *Syncer) kubeletEndpoint() *KubeletEndpoint {
	e := s.o.Kubelet.endpoint()
	if e != nil && s.o.Metrics.Enabled {
		e.MetricsPath = kubelet.ResourceMetricsPath
	}
	return e
}

// serveMetrics listens on Metrics.BindAddress and serves the virtual
// Nodes' resource metrics until ctx ends. TLS without a client
// certificate: metrics-server presents its ServiceAccount token, which
// the handler has the tenant review.
func (s *Syncer) serveMetrics(ctx context.Context) error {
	transport, err := rest.TransportFor(s.o.Kubelet.Management)
	if err != nil {
		return fmt.Errorf("resource metrics: management transport: %w", err)
	}
	h, err := kubelet.NewMetricsHandler(kubelet.MetricsOptions{
		Authentication:    s.o.Tenant.AuthenticationV1(),
		Authorization:     s.o.Tenant.AuthorizationV1(),
		WorkloadNamespace: s.o.WorkloadNamespace,
		TenantPod:         s.tenantPodOf,
		HostKubelet:       s.hostKubeletMetrics,
		Transport:         transport,
		Now:               s.now,
	})
	if err != nil {
		return err
	}
	certs, err := newServingCerts(s.o.Kubelet.AdvertiseIP, s.now)
	if err != nil {
		return fmt.Errorf("resource metrics certificate: %w", err)
	}
	l, err := net.Listen("tcp", s.o.Metrics.BindAddress)
	if err != nil {
		return fmt.Errorf("resource metrics: %w", err)
	}
	srv := kubelet.NewHTTPServer(ctx, h, &tls.Config{
		MinVersion: tls.VersionTLS12, GetCertificate: certs.getCertificate, NextProtos: []string{"http/1.1"}})
	go func() {
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Resource metrics server stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}

// tenantPodOf is kubelet.TenantPod over the caches: the host pod must be
// the syncer's, and the tenant pod it records must exist with the UID it
// records, or the host pod is not (or no longer) this tenant's.
func (s *Syncer) tenantPodOf(hostPod string) (string, string, bool) {
	host, err := s.hostPods.Pods(s.o.WorkloadNamespace).Get(hostPod)
	if err != nil || host.Labels[managedByLabel] != names.ManagedByValue {
		return "", "", false
	}
	id, ok := names.IdentityOf(host.Labels, host.Annotations)
	if !ok {
		return "", "", false
	}
	t, err := s.tenantPods.Pods(id.Namespace).Get(id.Name)
	if err != nil || string(t.UID) != id.UID {
		return "", "", false
	}
	return t.Namespace, t.Name, true
}

// hostKubeletMetrics is the /metrics/resource URL of the host node behind
// the tenant's virtual Node node: its first InternalIP and its kubelet
// port.
func (s *Syncer) hostKubeletMetrics(node string) (string, bool) {
	v, err := s.tenantNodes.Get(node)
	if err != nil || v.Labels[VirtualNodeLabel] != "true" {
		return "", false
	}
	host, err := s.hostNodes.Get(node)
	if err != nil {
		return "", false
	}
	port := host.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port == 0 {
		port = 10250
	}
	for _, a := range host.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return "https://" + net.JoinHostPort(a.Address, strconv.Itoa(int(port))) + "/metrics/resource", true
		}
	}
	return "", false
}
