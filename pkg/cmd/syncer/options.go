// Package syncer holds capn-syncer's command line: each flag's name,
// default and help are written here once. capn-syncer parses them
// (AddFlags), the provisioner renders the flags it sets into the syncer's
// container (Args), and validation refuses a tenant's extraArgs that name
// a flag capn owns. It imports neither the syncer nor the provisioner, so
// both may use it.
package syncer

import (
	"flag"
	"maps"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/pkg/versions"
)

// Flag names.
const (
	FlagTenantKubeconfig          = "tenant-kubeconfig"
	FlagHostKubeconfig            = "host-kubeconfig"
	FlagWorkloadNamespace         = "workload-namespace"
	FlagTenantAPIServerAddress    = "tenant-apiserver-address"
	FlagTenantNameserver          = "tenant-nameserver"
	FlagTenantDNSDomain           = "tenant-dns-domain"
	FlagTenantPodSecurity         = "tenant-pod-security"
	FlagHostNodeSelector          = "host-node-selector"
	FlagHostTolerations           = "host-tolerations"
	FlagAllowedRuntimeClasses     = "allowed-runtime-classes"
	FlagMaxTerminationGracePeriod = "max-termination-grace-period"
	FlagAllowNetRaw               = "allow-net-raw"
	FlagPullAlways                = "pull-always"
	FlagCachedImages              = "cached-images"
	FlagMaxEmptyDirSize           = "max-empty-dir-size"
	FlagMaxCopiedBytes            = "max-copied-bytes"
	FlagWorkers                   = "workers"
	FlagQPS                       = "qps"
	FlagBurst                     = "burst"
	FlagLeaderElect               = "leader-elect"
	FlagLeaderElectNamespace      = "leader-elect-namespace"
	FlagHealthAddress             = "health-address"
	FlagWebhookBindAddress        = "webhook-bind-address"
	FlagWebhookAdvertiseAddress   = "webhook-advertise-address"
	FlagWebhookRequireClientCert  = "webhook-require-client-cert"
	FlagKubeletBindAddress        = "kubelet-bind-address"
	FlagKubeletAdvertiseAddress   = "kubelet-advertise-address"
	FlagDNSAddon                  = "dns-addon"
	FlagDNSImage                  = "dns-image"
	FlagDNSUpstreams              = "dns-upstreams"
	FlagStorageClasses            = "storage-classes"
	FlagMetricsAddon              = "metrics-addon"
	FlagMetricsImage              = "metrics-image"
	FlagKubeletMetricsBindAddress = "kubelet-metrics-bind-address"
)

// The ports capn runs capn-syncer with: the defaults of the bind
// addresses, and what the provisioner's Service, probes and NetworkPolicy
// target.
const (
	HealthPort  = 10270
	WebhookPort = 10271
	KubeletPort = 10250
	// KubeletMetricsPort serves only the virtual Nodes' resource metrics,
	// to the tenant's metrics-server: a port of its own, so that tenant
	// pods may reach it while the kubelet port (exec, logs) stays the
	// tenant apiserver's alone.
	KubeletMetricsPort = 10272
)

// Options are capn-syncer's flag values, as parsed: lists stay
// comma-separated strings and addresses host:port strings; capn-syncer
// checks and converts them.
type Options struct {
	TenantKubeconfig          string
	HostKubeconfig            string
	WorkloadNamespace         string
	TenantAPIServerAddress    string
	TenantNameserver          string
	TenantDNSDomain           string
	TenantPodSecurity         string
	HostNodeSelector          string
	HostTolerations           string
	AllowedRuntimeClasses     string
	MaxTerminationGracePeriod int64
	AllowNetRaw               bool
	PullAlways                bool
	CachedImages              string
	MaxEmptyDirSize           string
	MaxCopiedBytes            string
	Workers                   int
	QPS                       float64
	Burst                     int
	LeaderElect               bool
	LeaderElectNamespace      string
	HealthAddress             string
	WebhookBindAddress        string
	WebhookAdvertiseAddress   string
	WebhookRequireClientCert  bool
	KubeletBindAddress        string
	KubeletAdvertiseAddress   string
	DNSAddon                  bool
	DNSImage                  string
	DNSUpstreams              string
	StorageClasses            string
	MetricsAddon              bool
	MetricsImage              string
	KubeletMetricsBindAddress string
}

