package translate

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// imageRegistry is the registry host of an image reference as the
// container runtime reads it (github.com/distribution/reference's
// splitDockerDomain): the part before the first "/" when it has a "." or
// a ":", is "localhost" or has an upper-case letter, else none (Docker
// Hub). A tag or digest holds no "/", so the first one ends the host.
func imageRegistry(image string) (string, bool) {
	first, _, found := strings.Cut(image, "/")
	if !found {
		return "", false
	}
	// A path component is lower case, so an upper-case first part is a
	// host too ("LOCALHOST/app").
	if !strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first {
		return "", false
	}
	return first, true
}

// nodeLocalRegistry reports why a registry host would aim the node's image
// pull at the node itself or at its link (loopback, link-local, the
// unspecified address, or any address that is not global unicast), or ""
// when it does not. The pull runs in the kubelet's and the runtime's
// network, not the pod's, so a tenant naming such a host probes services
// that listen on the provider's node only, and reads their answers in the
// pull error.
func nodeLocalRegistry(registry string) string {
	host := registry
	// "[::1]:5000", "[::1]", "127.0.0.1:5000", "localhost:5000".
	if strings.HasPrefix(host, "[") {
		if end := strings.Index(host, "]"); end > 0 {
			host = host[1:end]
		}
	} else if h, _, found := strings.Cut(host, ":"); found && strings.Count(host, ":") == 1 {
		host = h
	}
	lower := strings.ToLower(strings.TrimSuffix(host, "."))
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return "localhost names the node itself"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		// A zone ("fe80::1%eth0") is link-local whatever the address.
		if strings.Contains(host, "%") {
			return "a zoned address is link-local to the node"
		}
		if numericHost(host) {
			return "a numeric host must be a canonical IP address, which the resolver would otherwise read as one (127.1, 0x7f.1, 2130706433)"
		}
		return ""
	}
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "a loopback address is the node itself"
	case ip.IsUnspecified():
		return "the unspecified address is the node itself"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "a link-local address reaches the node's link and its metadata services"
	case !ip.IsGlobalUnicast():
		return "only a global unicast address may be named"
	}
	return ""
}

// numericHost: the last label is a number, which no DNS name ends with
// but inet_aton reads as (part of) an IPv4 address.
func numericHost(host string) bool {
	last := host[strings.LastIndex(host, ".")+1:]
	if l := strings.ToLower(last); strings.HasPrefix(l, "0x") {
		last = l[2:]
		return last == "" || strings.Trim(last, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// checkImage refuses an image whose registry is on the node or its link.
func checkImage(image string, p *field.Path) *field.Error {
	reg, ok := imageRegistry(image)
	if !ok {
		return nil
	}
	if why := nodeLocalRegistry(reg); why != "" {
		return field.Invalid(p, image, "the image's registry "+reg+" may not be a node-local address: "+why)
	}
	return nil
}

func checkImages(cs []corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		if err := checkImage(c.Image, p.Index(i).Child("image")); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
