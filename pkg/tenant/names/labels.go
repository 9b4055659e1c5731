package names

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// Tenant labels on host pods (red-team finding 8). A tenant's own label
// keys never reach the host as they are: a provider NetworkPolicy or
// Service that selects app.kubernetes.io/name=capn-apiserver must not take
// in a tenant pod that says the same. Each tenant key is carried under a
// capn-owned domain instead, and so are the labels of the pod's tenant
// namespace, so that translated Service selectors and NetworkPolicies can
// select by both.
const (
	// TenantLabelDomain carries a tenant pod's own labels.
	TenantLabelDomain = "label.capn.dev"
	// NamespaceLabelDomain carries the labels of a tenant pod's namespace.
	NamespaceLabelDomain = "ns-label.capn.dev"
)

// Markers the syncer sets on a host pod that one of its tenant's
// NetworkPolicies isolates (selects, for that direction). The workload
// namespace's baseline policies select only pods without them: a tenant
// policy can then narrow what its pods accept or send, where a union with
// the baseline's allow-all-within-the-tenant would make it a no-op.
const (
	IngressIsolatedLabel = "capn.dev/ingress-isolated"
	EgressIsolatedLabel  = "capn.dev/egress-isolated"
)

// TenantLabelKey is the host key of the tenant pod label key k.
func TenantLabelKey(k string) string { return carriedKey(TenantLabelDomain, k) }

// NamespaceLabelKey is the host key of the tenant namespace label key k.
func NamespaceLabelKey(k string) string { return carriedKey(NamespaceLabelDomain, k) }

// carriedKey is domain/<readable>-<hash>: a label name holds at most 63
// characters and a tenant key (prefix included) may be far longer, so the
// key is a hash of the whole tenant key; the start of its name part is
// kept in front for people reading the host pod.
func carriedKey(domain, k string) string {
	_, name, found := strings.Cut(k, "/")
	if !found {
		name = k
	}
	sum := sha256.Sum256([]byte(k))
	h := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:10]))
	if len(name) > 40 {
		name = name[:40]
	}
	// A label name ends with an alphanumeric, and a cut may leave a dash.
	name = strings.TrimRight(name, "-_.")
	if name == "" {
		return domain + "/" + h
	}
	return domain + "/" + name + "-" + h
}

// CapnOwnedLabel reports whether k is a key of capn's own (a capn.dev
// domain, or managed-by): a tenant key can never be one on the host.
func CapnOwnedLabel(k string) bool {
	prefix, _, found := strings.Cut(k, "/")
	return k == "app.kubernetes.io/managed-by" || found && (prefix == "capn.dev" || strings.HasSuffix(prefix, ".capn.dev"))
}
