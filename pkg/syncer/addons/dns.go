// Package addons builds the objects capn-syncer keeps in a tenant cluster
// on the provider's behalf: today the cluster DNS (CoreDNS behind the
// Service kube-system/kube-dns). It is pure: a configuration in, apply
// configurations out, golden-tested. The syncer server-side applies them
// whenever one of them changes in the tenant, so a deleted addon object
// comes back and an edited field capn sets is restored.
//
// The RBAC CoreDNS needs (reading Services, EndpointSlices, Namespaces and
// Pods) is not here: the syncer may not write RBAC, so the provisioner's
// tenant bootstrap grants it (access.CoreDNSRules).
package addons

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"capn.dev/capn/pkg/tenant/names"
)

// Ports inside the CoreDNS pod. DNS listens above 1024 so the container
// needs no NET_BIND_SERVICE and runs as non-root under the restricted Pod
// Security level; the Service still answers on 53.
const (
	dnsContainerPort = 1053
	healthPort       = 8080
	readyPort        = 8181
	nonRootUID       = 65532
)

// dnsCPURequest is the addon's CPU request: an idle tenant's CoreDNS uses
// about a millicore (docs/benchmarks.md, Density), and every tenant pays
// this on the node, so it decides how many tenants a node holds.
const dnsCPURequest = "5m"

// MaxUpstreams bounds DNSConfig.Upstreams, as resolv.conf does.
const MaxUpstreams = 3

// DNSConfig is what the addon is built from.
type DNSConfig struct {
	// Image is CoreDNS's image.
	Image string
	// Domain is the tenant's cluster domain (cluster.local).
	Domain string
	// Upstreams are resolvers names outside the cluster are forwarded to:
	// a provider setting, empty by default, and then such names get
	// NXDOMAIN from CoreDNS itself and no query leaves it.
	Upstreams []string
	// ClusterIP is kube-dns's address when the Service is created: the
	// one it had before, so tenant pods, whose resolv.conf was written with
	// it, keep resolving after the Service is deleted and recreated. Empty
	// lets the cluster allocate one.
	ClusterIP string
}

// Validate refuses a configuration that would render a broken or unsafe
// Corefile.
func (c DNSConfig) Validate() error {
	if c.Image == "" {
		return fmt.Errorf("the DNS addon needs an image")
	}
	if c.Domain == "" || strings.ContainsAny(c.Domain, " \t\n{}") {
		return fmt.Errorf("cluster domain %q is not a DNS name", c.Domain)
	}
	if len(c.Upstreams) > MaxUpstreams {
		return fmt.Errorf("at most %d upstream resolvers, not %d", MaxUpstreams, len(c.Upstreams))
	}
	for _, u := range c.Upstreams {
		if _, err := netip.ParseAddr(u); err != nil {
			return fmt.Errorf("upstream resolver %q is not an IP address", u)
		}
	}
	return nil
}

// DNSObjects are the addon's objects, in the order they are applied: the
// Service last but one, so that its address exists before the pods that
// resolve through it, and the Deployment after its ConfigMap and
// ServiceAccount.
type DNSObjects struct {
	ServiceAccount *corev1ac.ServiceAccountApplyConfiguration
	ConfigMap      *corev1ac.ConfigMapApplyConfiguration
	Service        *corev1ac.ServiceApplyConfiguration
	Deployment     *appsv1ac.DeploymentApplyConfiguration
}

// Labels are on every addon object and its pods.
func Labels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/managed-by": names.ManagedByValue,
		"app.kubernetes.io/name":       names.DNSName,
		names.DNSAppLabel:              names.DNSAppValue,
	}
}

