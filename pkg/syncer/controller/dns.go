package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/syncer/addons"
	"capn.dev/capn/pkg/tenant/names"
)

// DNSOptions configure the tenant's cluster DNS addon.
type DNSOptions struct {
	// Enabled keeps CoreDNS in the tenant's kube-system and points host
	// pods at its Service. Disabled, the syncer removes the addon it made
	// and host pods get Options.Pod.Nameserver.
	Enabled bool
	// Image is CoreDNS's image.
	Image string
	// Upstreams are the provider's resolvers for names outside the
	// cluster; empty (the default) forwards nothing.
	Upstreams []string
}

// dnsKey is the dns queue's one key.
const dnsKey = "dns"

// dnsFieldManager owns the addon's fields in the tenant.
const dnsFieldManager = "capn-syncer-addons"

// errNoClusterDNS is why a pod waits: its resolv.conf needs kube-dns's
// address, which exists once the addon's Service does.
var errNoClusterDNS = errors.New("waiting for the cluster DNS Service " + names.DNSNamespace + "/" + names.DNSServiceName + " to have an address")

// dnsKind applies the tenant's cluster DNS addon (or removes it). It
// stays on server-side apply rather than applyIfChanged: the addon's
// builders (pkg/syncer/addons) are apply configurations, and a forced
// apply is what gives capn's fields back after a tenant edit while leaving
// the fields capn does not set to the tenant, which a compare of whole
// objects cannot tell apart. It runs only when an addon object or the
// webhook configuration changed, so an idle tenant makes no applies.
type dnsKind struct {
	*Syncer
	q               queue
	deployments     appslisters.DeploymentLister
	serviceAccounts corelisters.ServiceAccountLister

	// ip is kube-dns's last address, reused when the Service is made
	// again: running pods' resolv.conf names it. Only sync reads and
	// writes it, and the workqueue never runs one key twice at once.
	ip string
}

func (k *dnsKind) name() string { return kindDNS }

// register watches the addon's Deployment and ServiceAccount through the
// syncer's kube-system addon informers (its ConfigMap and Service are in
// the cluster-wide caches already, and configMapKind and serviceKind
// enqueue dnsKey for them). An object whose managed-by label a tenant
// removes looks deleted, and is applied again.
func (k *dnsKind) register(r *registrar) {
	k.q = r.queue(kindDNS)
	k.deployments, k.serviceAccounts = k.addonDeployments(r, isDNSObject, func() { k.q.Add(dnsKey) })
	r.beforeSync(func(ctx context.Context) error {
		k.q.Add(dnsKey)
		return nil
	})
}

// isDNSObject reports whether obj is one of the addon's objects, by
// namespace and name: the ConfigMap and Service informers see every
// namespace.
func isDNSObject(obj any) bool {
	m, ok := obj.(metav1.Object)
	if !ok || m.GetNamespace() != names.DNSNamespace {
		return false
	}
	switch m.GetName() {
	case names.DNSName, names.DNSServiceName:
		return true
	}
	return false
}

