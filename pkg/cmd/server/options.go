// Package server holds capn-apiserver's command line: Options -> Config ->
// CompletedConfig -> running Server.
package server

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/apiserver"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/controller"
	"capn.dev/capn/pkg/provisioner/pki"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

const etcdPathPrefix = "/registry/capn.dev"

// Values of --provisioner.
const (
	ProvisionerNone = "none"
	ProvisionerPods = "pods"
)

// Options are everything capn-apiserver can be told on its command line.
type Options struct {
	Recommended *genericoptions.RecommendedOptions

	// Standalone serves without a core kube-apiserver: its own token
	// authentication, admin-only authorization, no admission webhooks.
	Standalone bool
	// AdminKubeconfig is where standalone mode writes the admin kubeconfig.
	AdminKubeconfig string
	// EmbeddedEtcdDataDir is used when --etcd-servers is empty.
	EmbeddedEtcdDataDir string
	// AlternateDNS are extra names for the self-signed serving certificate.
	AlternateDNS []string
	// ShutdownDelay keeps serving after SIGTERM while /readyz fails, so that
	// endpoints, kube-proxy and the aggregator stop routing to a replica
	// before its listener closes: without it, a rolling update or a deleted
	// pod fails the requests already on their way to it.
	ShutdownDelay time.Duration

	// Provisioner is how NestedClusters become control planes: "none"
	// (store only) or "pods" (the provisioner controller, experimental).
	Provisioner string
	// ManagementKubeconfig reaches the cluster the control planes run in;
	// empty means the in-cluster config.
	ManagementKubeconfig string
	// Settings are the provisioner's settings, handed to controller.Start as
	// is; its fields are flags of their own (AddFlags).
	controller.Settings
	// MaxKubeconfigExpiration caps what nestedclusters/kubeconfig issues.
	MaxKubeconfigExpiration time.Duration
	// MaxJoinTokenTTL caps the bootstrap tokens nestedclusters/jointoken
	// creates.
	MaxJoinTokenTTL time.Duration
	// BackupDir is where NestedClusterBackups' data is kept; empty keeps
	// none (every backup fails, saying so).
	BackupDir string
	// FinalizerAdminGroups may remove capn's finalizer (break-glass).
	FinalizerAdminGroups []string
	// Placement schedules every control-plane pod.
	Placement PlacementOptions
	// DataPlane is the provider's side of Shared data planes.
	DataPlane DataPlaneOptions
	// Network is what control-plane pods may reach.
	Network NetworkOptions
	// DefaultSleepAfterInactivity is given to NestedClusters created
	// without a sleep setting (0: none).
	DefaultSleepAfterInactivity time.Duration
	// ManagementQPS and ManagementBurst bound capn's client of the
	// management cluster.
	ManagementQPS   float32
	ManagementBurst int

	Out, ErrOut io.Writer
}

// FlagDefaultSleepAfterInactivity names Options.DefaultSleepAfterInactivity.
const FlagDefaultSleepAfterInactivity = "default-sleep-after-inactivity"

// Provisioner client and concurrency defaults. Reads come from caches, so
// the limit bounds writes: creating a cluster takes about 30 (make
// bench-scale), and at 50 QPS a burst of 100 creations waited a minute for
// the client's limiter. The management apiserver's priority and fairness,
// not this limiter, is what protects it from capn.
const (
	DefaultManagementQPS      = 200
	DefaultManagementBurst    = 400
	DefaultProvisionerWorkers = 4
)

// DefaultMaxJoinTokenTTL is --max-join-token-ttl's default. A join token
// is a bearer credential that registers nodes in the tenant until it
// expires, and a node needs it only until its first client certificate is
// issued: an hour covers a manual join and a machine that boots and starts
// its kubelet. Providers whose machines take longer raise it (up to
// validation.MaxJoinTokenTTL); a tenant admin can always make a longer
// token inside the tenant.
const DefaultMaxJoinTokenTTL = time.Hour

