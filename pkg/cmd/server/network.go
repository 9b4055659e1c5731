package server

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
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
	flagNodeKubeletEndpoints         = "node-kubelet-endpoints"
	flagAPIServerEgressCIDRs         = "tenant-apiserver-egress-cidrs"
	flagAPIServerEgressNamespaces    = "tenant-apiserver-egress-namespaces"
)

// NetworkOptions are what the provider lets control-plane pods reach
// (builders.Network).
type NetworkOptions struct {
	ManagementAPIServerEndpoints []string
	NodeKubeletEndpoints         []string
	APIServerEgressCIDRs         []string
	APIServerEgressNamespaces    []string
}

func (o *NetworkOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.ManagementAPIServerEndpoints, flagManagementAPIServerEndpoints, o.ManagementAPIServerEndpoints,
		"The management kube-apiserver's endpoints, ip:port, which each capn-syncer's NetworkPolicy allows. Empty: read from the EndpointSlices of default/kubernetes at start.")
	fs.StringSliceVar(&o.NodeKubeletEndpoints, flagNodeKubeletEndpoints, o.NodeKubeletEndpoints,
		"The management nodes' kubelet endpoints, ip:port, which each capn-syncer's NetworkPolicy allows, for the resource metrics of its virtual Nodes. Empty: read from the Nodes (InternalIP, kubelet port) at start; a node added later is reachable once capn-apiserver restarts.")
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

// network parses the flags; ManagementAPIServer and Kubelets are left
// empty when their flags are, for resolve to read.
func (o NetworkOptions) network() (builders.Network, error) {
	var n builders.Network
	for _, s := range o.ManagementAPIServerEndpoints {
		ap, err := parseEndpoint(flagManagementAPIServerEndpoints, s)
		if err != nil {
			return n, err
		}
		n.ManagementAPIServer = append(n.ManagementAPIServer, ap)
	}
	for _, s := range o.NodeKubeletEndpoints {
		ap, err := parseEndpoint(flagNodeKubeletEndpoints, s)
		if err != nil {
			return n, err
		}
		n.Kubelets = append(n.Kubelets, ap)
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

// parseEndpoint parses one ip:port of flag. Port 0 is refused: the
// NetworkPolicy rule it becomes would allow every port.
func parseEndpoint(flag, s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, fmt.Errorf("--%s: %q is not ip:port: %w", flag, s, err)
	}
	if ap.Port() == 0 {
		return ap, fmt.Errorf("--%s: %q has port 0", flag, s)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// resolve is network() with the management apiserver's endpoints and the
// Nodes' kubelet endpoints read from the cluster when their flags name
// none. A failed read is logged by the caller and leaves that rule of the
// syncers' NetworkPolicy by port only.
func (o NetworkOptions) resolve(ctx context.Context, cfg *rest.Config) (builders.Network, error) {
	n, err := o.network()
	if err != nil || len(n.ManagementAPIServer) > 0 && len(n.Kubelets) > 0 {
		return n, err
	}
	mgmt, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return n, fmt.Errorf("management client: %w", err)
	}
	return resolveFrom(ctx, mgmt, n)
}

// resolveFrom fills what n lacks from the management cluster.
func resolveFrom(ctx context.Context, mgmt kubernetes.Interface, n builders.Network) (builders.Network, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errs []error
	if len(n.ManagementAPIServer) == 0 {
		l, err := mgmt.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("reading the management apiserver's endpoints (or set --%s): %w", flagManagementAPIServerEndpoints, err))
		default:
			if n.ManagementAPIServer = managementEndpoints(l.Items); len(n.ManagementAPIServer) == 0 {
				errs = append(errs, fmt.Errorf("default/kubernetes has no ready endpoints (or set --%s)", flagManagementAPIServerEndpoints))
			}
		}
	}
	if len(n.Kubelets) == 0 {
		l, err := mgmt.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("reading the Nodes' kubelet endpoints (or set --%s): %w", flagNodeKubeletEndpoints, err))
		default:
			if n.Kubelets = kubeletEndpoints(l.Items); len(n.Kubelets) == 0 {
				errs = append(errs, fmt.Errorf("no Node reports an InternalIP and a kubelet port (or set --%s)", flagNodeKubeletEndpoints))
			}
		}
	}
	return n, errors.Join(errs...)
}

// kubeletEndpoints are each Node's InternalIP addresses with its kubelet
// port, sorted; a Node that reports no port is left out, as nothing could
// dial it.
func kubeletEndpoints(nodes []corev1.Node) []netip.AddrPort {
	var out []netip.AddrPort
	for _, node := range nodes {
		port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
		if port <= 0 || port > 65535 {
			continue
		}
		for _, a := range node.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if addr, err := netip.ParseAddr(a.Address); err == nil {
				out = append(out, netip.AddrPortFrom(addr.Unmap(), uint16(port)))
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(out)
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
