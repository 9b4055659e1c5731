// Package names is the tenant vocabulary that capn's provisioner and
// capn-syncer share, below both so that neither imports the other: the
// names and identity labels of a tenant's objects on the management
// cluster (this file), and the names both sides must agree on
// (shared.go).
//
// A tenant's namespaced objects are given names in the tenant's workload
// namespace on the management cluster.
//
// All of a tenant's namespaces share one workload namespace, so the host
// name must keep (namespace, name) pairs apart: "a-b"/"c" and "a"/"b-c"
// must not meet, and a tenant must not be able to pick a pair that lands on
// another pair's host name. The readable part is only for people; the
// 128-bit hash of the exact pair is what makes the name unique, and the
// tenant identity is recorded in labels and annotations (Identity), never
// parsed back out of a name.
package names

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// MaxLength is the DNS-1123 label limit: host names are used for pods
// (their hostname), Services and Secrets alike, so all meet the strictest.
const MaxLength = 63

// hashLength base32 characters carry the first 128 bits of the sha256.
const hashLength = 26

// separator joins the name and namespace in the readable part. "-x-" is
// vcluster's choice too: readable enough, and the hash, not the
// separator, keeps pairs apart.
const separator = "-x-"

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Host is the host name of the tenant object namespace/name: at most
// MaxLength characters, a DNS-1123 label (lower-case alphanumerics and
// dashes, starting and ending alphanumeric), "<name>-x-<namespace>" cut to
// fit, then "-" and 26 characters of hash.
func Host(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	hash := lowerBase32.EncodeToString(sum[:16])[:hashLength]
	return readable(name+separator+namespace, MaxLength-1-hashLength) + "-" + hash
}

// Derived is the name of an object the syncer makes for the host object
// host, e.g. the Secret holding a pod's service-account tokens. It cannot
// meet a Host name: those end in "-" and 26 dash-free characters, and the
// suffix puts a dash inside that tail. Secrets allow 253 characters, so
// nothing is cut.
func Derived(host, suffix string) string {
	return host + "-" + suffix
}

// readable keeps what a DNS label allows, lower-cased, with dots (legal in
// tenant Secret and ConfigMap names) as dashes, cut to max and trimmed of
// dashes so the result starts and ends alphanumeric. It may be empty only
// for an input with no letter or digit, which the API never admits.
func readable(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
	}
	return strings.Trim(out, "-")
}

// VirtualNodeLabel marks the Nodes the syncer publishes in a tenant. It is
// what the syncer lists and deletes; a Node without it (a real node that
// joined the tenant) is never touched, and what must run on the
// management cluster (the DNS addon) selects it.
const VirtualNodeLabel = "capn.dev/virtual-node"

// Labels and annotations that record a host object's tenant identity. The
// syncer writes them and reads them back; they are the only way from a
// host object to its tenant object, and the UID is checked before the
// syncer acts (a tenant object deleted and made again under the same name
// is a different object).
const (
	// ManagedByValue is app.kubernetes.io/managed-by on host objects: not
	// "capn", so capn's provisioner never caches tenant pods.
	ManagedByValue = "capn-syncer"
	// TenantNamespaceLabel holds the tenant namespace (a DNS label, so it
	// fits a label value), for selecting one tenant namespace's objects.
	TenantNamespaceLabel = "capn.dev/tenant-namespace"
	// TenantUIDLabel holds the tenant object's UID.
	TenantUIDLabel = "capn.dev/tenant-uid"
	// TenantNameAnnotation holds the tenant object's name: names may be
	// longer than a label value allows.
	TenantNameAnnotation = "capn.dev/tenant-name"
)

// Identity is who a host object stands for in the tenant.
type Identity struct {
	Namespace, Name, UID string
}

// IdentityOf reads the identity the syncer recorded on a host object; ok
// is false for an object without one (not the syncer's).
func IdentityOf(labels, annotations map[string]string) (Identity, bool) {
	id := Identity{Namespace: labels[TenantNamespaceLabel], UID: labels[TenantUIDLabel], Name: annotations[TenantNameAnnotation]}
	return id, id.Namespace != "" && id.Name != "" && id.UID != ""
}