// sync applies the addon, or removes what the syncer made of it when DNS
// is off. Applies are server-side and forced: a field capn sets that a
// tenant edited comes back; fields capn does not set are the tenant's.
func (k *dnsKind) sync(ctx context.Context, _ string) error {
	if !k.o.DNS.Enabled {
		return k.removeDNS(ctx)
	}
	c := addons.DNSConfig{Image: k.o.DNS.Image, Domain: k.o.Pod.DNSDomain, Upstreams: k.o.DNS.Upstreams, ClusterIP: k.ip}
	if err := c.Validate(); err != nil {
		return err
	}
	live, err := k.tenantServices.Services(names.DNSNamespace).Get(names.DNSServiceName)
	switch {
	case err == nil && usableIP(live.Spec.ClusterIP):
		c.ClusterIP = live.Spec.ClusterIP
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return err
	}
	if live == nil && !k.webhookRegistered() {
		// Made before the webhook is in place, kube-dns would get its
		// address from the tenant's allocator, which the host may have
		// given to another Service: the webhook's registration enqueues
		// this again.
		return nil
	}
	o := addons.CoreDNS(c)
	opts := metav1.ApplyOptions{FieldManager: dnsFieldManager, Force: true}
	tenant := k.o.Tenant.CoreV1()
	if _, err := tenant.ServiceAccounts(names.DNSNamespace).Apply(ctx, o.ServiceAccount, opts); err != nil {
		return fmt.Errorf("applying the DNS ServiceAccount: %w", err)
	}
	if _, err := tenant.ConfigMaps(names.DNSNamespace).Apply(ctx, o.ConfigMap, opts); err != nil {
		return fmt.Errorf("applying the DNS ConfigMap: %w", err)
	}
	svc, err := tenant.Services(names.DNSNamespace).Apply(ctx, o.Service, opts)
	if err != nil && c.ClusterIP != "" && live == nil && apierrors.IsInvalid(err) {
		if prev, gerr := k.hostServices.Services(k.o.WorkloadNamespace).Get(names.Host(names.DNSNamespace, names.DNSServiceName)); gerr == nil && prev.Spec.ClusterIP == c.ClusterIP {
			// The tenant's previous kube-dns still holds the address on the
			// host, and the collector is removing it (its tenant object is
			// gone): try again then, so the address running pods'
			// resolv.conf names stays kube-dns's.
			return fmt.Errorf("the cluster DNS address %s is still held by the previous host kube-dns: %w", c.ClusterIP, err)
		}
		// The address kube-dns had was given to another Service on the
		// host meanwhile: take a new one. Pods made before keep the old
		// one in their resolv.conf until they are recreated.
		klog.FromContext(ctx).Info("The cluster DNS address is taken; allocating another", "previous", c.ClusterIP)
		o.Service.Spec.ClusterIP = nil
		svc, err = tenant.Services(names.DNSNamespace).Apply(ctx, o.Service, opts)
	}
	if err != nil {
		return fmt.Errorf("applying the DNS Service: %w", err)
	}
	if usableIP(svc.Spec.ClusterIP) {
		k.ip = svc.Spec.ClusterIP
	}
	if _, err := k.o.Tenant.AppsV1().Deployments(names.DNSNamespace).Apply(ctx, o.Deployment, opts); err != nil {
		return fmt.Errorf("applying the DNS Deployment: %w", err)
	}
	return nil
}

// removeDNS deletes the addon objects that carry the syncer's label: a
// tenant's own kube-dns or coredns is not capn's to remove.
func (k *dnsKind) removeDNS(ctx context.Context) error {
	ns, tenant := names.DNSNamespace, k.o.Tenant
	opts := metav1.DeleteOptions{}
	return removeAddon("DNS", []addonObject{
		{func() (metav1.Object, error) { return k.deployments.Deployments(ns).Get(names.DNSName) },
			func() error { return tenant.AppsV1().Deployments(ns).Delete(ctx, names.DNSName, opts) }},
		{func() (metav1.Object, error) { return k.tenantServices.Services(ns).Get(names.DNSServiceName) },
			func() error { return tenant.CoreV1().Services(ns).Delete(ctx, names.DNSServiceName, opts) }},
		{func() (metav1.Object, error) { return k.tenantConfigMaps.ConfigMaps(ns).Get(names.DNSName) },
			func() error { return tenant.CoreV1().ConfigMaps(ns).Delete(ctx, names.DNSName, opts) }},
		{func() (metav1.Object, error) { return k.serviceAccounts.ServiceAccounts(ns).Get(names.DNSName) },
			func() error { return tenant.CoreV1().ServiceAccounts(ns).Delete(ctx, names.DNSName, opts) }},
	})
}

// webhookRegistered reports whether the tenant's Service webhook
// configuration points at this syncer (true when there is no webhook).
func (s *Syncer) webhookRegistered() bool {
	if !s.o.Webhook.enabled() {
		return true
	}
	cur, err := s.tenantWebhooks.Get(WebhookConfigurationName)
	return err == nil && equality.Semantic.DeepEqual(cur.Webhooks, s.webhookConfiguration().Webhooks)
}

func usableIP(ip string) bool { return ip != "" && ip != corev1.ClusterIPNone }

// nameserver is the resolver a host pod gets: kube-dns's address while the
// addon is on (and an error until it has one), the configured one
// otherwise.
func (s *Syncer) nameserver() (string, error) {
	if !s.o.DNS.Enabled {
		return s.o.Pod.Nameserver, nil
	}
	svc, err := s.tenantServices.Services(names.DNSNamespace).Get(names.DNSServiceName)
	if err == nil && usableIP(svc.Spec.ClusterIP) {
		return svc.Spec.ClusterIP, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	return "", errNoClusterDNS
}