// NewOptions returns defaults for the aggregated (production) mode.
func NewOptions(out, errOut io.Writer) *Options {
	o := &Options{
		Recommended: genericoptions.NewRecommendedOptions(etcdPathPrefix,
			apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)),
		EmbeddedEtcdDataDir:     "/var/lib/capn/etcd",
		Provisioner:             ProvisionerPods,
		MaxKubeconfigExpiration: pki.MaxTenantKubeconfigTTL,
		MaxJoinTokenTTL:         DefaultMaxJoinTokenTTL,
		Settings: controller.Settings{
			LeaderElect:          true,
			LeaderElectNamespace: "capn-system",
			CertRenewalThreshold: pki.DefaultRenewalThreshold,
			Workers:              DefaultProvisionerWorkers,
			TemplateRevision:     builders.LatestTemplateRevision,
			OrphanSweep:          true,
		}.Complete(),
		BackupDir:            "/var/lib/capn/backups",
		FinalizerAdminGroups: nestedcluster.DefaultFinalizerAdminGroups,
		ManagementQPS:        DefaultManagementQPS,
		ManagementBurst:      DefaultManagementBurst,
		DataPlane:            defaultDataPlaneOptions(),
		Out:                  out,
		ErrOut:               errOut,
	}
	enableResourceQuota(o.Recommended)
	o.Recommended.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(
		v1alpha1.SchemeGroupVersion, schema.GroupKind{Group: v1alpha1.GroupName})
	// The embedded etcd is the default: an empty server list means "start it".
	o.Recommended.Etcd.StorageConfig.Transport.ServerList = nil
	return o
}

