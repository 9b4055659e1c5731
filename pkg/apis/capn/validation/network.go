package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// maxServiceCIDRBits is kube-apiserver's own limit on an IPv4
// --service-cluster-ip-range (a /12): a larger range makes it refuse to start,
// so it is caught here instead of as a crash-looping tenant apiserver.
const maxServiceCIDRBits = 20

func validateClusterNetwork(n *capn.ClusterNetwork, fldPath *field.Path) field.ErrorList {
	svcPath, podPath := fldPath.Child("serviceCIDR"), fldPath.Child("podCIDR")
	allErrs := validateCIDR(svcPath, n.ServiceCIDR)
	svcOK := len(allErrs) == 0
	podErrs := validateCIDR(podPath, n.PodCIDR)
	allErrs = append(allErrs, podErrs...)

	if svcOK {
		_, svc, _ := netutils.ParseCIDRSloppy(n.ServiceCIDR)
		if !netutils.IsIPv4CIDR(svc) {
			// kube-apiserver requires its service range to be of its
			// advertise address's family, and that is the pod IP capn's
			// management network gives it: IPv4.
			allErrs = append(allErrs, field.Invalid(svcPath, n.ServiceCIDR, "must be an IPv4 range: the tenant kube-apiserver advertises its pod's IPv4 address, and kube-apiserver requires the service range to be of the same family"))
		}
		if ones, bits := svc.Mask.Size(); netutils.IsIPv4CIDR(svc) && bits-ones > maxServiceCIDRBits {
			allErrs = append(allErrs, field.Invalid(svcPath, n.ServiceCIDR,
				fmt.Sprintf("must be /%d or smaller: kube-apiserver refuses IPv4 service ranges of more than 2^%d addresses", bits-maxServiceCIDRBits, maxServiceCIDRBits)))
		}
		if len(podErrs) == 0 {
			_, pod, _ := netutils.ParseCIDRSloppy(n.PodCIDR)
			if netutils.IsIPv4CIDR(pod) != netutils.IsIPv4CIDR(svc) {
				allErrs = append(allErrs, field.Invalid(podPath, n.PodCIDR, "must be of serviceCIDR's IP family"))
			}
			if svc.Contains(pod.IP) || pod.Contains(svc.IP) {
				allErrs = append(allErrs, field.Invalid(podPath, n.PodCIDR, fmt.Sprintf("must not overlap serviceCIDR %s", n.ServiceCIDR)))
			}
		}
	}

	dnsPath := fldPath.Child("dnsDomain")
	if n.DNSDomain == "" {
		allErrs = append(allErrs, field.Required(dnsPath, ""))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(n.DNSDomain) {
			allErrs = append(allErrs, field.Invalid(dnsPath, n.DNSDomain, msg))
		}
	}
	return allErrs
}

func validateCIDR(fldPath *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return utilvalidation.IsValidCIDR(fldPath, v)
}

// validateNetworkUpdate keeps the ranges fixed: they are baked into every
// Service and Pod IP the tenant has handed out, and into its DNS records.
func validateNetworkUpdate(newN, oldN *capn.ClusterNetwork, fldPath *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateImmutableField(newN.ServiceCIDR, oldN.ServiceCIDR, fldPath.Child("serviceCIDR"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newN.PodCIDR, oldN.PodCIDR, fldPath.Child("podCIDR"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newN.DNSDomain, oldN.DNSDomain, fldPath.Child("dnsDomain"))...)
	return allErrs
}

var supportedServiceTypes = []corev1.ServiceType{
	corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer,
}

func validateAPIServer(s *capn.APIServerSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateComponent(&s.ComponentSpec, v1alpha1.ComponentAPIServer, fldPath)

	svcPath := fldPath.Child("service")
	switch {
	case s.Service.Type == "":
		allErrs = append(allErrs, field.Required(svcPath.Child("type"), ""))
	case !contains(supportedServiceTypes, s.Service.Type):
		allErrs = append(allErrs, field.NotSupported(svcPath.Child("type"), s.Service.Type, supportedServiceTypes))
	}
	for _, msg := range utilvalidation.IsValidPortNum(int(s.Service.Port)) {
		allErrs = append(allErrs, field.Invalid(svcPath.Child("port"), s.Service.Port, msg))
	}

	seen := map[string]bool{}
	for i, san := range s.CertSANs {
		p := fldPath.Child("certSANs").Index(i)
		if seen[san] {
			allErrs = append(allErrs, field.Duplicate(p, san))
			continue
		}
		seen[san] = true
		allErrs = append(allErrs, validateCertSAN(p, san)...)
	}
	return allErrs
}

func validateCertSAN(fldPath *field.Path, san string) field.ErrorList {
	if san == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if netutils.ParseIPSloppy(san) != nil {
		return utilvalidation.IsValidIP(fldPath, san)
	}
	var msgs []string
	if strings.HasPrefix(san, "*.") {
		msgs = utilvalidation.IsWildcardDNS1123Subdomain(san)
	} else {
		msgs = utilvalidation.IsDNS1123Subdomain(san)
	}
	var allErrs field.ErrorList
	for _, msg := range msgs {
		allErrs = append(allErrs, field.Invalid(fldPath, san, msg+" (or an IP address)"))
	}
	return allErrs
}