// Corefile serves the cluster zone and the reverse zones from the tenant's
// API, and answers everything else with NXDOMAIN unless upstreams are
// given. Two server blocks, because CoreDNS runs plugins in its compiled
// order, not the Corefile's: template comes before kubernetes, so in one
// block it would answer the cluster zone too.
func Corefile(c DNSConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, `%[1]s:%[2]d in-addr.arpa:%[2]d ip6.arpa:%[2]d {
    errors
    health :%[3]d {
        lameduck 5s
    }
    ready :%[4]d
    kubernetes %[1]s in-addr.arpa ip6.arpa {
        pods insecure
        ttl 30
    }
    cache 30
    loadbalance
}
.:%[2]d {
    errors
`, c.Domain, dnsContainerPort, healthPort, readyPort)
	if len(c.Upstreams) == 0 {
		b.WriteString(`    template ANY ANY {
        rcode NXDOMAIN
    }
`)
	} else {
		fmt.Fprintf(&b, `    forward . %s
    cache 30
`, strings.Join(c.Upstreams, " "))
	}
	b.WriteString("}\n")
	return b.String()
}

// CoreDNS builds the addon.
func CoreDNS(c DNSConfig) DNSObjects {
	labels := Labels()
	selector := map[string]string{names.DNSAppLabel: names.DNSAppValue}
	sa := corev1ac.ServiceAccount(names.DNSName, names.DNSNamespace).WithLabels(labels)
	cm := corev1ac.ConfigMap(names.DNSName, names.DNSNamespace).WithLabels(labels).
		WithData(map[string]string{"Corefile": Corefile(c)})

	svc := corev1ac.Service(names.DNSServiceName, names.DNSNamespace).WithLabels(labels).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(
				corev1ac.ServicePort().WithName("dns").WithProtocol(corev1.ProtocolUDP).WithPort(53).WithTargetPort(intstr.FromString("dns")),
				corev1ac.ServicePort().WithName("dns-tcp").WithProtocol(corev1.ProtocolTCP).WithPort(53).WithTargetPort(intstr.FromString("dns-tcp")),
			))
	if c.ClusterIP != "" {
		svc.Spec.WithClusterIP(c.ClusterIP)
	}

	container := corev1ac.Container().
		WithName(names.DNSName).
		WithImage(c.Image).
		WithArgs("-conf", "/etc/coredns/Corefile").
		WithPorts(
			corev1ac.ContainerPort().WithName("dns").WithProtocol(corev1.ProtocolUDP).WithContainerPort(dnsContainerPort),
			corev1ac.ContainerPort().WithName("dns-tcp").WithProtocol(corev1.ProtocolTCP).WithContainerPort(dnsContainerPort),
		).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(dnsCPURequest), corev1.ResourceMemory: resource.MustParse("32Mi")}).
			// A CPU limit of its own, well above an idle CoreDNS's use:
			// without one the workload namespace's LimitRange gives it a
			// whole core of the tenant's limits.cpu quota.
			WithLimits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("170Mi")})).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/coredns").WithReadOnly(true)).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/ready").WithPort(intstr.FromInt32(readyPort))).
			WithPeriodSeconds(2)).
		WithLivenessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/health").WithPort(intstr.FromInt32(healthPort))).
			WithInitialDelaySeconds(10).WithPeriodSeconds(10).WithFailureThreshold(5)).
		WithSecurityContext(restricted(nonRootUID))

	deploy := appsv1ac.Deployment(names.DNSName, names.DNSNamespace).WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			// One replica: a tenant cluster is small and the addon's cost is
			// the tenant's; a restart is covered by the resolver's retries.
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(names.DNSName).
					// On a virtual Node, so it runs on the management
					// cluster, where kube-dns's address leads: on a joined
					// node it would be out of reach of the host pods.
					WithNodeSelector(map[string]string{names.VirtualNodeLabel: "true"}).
					// The node's resolver: CoreDNS resolves nothing through
					// itself, and the syncer never gives a pod the host's.
					WithDNSPolicy(corev1.DNSDefault).
					WithContainers(container).
					WithVolumes(corev1ac.Volume().WithName("config").
						WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(names.DNSName))))))
	return DNSObjects{ServiceAccount: sa, ConfigMap: cm, Service: svc, Deployment: deploy}
}

// restricted is an addon container's security context: what Pod
// Security's restricted level asks, as uid, with a read-only root.
func restricted(uid int64) *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithRunAsNonRoot(true).
		WithRunAsUser(uid).WithRunAsGroup(uid).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}