// AddFlags registers every flag.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Recommended.AddFlags(fs)
	fs.BoolVar(&o.Standalone, "standalone", o.Standalone,
		"Serve without a core kube-apiserver: authenticate with a generated admin token written to --admin-kubeconfig, and disable delegated authn/authz, admission webhooks and priority-and-fairness. For local use only.")
	fs.StringVar(&o.AdminKubeconfig, "admin-kubeconfig", o.AdminKubeconfig,
		"In --standalone mode, where to write the admin kubeconfig (default: <cert-dir>/admin.kubeconfig).")
	fs.StringVar(&o.EmbeddedEtcdDataDir, "embedded-etcd-data-dir", o.EmbeddedEtcdDataDir,
		"Data directory of the embedded etcd, used when --etcd-servers is empty. Use --etcd-servers with a real etcd cluster in production.")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay-duration", o.ShutdownDelay,
		"After SIGTERM, keep serving this long with /readyz failing before the listener closes, so that load balancers and the aggregator move to another replica first. Keep the pod's terminationGracePeriodSeconds above it. 0 (the default) suits one replica.")
	fs.StringSliceVar(&o.AlternateDNS, "alternate-dns", o.AlternateDNS,
		"Extra DNS names for the self-signed serving certificate.")
	fs.StringVar(&o.Provisioner, "provisioner", o.Provisioner,
		"How NestedClusters become control planes: \"none\" stores them only; \"pods\" (the default) runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler as pods in the management cluster. Forced to \"none\" in --standalone mode.")
	fs.StringVar(&o.ManagementKubeconfig, "management-kubeconfig", o.ManagementKubeconfig,
		"Kubeconfig of the management cluster the control planes run in (default: the in-cluster config). Used with --provisioner=pods.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"With --provisioner=pods, provision from one replica only, elected through the Lease capn-provisioner in --leader-elect-namespace of the management cluster.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace,
		"Namespace of the provisioner's leader-election Lease in the management cluster, and of the Lease capn-embedded-etcd in the core cluster that lets one replica at a time run with an embedded etcd.")
	fs.DurationVar(&o.CertRenewalThreshold, "cert-renewal-threshold", o.CertRenewalThreshold,
		"With --provisioner=pods, renew a control-plane certificate this long before it expires.")
	fs.DurationVar(&o.MaxKubeconfigExpiration, "max-tenant-kubeconfig-expiration", o.MaxKubeconfigExpiration,
		fmt.Sprintf("With --provisioner=pods, the longest lifetime a nestedclusters/kubeconfig request may ask for (%s to %s). Client certificates cannot be revoked, so keep it short.",
			validation.MinKubeconfigExpiration, pki.MaxTenantKubeconfigTTL))
	fs.DurationVar(&o.MaxJoinTokenTTL, "max-join-token-ttl", o.MaxJoinTokenTTL,
		fmt.Sprintf("With --provisioner=pods, the longest lifetime a nestedclusters/jointoken request may ask for (%s to %s). The token registers nodes in the tenant until it expires or is deleted there; requests that name no lifetime get %s, or this if it is shorter.",
			validation.MinJoinTokenTTL, validation.MaxJoinTokenTTL, validation.DefaultJoinTokenTTL))
	fs.DurationVar(&o.UpgradeStepTimeout, "upgrade-step-timeout", o.UpgradeStepTimeout,
		"With --provisioner=pods, halt a version upgrade (condition Degraded) when a component's new pods are not all ready this long after it started rolling.")
	fs.StringVar(&o.BackupDir, "backup-dir", o.BackupDir,
		"With --provisioner=pods, the directory NestedClusterBackups are kept in (one file per backup, by namespace and UID): a PersistentVolumeClaim of the provider's, mounted into capn-apiserver. Empty keeps no backups.")
	fs.DurationVar(&o.ActivityInterval, "activity-check-interval", o.ActivityInterval,
		"With --provisioner=pods, how often a tenant with spec.sleep.afterInactivity has its apiserver's request counters read (one small request each time); it falls asleep between afterInactivity and afterInactivity plus this after its last request.")
	fs.DurationVar(&o.DefaultSleepAfterInactivity, FlagDefaultSleepAfterInactivity, o.DefaultSleepAfterInactivity,
		fmt.Sprintf("spec.sleep.afterInactivity given to a NestedCluster created with no sleep setting (at least %s; 0, the default, gives none). Such a tenant's control plane sleeps when unused and wakes on its next request, which waits for the wake (seconds: docs/benchmarks.md, bench-wake); the tenant sees the value and may remove it. Existing clusters keep what they have.", validation.MinAfterInactivity))
	fs.StringSliceVar(&o.FinalizerAdminGroups, "finalizer-admin-groups", o.FinalizerAdminGroups,
		"Groups that may remove the capn.dev/provisioner finalizer from a NestedCluster besides capn itself: the provider's break-glass path for a control plane capn cannot delete. Tenants must never be in them; the finalizer then leaves the management namespace to the orphan sweep.")
	fs.StringToStringVar(&o.Placement.NodeSelector, "control-plane-node-selector", o.Placement.NodeSelector,
		"With --provisioner=pods, the nodeSelector of every control-plane pod (etcd, kube-apiserver, kube-controller-manager, kube-scheduler), e.g. node-role.example.com/control-planes=. Tenants cannot set placement. Changing it rolls every tenant's pods.")
	fs.StringSliceVar(&o.Placement.Tolerations, "control-plane-tolerations", o.Placement.Tolerations,
		"With --provisioner=pods, tolerations of every control-plane pod, each key[=value][:NoSchedule|PreferNoSchedule|NoExecute] (no value: Exists; no effect: all effects).")
	fs.StringVar(&o.Placement.PriorityClassName, "control-plane-priority-class", o.Placement.PriorityClassName,
		"With --provisioner=pods, the PriorityClass of every control-plane pod.")
	fs.StringToStringVar(&o.Placement.CPURequestFloor, FlagCPURequestFloor, o.Placement.CPURequestFloor,
		fmt.Sprintf("With --provisioner=pods, the least CPU each component requests by default, e.g. %s=100m: from template revision %d capn requests about what an idle tenant uses, and a provider whose tenants are busier raises it here. A tenant's spec.<component>.resources is not floored. Changing it rolls every tenant's pods.", v1alpha1.ComponentAPIServer, builders.IdleRequestsTemplateRevision))
	fs.StringToStringVar(&o.Placement.MemoryRequestFloor, FlagMemoryRequestFloor, o.Placement.MemoryRequestFloor,
		"With --provisioner=pods, the least memory each component requests by default (component=quantity,...), as --"+FlagCPURequestFloor+".")
	o.DataPlane.AddFlags(fs)
	o.Network.AddFlags(fs)
	fs.IntVar(&o.TemplateRevision, "template-revision", o.TemplateRevision,
		fmt.Sprintf("With --provisioner=pods, the revision of capn's own pod-template defaults (2: probe timing; 3: kube-apiserver accepts bootstrap tokens, so nodes can join) that new control-plane workloads get, 1 to %d; an existing workload moves to it only when its pods roll for another reason. Pin an older revision to hold a capn release's new defaults back.", builders.LatestTemplateRevision))
	fs.Float32Var(&o.ManagementQPS, "management-qps", o.ManagementQPS,
		"With --provisioner=pods, queries per second capn's client may send the management cluster (client-go's own default, 5, is too few for a resync of many tenants).")
	fs.IntVar(&o.ManagementBurst, "management-burst", o.ManagementBurst,
		"With --provisioner=pods, the burst above --management-qps.")
	fs.IntVar(&o.Workers, "provisioner-workers", o.Workers,
		"With --provisioner=pods, how many NestedClusters are synced at once.")
	fs.BoolVar(&o.OrphanSweep, "orphan-sweep", o.OrphanSweep,
		"With --provisioner=pods, delete management namespaces whose owning NestedCluster (by UID) has been gone for --orphan-grace-period. Never sweeps while capn's store holds no NestedClusters, and holds when half the namespaces look orphaned at once.")
	fs.DurationVar(&o.Sweep.GracePeriod, "orphan-grace-period", o.Sweep.GracePeriod,
		"How long a management namespace's owner must be absent before the orphan sweep deletes it.")
	fs.DurationVar(&o.Sweep.Period, "orphan-sweep-period", o.Sweep.Period,
		"How often the orphan sweep runs.")
	fs.IntVar(&o.Sweep.MaxDeletions, "orphan-sweep-max-deletions", o.Sweep.MaxDeletions,
		"At most this many orphaned namespaces are deleted per --orphan-sweep-period.")
}

