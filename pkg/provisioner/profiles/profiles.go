// Package profiles renders the command-line flags of a tenant control plane's
// components for one supported Kubernetes minor. One shared table covers
// what every minor accepts; a minor's override adds, replaces or drops flags
// where a release changed them, so adding a minor to versions.Supported is a
// one-entry change here (and a test fails until it is made).
package profiles

import (
	"fmt"
	"sort"
	"strings"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/versions"
)

// Flags maps flag names (no dashes) to values.
type Flags map[string]string

// Args renders f as sorted "--name=value" arguments, so the same input
// always yields the same pod template and no rollout is triggered by map
// iteration order.
func (f Flags) Args() []string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]string, 0, len(keys))
	for _, k := range keys {
		args = append(args, "--"+k+"="+f[k])
	}
	return args
}

// Params are the per-cluster inputs of the flags. File paths, ports and
// env names are constants of this package (see paths.go): the builders
// mount exactly there.
type Params struct {
	// EtcdServers are kube-apiserver's etcd client URLs.
	EtcdServers []string
	// EtcdPrefix is kube-apiserver's etcd key prefix.
	EtcdPrefix string
	// EtcdCompactionDisabled: kube-apiserver does not compact etcd. A
	// pooled etcd is compacted by its operator: one tenant's apiserver
	// compacting would compact every tenant's history, and etcd refuses
	// compaction to anyone but root when auth is on.
	EtcdCompactionDisabled bool
	// ServiceCIDR, PodCIDR and DNSDomain come from spec.clusterNetwork.
	ServiceCIDR, PodCIDR, DNSDomain string
	// LeaderElect is on for kube-controller-manager and kube-scheduler
	// (the builders set it at every replica count).
	LeaderElect bool
	// SharedDataPlane: the tenant shares the management cluster's service
	// range (spec.dataPlane.mode Shared).
	SharedDataPlane bool
	// NodeJoin: kube-apiserver accepts bootstrap tokens and answers
	// anonymous GETs of kube-public/cluster-info, so real nodes can join
	// (TLS bootstrap). The builders set it from template revision 3 on, so
	// a capn upgrade does not roll every tenant apiserver to add it.
	NodeJoin bool
	// WebhookClientCert: kube-apiserver presents its kubelet client
	// certificate to admission webhooks (--admission-control-config-file),
	// so capn-syncer's Service webhook can require it (red-team finding
	// 2). The builders set it for Shared tenants from template revision 5
	// on.
	WebhookClientCert bool

	// EtcdInitialCluster, EtcdInitialAdvertisePeerURLs and
	// EtcdAdvertiseClientURLs describe the etcd membership; they may
	// reference $(CAPN_POD_NAME) and $(CAPN_POD_IP).
	EtcdInitialCluster           string
	EtcdInitialAdvertisePeerURLs string
	EtcdAdvertiseClientURLs      string
	// EtcdClusterToken keeps members of different clusters from joining
	// each other by mistake.
	EtcdClusterToken string
	// EtcdQuotaBackendBytes caps etcd's database; 0 keeps etcd's default.
	EtcdQuotaBackendBytes int64
}

// override is what one minor changes relative to the shared table.
type override struct {
	set   map[string]Flags    // component -> flags added or replaced
	unset map[string][]string // component -> flags dropped
}

// minors has one entry per supported minor. The generated flags were
// checked against the k8s.io/kubernetes v1.36.3 and v1.37.2 sources: every
// one exists with the same meaning in both, so neither needs an override
// yet. (1.37 adds kube-controller-manager --concurrent-disruption-syncs,
// which capn does not set.)
var minors = map[int]override{
	36: {},
	37: {},
}

// Profile renders flags for one Kubernetes minor.
type Profile struct {
	// Minor is the Kubernetes minor within major 1.
	Minor int
	o     override
}

// For returns the profile for v's minor, or an error when v is not a
// supported version or (a bug) a supported minor has no profile.
func For(v versions.Version) (Profile, error) {
	if !versions.IsSupported(v) {
		return Profile{}, fmt.Errorf("version %s is not supported; supported minors: %s", v, strings.Join(versions.SupportedMinors(), ", "))
	}
	o, ok := minors[v.Minor]
	if !ok {
		return Profile{}, fmt.Errorf("no flag profile for v1.%d", v.Minor)
	}
	return Profile{Minor: v.Minor, o: o}, nil
}

// Flags renders the base flags of a kube-* component
// (v1alpha1.ComponentAPIServer, ...ControllerManager, ...Scheduler).
// etcd is not here: see EtcdFlags.
func (p Profile) Flags(component string, in Params) (Flags, error) {
	var f Flags
	switch component {
	case v1alpha1.ComponentAPIServer:
		f = apiServerFlags(in)
	case v1alpha1.ComponentControllerManager:
		f = controllerManagerFlags(in)
	case v1alpha1.ComponentScheduler:
		f = schedulerFlags(in)
	default:
		return nil, fmt.Errorf("no flag profile for component %q", component)
	}
	for k, v := range p.o.set[component] {
		f[k] = v
	}
	for _, k := range p.o.unset[component] {
		delete(f, k)
	}
	return f, nil
}

// Merge returns base with the user's extraArgs applied. The API already
// refuses owned flags; refusing them here too keeps a NestedCluster that
// bypassed validation (an old stored object, a bug) from rewiring its
// control plane.
func Merge(component string, base Flags, extra map[string]string) (Flags, error) {
	out := make(Flags, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" || strings.HasPrefix(k, "-") || strings.ContainsAny(k, "= \t\n") {
			return nil, fmt.Errorf("%s: extraArgs key %q must be a bare flag name", component, k)
		}
		if reason, owned := validation.OwnedFlag(component, k); owned {
			return nil, fmt.Errorf("%s: flag %q is managed by capn: %s", component, k, reason)
		}
		out[k] = extra[k]
	}
	return out, nil
}

// Overridable are the generated flags a user may change through extraArgs:
// defaults that suit a tenant control plane but break nothing capn relies
// on when changed. Every generated flag is either owned (validation) or
// listed here; a test keeps it so.
var Overridable = map[string][]string{
	v1alpha1.ComponentAPIServer: {
		"advertise-address", "allow-privileged", "enable-admission-plugins",
		"enable-aggregator-routing", "kubelet-preferred-address-types", "profiling",
		"shutdown-delay-duration", "shutdown-send-retry-after",
	},
	v1alpha1.ComponentControllerManager: {
		"allocate-node-cidrs", "controllers", "profiling", "use-service-account-credentials",
	},
	v1alpha1.ComponentScheduler: {},
}
