package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/placement"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/registry/nestedcluster"
	"capn.dev/capn/pkg/syncer/addons"
	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/versions"
)

// DataPlaneOptions are the provider's side of Shared data planes: where
// tenant pods may run, how strictly they are checked, how much they may
// use, and which syncer runs them. A tenant's spec.dataPlane can only
// narrow these.
type DataPlaneOptions struct {
	NodeSelector   map[string]string
	Tolerations    []string
	PodSecurity    string
	Quota          map[string]string
	QuotaMax       map[string]string
	SyncerImage    string
	SyncerImages   []string
	RuntimeClasses []string
	// ServiceCIDR overrides the management service range read from its
	// ServiceCIDR objects at start.
	ServiceCIDR string
	// DNSImage is the tenant DNS addon's image where spec.dns.image names
	// none; DNSUpstreams the resolvers it forwards outside names to
	// (none by default: such names get NXDOMAIN and no query leaves it).
	DNSImage     string
	DNSUpstreams []string
	// MetricsImage is the tenant metrics addon's image where
	// spec.metrics.image names none.
	MetricsImage string
	// PullAlways and CachedImages: tenant containers pull with
	// imagePullPolicy Always unless their image is listed (finding 6).
	PullAlways   bool
	CachedImages []string
	// StorageClasses tenant claims may name (empty: the management default).
	StorageClasses []string
}

func defaultDataPlaneOptions() DataPlaneOptions {
	toFlag := func(l corev1.ResourceList) map[string]string {
		out := map[string]string{}
		for k, v := range l {
			out[string(k)] = v.String()
		}
		return out
	}
	return DataPlaneOptions{
		PodSecurity: "baseline",
		Quota:       toFlag(builders.DefaultWorkloadQuota()),
		QuotaMax: map[string]string{"pods": "500", "requests.cpu": "64", "requests.memory": "256Gi",
			"limits.cpu": "128", "limits.memory": "512Gi", "requests.ephemeral-storage": "200Gi", "limits.ephemeral-storage": "400Gi",
			"services": "500", "configmaps": "1000", "secrets": "1000", string(validation.ResourceNetworkPolicies): "500",
			"requests.storage": "1Ti", "persistentvolumeclaims": "100"},
		SyncerImage:  builders.DefaultSyncerImage,
		DNSImage:     versions.CoreDNSImage,
		MetricsImage: versions.MetricsServerImage,
		PullAlways:   true,
	}
}

func (o *DataPlaneOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringToStringVar(&o.NodeSelector, "data-plane-node-selector", o.NodeSelector,
		"Labels of the management nodes that may run tenant pods (Shared data plane); a tenant's spec.dataPlane.nodeSelector is ANDed with it. Empty: every node.")
	fs.StringSliceVar(&o.Tolerations, "data-plane-tolerations", o.Tolerations,
		"Tolerations of every tenant pod on the management cluster, each key[=value][:Effect]. Tenant tolerations only steer the tenant's own scheduler.")
	fs.StringVar(&o.PodSecurity, "tenant-pod-security", o.PodSecurity,
		"Pod Security level tenant pods must meet, checked by the syncer and enforced on the workload namespace: baseline or restricted.")
	fs.StringToStringVar(&o.Quota, "tenant-workload-quota", o.Quota,
		"The workload namespace's ResourceQuota where spec.dataPlane.quota names nothing, resource=quantity.")
	fs.StringToStringVar(&o.QuotaMax, "tenant-workload-quota-max", o.QuotaMax,
		"The largest spec.dataPlane.quota a tenant may ask for, resource=quantity.")
	fs.StringVar(&o.SyncerImage, "syncer-image", o.SyncerImage, "capn-syncer's image.")
	fs.StringSliceVar(&o.SyncerImages, "allowed-syncer-images", o.SyncerImages,
		"Other images spec.syncer.image may name. The syncer holds a management credential, so only images the provider trusts.")
	fs.StringSliceVar(&o.RuntimeClasses, "tenant-runtime-classes", o.RuntimeClasses,
		"RuntimeClasses tenant pods may name; any other is refused.")
	fs.StringVar(&o.DNSImage, "tenant-dns-image", o.DNSImage,
		"The CoreDNS image of a Shared tenant's DNS addon where spec.dns.image names none.")
	fs.StringSliceVar(&o.DNSUpstreams, "tenant-dns-upstreams", o.DNSUpstreams,
		"Resolver IPs the tenants' CoreDNS forwards names outside their cluster to (at most 3). Empty (the default): those names get NXDOMAIN and no query leaves the tenant's DNS.")
	fs.StringVar(&o.MetricsImage, "tenant-metrics-image", o.MetricsImage,
		"The metrics-server image of a Shared tenant's metrics addon where spec.metrics.image names none.")
	fs.BoolVar(&o.PullAlways, "tenant-pull-always", o.PullAlways,
		"Run tenant containers with imagePullPolicy Always, whatever they ask, unless their image is in --tenant-cached-images: the registry then checks the tenant's own credentials before an image already on the node runs, so a tenant cannot run another tenant's private images or the provider's.")
	fs.StringSliceVar(&o.CachedImages, "tenant-cached-images", o.CachedImages,
		"Images tenant pods may run from the node's cache with the pull policy they ask for (the tenant DNS addon's image always may).")
	fs.StringSliceVar(&o.StorageClasses, "tenant-storage-classes", o.StorageClasses,
		"Management StorageClasses tenant PersistentVolumeClaims may name; each appears read-only in the tenant, the management default marked default. Empty: the management cluster's default class alone.")
	fs.StringVar(&o.ServiceCIDR, "management-service-cidr", o.ServiceCIDR,
		"The management cluster's IPv4 service range, which Shared tenants share. Empty: read from its ServiceCIDR objects at start.")
}