// AddFlags binds o to fs, with o's values as the defaults; see Defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.TenantKubeconfig, FlagTenantKubeconfig, o.TenantKubeconfig, "Kubeconfig of the tenant apiserver (required).")
	fs.StringVar(&o.HostKubeconfig, FlagHostKubeconfig, o.HostKubeconfig, "Kubeconfig of the management cluster; empty means in-cluster.")
	fs.StringVar(&o.WorkloadNamespace, FlagWorkloadNamespace, o.WorkloadNamespace, "The management namespace tenant pods run in (required); the syncer touches nothing else there but Nodes, which it reads.")
	fs.StringVar(&o.TenantAPIServerAddress, FlagTenantAPIServerAddress, o.TenantAPIServerAddress, "host:port at which host pods reach the tenant apiserver (required): their KUBERNETES_SERVICE_HOST/PORT and kubernetes.default.")
	fs.StringVar(&o.TenantNameserver, FlagTenantNameserver, o.TenantNameserver, "The tenant DNS server host pods resolve through. Never the node's resolv.conf, which may forward off the machine.")
	fs.StringVar(&o.TenantDNSDomain, FlagTenantDNSDomain, o.TenantDNSDomain, "The tenant's cluster domain.")
	fs.StringVar(&o.TenantPodSecurity, FlagTenantPodSecurity, o.TenantPodSecurity, "Pod Security level tenant pods must meet: baseline or restricted.")
	fs.StringVar(&o.HostNodeSelector, FlagHostNodeSelector, o.HostNodeSelector, "Label selector of the management nodes that get a virtual Node and run tenant pods.")
	fs.StringVar(&o.HostTolerations, FlagHostTolerations, o.HostTolerations, "Comma-separated tolerations of every host pod, each key[=value][:Effect].")
	fs.StringVar(&o.AllowedRuntimeClasses, FlagAllowedRuntimeClasses, o.AllowedRuntimeClasses, "Comma-separated runtime classes tenant pods may name.")
	fs.Int64Var(&o.MaxTerminationGracePeriod, FlagMaxTerminationGracePeriod, o.MaxTerminationGracePeriod, "Largest terminationGracePeriodSeconds a tenant pod may ask for.")
	fs.BoolVar(&o.PullAlways, FlagPullAlways, o.PullAlways, "Run every tenant container whose image is not in --"+FlagCachedImages+" with imagePullPolicy Always, so the registry checks the tenant's credentials before a cached image runs.")
	fs.StringVar(&o.CachedImages, FlagCachedImages, o.CachedImages, "Comma-separated images tenant pods may run from the node's cache as they ask; the DNS addon's image always may.")
	fs.BoolVar(&o.AllowNetRaw, FlagAllowNetRaw, o.AllowNetRaw, "Keep the container runtime's default CAP_NET_RAW in tenant containers; false drops it from every host container, so a tenant cannot forge packets on a network it shares with other tenants.")
	fs.StringVar(&o.MaxEmptyDirSize, FlagMaxEmptyDirSize, o.MaxEmptyDirSize, "Largest emptyDir sizeLimit a tenant pod may ask for (a quantity), and the sizeLimit of emptyDirs that set none.")
	fs.StringVar(&o.MaxCopiedBytes, FlagMaxCopiedBytes, o.MaxCopiedBytes, "Bound on the total bytes (keys and values, a quantity) of the tenant ConfigMaps and Secrets copied to the management cluster; a pod that would exceed it is refused, and a copy that would grow past it keeps its old content.")
	fs.IntVar(&o.Workers, FlagWorkers, o.Workers, "Workers per queue.")
	fs.Float64Var(&o.QPS, FlagQPS, o.QPS, "Client QPS to each apiserver.")
	fs.IntVar(&o.Burst, FlagBurst, o.Burst, "Client burst to each apiserver.")
	fs.BoolVar(&o.LeaderElect, FlagLeaderElect, o.LeaderElect, "Sync from one replica only, elected through the Lease capn-syncer in --"+FlagLeaderElectNamespace+" of the tenant.")
	fs.StringVar(&o.LeaderElectNamespace, FlagLeaderElectNamespace, o.LeaderElectNamespace, "Tenant namespace of the leader-election Lease.")
	fs.StringVar(&o.HealthAddress, FlagHealthAddress, o.HealthAddress, "host:port serving /healthz and /readyz over HTTP; empty serves none. /readyz is ok once this replica syncs (caches synced) or stands by as a non-leader.")
	fs.StringVar(&o.WebhookBindAddress, FlagWebhookBindAddress, o.WebhookBindAddress, "host:port of the HTTPS server for the tenant's Service admission webhook.")
	fs.BoolVar(&o.WebhookRequireClientCert, FlagWebhookRequireClientCert, o.WebhookRequireClientCert, "Serve the Service webhook only to the tenant apiserver: a client certificate signed by the tenant CA, with the apiserver's kubelet client name. capn sets it once the tenant apiserver presents one.")
	fs.StringVar(&o.WebhookAdvertiseAddress, FlagWebhookAdvertiseAddress, o.WebhookAdvertiseAddress, "host:port the tenant apiserver calls the Service webhook at (the leader registers it in the tenant); empty: no webhook, tenant Services keep the tenant's own ClusterIP allocation.")
	fs.StringVar(&o.KubeletBindAddress, FlagKubeletBindAddress, o.KubeletBindAddress, "host:port of the HTTPS server for the virtual Nodes' kubelet API (logs, exec, attach, port-forward), which the leader serves.")
	fs.StringVar(&o.KubeletAdvertiseAddress, FlagKubeletAdvertiseAddress, o.KubeletAdvertiseAddress, "IP:port the tenant apiserver reaches the kubelet API at: the virtual Nodes' InternalIP and kubelet port. Empty: virtual Nodes keep the host nodes' addresses and no kubelet API is served.")
	fs.BoolVar(&o.DNSAddon, FlagDNSAddon, o.DNSAddon, "Keep the CoreDNS addon (kube-system/coredns behind the Service kube-dns) in the tenant and point host pods at it instead of --"+FlagTenantNameserver+"; false removes the addon the syncer made.")
	fs.StringVar(&o.DNSImage, FlagDNSImage, o.DNSImage, "The CoreDNS image of the DNS addon.")
	fs.StringVar(&o.StorageClasses, FlagStorageClasses, o.StorageClasses, "Comma-separated management StorageClasses tenant PersistentVolumeClaims may name; they appear read-only in the tenant. Empty: the management cluster's default class.")
	fs.BoolVar(&o.MetricsAddon, FlagMetricsAddon, o.MetricsAddon, "Keep the metrics-server addon (kube-system/metrics-server behind the APIService v1beta1.metrics.k8s.io) in the tenant and serve the virtual Nodes' /metrics/resource to it on --"+FlagKubeletMetricsBindAddress+"; false removes the addon the syncer made.")
	fs.StringVar(&o.MetricsImage, FlagMetricsImage, o.MetricsImage, "The metrics-server image of the metrics addon.")
	fs.StringVar(&o.KubeletMetricsBindAddress, FlagKubeletMetricsBindAddress, o.KubeletMetricsBindAddress, "host:port of the HTTPS server for the virtual Nodes' resource metrics, served to the tenant's metrics-server (a bearer token the tenant apiserver authorizes for nodes/metrics) while --"+FlagMetricsAddon+" is on.")
	fs.StringVar(&o.DNSUpstreams, FlagDNSUpstreams, o.DNSUpstreams, "Comma-separated resolver IPs the DNS addon forwards names outside the cluster to; empty answers them NXDOMAIN, so no query leaves the addon.")
}

