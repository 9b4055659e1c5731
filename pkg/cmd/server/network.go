package server

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/spf13/pflag"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"capn.dev/capn/pkg/provisioner/builders"
)

// Flag names of NetworkOptions.
const (
	flagManagementAPIServerEndpoints = "management-apiserver-endpoints"
	flagAPIServerEgressCIDRs         = "tenant-apiserver-egress-cidrs"
	flagAPIServerEgressNamespaces    = "tenant-apiserver-egress-namespaces"
)

// NetworkOptions are what the provider lets control-plane pods reach
// (builders.Network).
type NetworkOptions struct {
	ManagementAPIServerEndpoints []string
	APIServerEgressCIDRs         []string
	APIServerEgressNamespaces    []string
}

func (o *NetworkOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.ManagementAPIServerEndpoints, flagManagementAPIServerEndpoints, o.ManagementAPIServerEndpoints,
		"The management kube-apiserver's endpoints, ip:port, which each capn-syncer's NetworkPolicy allows. Empty: read from the EndpointSlices of default/kubernetes at start.")
	fs.StringSliceVar(&o.APIServerEgressCIDRs, flagAPIServerEgressCIDRs, o.APIServerEgressCIDRs,
		"CIDRs a tenant kube-apiserver may connect to besides its own etcd, syncer and workloads: an external etcd or etcd pool outside the cluster, OIDC issuers, joined nodes. Nothing else is reachable from it.")
	fs.StringSliceVar(&o.APIServerEgressNamespaces, flagAPIServerEgressNamespaces, o.APIServerEgressNamespaces,
		"Management namespaces whose pods a tenant kube-apiserver may connect to: where an etcd pool or external etcd runs inside the management cluster.")
}

// Validate checks the flags.
func (o NetworkOptions) Validate() []error {
	_, err := o.network()
	if err != nil {
		return []error{err}
	}
	return nil
}

// network parses the flags; ManagementAPIServer is left empty when the
// flag is, for managementAPIServer to read.
func (o NetworkOptions) network() (builders.Network, error) {
	var n builders.Network
	for _, s := range o.ManagementAPIServerEndpoints {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return n, fmt.Errorf("--%s: %q is not ip:port: %w", flagManagementAPIServerEndpoints, s, err)
		}
		n.ManagementAPIServer = append(n.ManagementAPIServer, ap)
	}
	for _, s := range o.APIServerEgressCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return n, fmt.Errorf("--%s: %q is not a CIDR: %w", flagAPIServerEgressCIDRs, s, err)
		}
		n.APIServerEgressCIDRs = append(n.APIServerEgressCIDRs, p.Masked())
	}
	for _, s := range o.APIServerEgressNamespaces {
		if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
			return n, fmt.Errorf("--%s: %q is not a namespace name: %v", flagAPIServerEgressNamespaces, s, errs)
		}
		n.APIServerEgressNamespaces = append(n.APIServerEgressNamespaces, s)
	}
	return n, nil
}

// resolve is network() with the management apiserver's endpoints read
// from the cluster when the flag names none. A failed read is logged by
// the caller and leaves the syncer's fallback rule (ports 443 and 6443).
func (o NetworkOptions) resolve(ctx context.Context, cfg *rest.Config) (builders.Network, error) {
	n, err := o.network()
	if err != nil || len(n.ManagementAPIServer) > 0 {
		return n, err
	}
	mgmt, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return n, fmt.Errorf("management client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := mgmt.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return n, fmt.Errorf("reading the management apiserver's endpoints (or set --%s): %w", flagManagementAPIServerEndpoints, err)
	}
	n.ManagementAPIServer = managementEndpoints(l.Items)
	if len(n.ManagementAPIServer) == 0 {
		return n, fmt.Errorf("default/kubernetes has no ready endpoints (or set --%s)", flagManagementAPIServerEndpoints)
	}
	return n, nil
}

// managementEndpoints are the ready addresses of the kubernetes Service's
// EndpointSlices with its https port, sorted.
func managementEndpoints(eps []discoveryv1.EndpointSlice) []netip.AddrPort {
	var out []netip.AddrPort
	for _, s := range eps {
		var port int32
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name == nil || *p.Name == "https") {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				if addr, err := netip.ParseAddr(a); err == nil {
					out = append(out, netip.AddrPortFrom(addr, uint16(port)))
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(out)
}