func parseQuota(flag string, m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := corev1.ResourceName(k)
		if !slices.Contains(validation.QuotaResources, name) {
			return nil, fmt.Errorf("--%s: resource %q is not one of %v", flag, k, validation.QuotaResources)
		}
		q, err := resource.ParseQuantity(m[k])
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("--%s: %s=%q is not a non-negative quantity", flag, k, m[k])
		}
		out[name] = q
	}
	return out, nil
}

// Validate checks the flags.
func (o DataPlaneOptions) Validate() []error {
	var errs []error
	if es := metav1validation.ValidateLabels(o.NodeSelector, field.NewPath("--data-plane-node-selector")); len(es) > 0 {
		errs = append(errs, es.ToAggregate())
	}
	for _, t := range o.Tolerations {
		if _, err := placement.ParseToleration(t); err != nil {
			errs = append(errs, fmt.Errorf("--data-plane-tolerations %w", err))
		}
	}
	if o.PodSecurity != "baseline" && o.PodSecurity != "restricted" {
		errs = append(errs, fmt.Errorf("--tenant-pod-security must be baseline or restricted, not %q", o.PodSecurity))
	}
	q, err := parseQuota("tenant-workload-quota", o.Quota)
	if err != nil {
		errs = append(errs, err)
	}
	max, err := parseQuota("tenant-workload-quota-max", o.QuotaMax)
	if err != nil {
		errs = append(errs, err)
	}
	if es := validation.ValidateQuotaCaps(q, max, field.NewPath("--tenant-workload-quota")); len(es) > 0 {
		errs = append(errs, es.ToAggregate())
	}
	for _, c := range o.StorageClasses {
		if es := apimachineryvalidation.NameIsDNSSubdomain(c, false); len(es) > 0 {
			errs = append(errs, fmt.Errorf("--tenant-storage-classes: %q: %s", c, strings.Join(es, "; ")))
		}
	}
	if o.SyncerImage == "" {
		errs = append(errs, fmt.Errorf("--syncer-image must be set"))
	}
	if err := (addons.DNSConfig{Image: o.DNSImage, Domain: "cluster.local", Upstreams: o.DNSUpstreams}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--tenant-dns-image, --tenant-dns-upstreams: %w", err))
	}
	for _, msg := range validation.IsImageReference(o.MetricsImage) {
		errs = append(errs, fmt.Errorf("--tenant-metrics-image %q: %s", o.MetricsImage, msg))
	}
	return errs
}

// builders is what the provisioner renders with (flags validated).
func (o DataPlaneOptions) builders() builders.DataPlane {
	q, _ := parseQuota("tenant-workload-quota", o.Quota)
	return builders.DataPlane{NodeSelector: o.NodeSelector, Tolerations: o.Tolerations, PodSecurity: o.PodSecurity,
		Quota: q, SyncerImage: o.SyncerImage, RuntimeClasses: o.RuntimeClasses,
		DNSImage: o.DNSImage, DNSUpstreams: o.DNSUpstreams, MetricsImage: o.MetricsImage, PullAlways: o.PullAlways, CachedImages: o.CachedImages,
		StorageClasses: o.StorageClasses}
}

// policy is what the registry checks tenants against. The service range
// is the flag's, or read from the management cluster (mgmt nil: none).
func (o DataPlaneOptions) policy(ctx context.Context, mgmt kubernetes.Interface) (nestedcluster.DataPlanePolicy, error) {
	max, _ := parseQuota("tenant-workload-quota-max", o.QuotaMax)
	p := nestedcluster.DataPlanePolicy{ServiceCIDR: o.ServiceCIDR, QuotaMax: max,
		SyncerImages: append([]string{o.SyncerImage}, o.SyncerImages...)}
	if p.ServiceCIDR != "" || mgmt == nil {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := mgmt.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, fmt.Errorf("reading the management service range (or set --management-service-cidr): %w", err)
	}
	if p.ServiceCIDR, err = translate.ManagementServiceCIDR(l.Items); err != nil {
		return p, fmt.Errorf("reading the management service range (or set --management-service-cidr): %w", err)
	}
	return p, nil
}