// Defaults are capn-syncer's flag defaults.
func Defaults() *Options {
	return &Options{
		TenantNameserver:          "127.0.0.1",
		TenantDNSDomain:           "cluster.local",
		TenantPodSecurity:         "baseline",
		MaxTerminationGracePeriod: names.MaxGracePeriodSeconds,
		MaxEmptyDirSize:           names.MaxEmptyDirSize,
		MaxCopiedBytes:            names.MaxCopiedBytes,
		Workers:                   2,
		QPS:                       50,
		Burst:                     100,
		LeaderElectNamespace:      metav1.NamespaceSystem,
		WebhookBindAddress:        ":" + strconv.Itoa(WebhookPort),
		KubeletBindAddress:        ":" + strconv.Itoa(KubeletPort),
		DNSImage:                  versions.CoreDNSImage,
		MetricsImage:              versions.MetricsServerImage,
		KubeletMetricsBindAddress: ":" + strconv.Itoa(KubeletMetricsPort),
	}
}

// Args renders flags (name to value, names from this package or a
// tenant's allowed extraArgs) as capn-syncer's arguments, sorted by name
// so that the same flags always render the same pod template.
func Args(flags map[string]string) []string {
	args := make([]string, 0, len(flags))
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		args = append(args, "--"+k+"="+flags[k])
	}
	return args
}