// UseEmbeddedEtcd reports whether the server must start its own etcd.
func (o *Options) UseEmbeddedEtcd() bool {
	return len(o.Recommended.Etcd.StorageConfig.Transport.ServerList) == 0
}

// Complete fills in values derived from other flags and switches off the
// parts of the server that need a core kube-apiserver in standalone mode.
func (o *Options) Complete() error {
	if o.Standalone {
		// Standalone has no management cluster to provision into.
		o.Provisioner = ProvisionerNone
		r := o.Recommended
		r.Authentication = nil
		r.Authorization = nil
		r.CoreAPI = nil
		r.Admission = nil
		r.Features.EnablePriorityAndFairness = false
		if o.AdminKubeconfig == "" {
			o.AdminKubeconfig = filepath.Join(r.SecureServing.ServerCert.CertDirectory, "admin.kubeconfig")
		}
	}
	return nil
}

// Validate reports every bad flag at once.
func (o *Options) Validate() error {
	r := o.Recommended
	var errs []error
	// RecommendedOptions.Validate would demand --etcd-servers; the embedded
	// etcd makes it optional, so validate the parts one by one.
	if !o.UseEmbeddedEtcd() {
		errs = append(errs, r.Etcd.Validate()...)
	} else if o.EmbeddedEtcdDataDir == "" {
		errs = append(errs, fmt.Errorf("--embedded-etcd-data-dir must be set when --etcd-servers is empty"))
	}
	if d := o.DefaultSleepAfterInactivity; d != 0 && d < validation.MinAfterInactivity {
		errs = append(errs, fmt.Errorf("--%s must be 0 or at least %s, not %s", FlagDefaultSleepAfterInactivity, validation.MinAfterInactivity, d))
	}
	if o.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay-duration must not be negative"))
	}
	errs = append(errs, r.SecureServing.Validate()...)
	errs = append(errs, r.Authentication.Validate()...)
	errs = append(errs, r.Authorization.Validate()...)
	errs = append(errs, r.Audit.Validate()...)
	errs = append(errs, r.Features.Validate()...)
	errs = append(errs, r.CoreAPI.Validate()...)
	errs = append(errs, r.Admission.Validate()...)
	errs = append(errs, r.EgressSelector.Validate()...)
	errs = append(errs, r.Traces.Validate()...)
	if o.Standalone && r.SecureServing.BindPort == 0 {
		errs = append(errs, fmt.Errorf("--secure-port must not be 0 in --standalone mode: the admin kubeconfig needs a fixed port"))
	}
	switch o.Provisioner {
	case ProvisionerNone:
	case ProvisionerPods:
		if o.CertRenewalThreshold < 0 {
			errs = append(errs, fmt.Errorf("--cert-renewal-threshold must not be negative"))
		}
		// A threshold at or past the leaves' lifetime would renew every
		// certificate on every sync, rolling every tenant each time.
		if o.CertRenewalThreshold >= pki.DefaultLeafValidity {
			errs = append(errs, fmt.Errorf("--cert-renewal-threshold must be shorter than the certificates' lifetime (%s), not %s", pki.DefaultLeafValidity, o.CertRenewalThreshold))
		}
		if o.UpgradeStepTimeout <= 0 {
			errs = append(errs, fmt.Errorf("--upgrade-step-timeout must be positive"))
		}
		if o.ActivityInterval < time.Second {
			errs = append(errs, fmt.Errorf("--activity-check-interval must be at least 1s, not %s", o.ActivityInterval))
		}
		if o.LeaderElect && o.LeaderElectNamespace == "" {
			errs = append(errs, fmt.Errorf("--leader-elect-namespace must be set with --leader-elect"))
		}
		if o.ManagementQPS <= 0 || o.ManagementBurst <= 0 || o.Workers <= 0 {
			errs = append(errs, fmt.Errorf("--management-qps, --management-burst and --provisioner-workers must be positive"))
		}
		if o.TemplateRevision < 1 || o.TemplateRevision > builders.LatestTemplateRevision {
			errs = append(errs, fmt.Errorf("--template-revision must be from 1 to %d, not %d", builders.LatestTemplateRevision, o.TemplateRevision))
		}
		if _, err := o.Placement.Placement(); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, o.DataPlane.Validate()...)
		errs = append(errs, o.Network.Validate()...)
		if o.OrphanSweep && (o.Sweep.GracePeriod <= 0 || o.Sweep.Period <= 0 || o.Sweep.MaxDeletions <= 0) {
			errs = append(errs, fmt.Errorf("--orphan-grace-period, --orphan-sweep-period and --orphan-sweep-max-deletions must be positive with --orphan-sweep"))
		}
		if m := o.MaxKubeconfigExpiration; m < validation.MinKubeconfigExpiration || m > pki.MaxTenantKubeconfigTTL {
			errs = append(errs, fmt.Errorf("--max-tenant-kubeconfig-expiration must be between %s and %s, not %s",
				validation.MinKubeconfigExpiration, pki.MaxTenantKubeconfigTTL, m))
		}
		if m := o.MaxJoinTokenTTL; m < validation.MinJoinTokenTTL || m > validation.MaxJoinTokenTTL {
			errs = append(errs, fmt.Errorf("--max-join-token-ttl must be between %s and %s, not %s",
				validation.MinJoinTokenTTL, validation.MaxJoinTokenTTL, m))
		}
	default:
		errs = append(errs, fmt.Errorf("--provisioner must be %q or %q, not %q", ProvisionerNone, ProvisionerPods, o.Provisioner))
	}
	return utilerrors.NewAggregate(errs)
}
