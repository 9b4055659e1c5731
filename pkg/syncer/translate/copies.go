package translate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CopyKey names a host copy: ConfigMaps and Secrets may share a host name.
type CopyKey struct {
	Secret bool
	Name   string
}

// Copies are host copies by key, each with its size (CopySize).
type Copies map[CopyKey]int64

// ConfigMapSize is what a ConfigMap copy holds: its keys and values, as
// the API server's 1MiB bound on one object counts them.
func ConfigMapSize(cm *corev1.ConfigMap) int64 {
	return entriesSize(cm.Data) + entriesSize(cm.BinaryData)
}

// SecretSize is ConfigMapSize for a Secret.
func SecretSize(s *corev1.Secret) int64 { return entriesSize(s.Data) + entriesSize(s.StringData) }

func entriesSize[V string | []byte](m map[string]V) int64 {
	var n int64
	for k, v := range m {
		n += int64(len(k) + len(v))
	}
	return n
}

// CopiedBytesAfter is the total size of the host copies once want (the
// copies a pod needs, at their tenant size) are written over host (the
// copies there now).
func CopiedBytesAfter(host, want Copies) int64 {
	var total int64
	for k, n := range host {
		if _, ok := want[k]; !ok {
			total += n
		}
	}
	for _, n := range want {
		total += n
	}
	return total
}

// CheckCopiedBytes refuses want when it would take the host copies past
// max. Every copy is the tenant's data in the management cluster's etcd,
// which all tenants and the provider share, and a tenant may create as
// many pods referencing as many objects of up to 1MiB as it likes. A pod
// that adds nothing is never refused, so lowering the bound does not stop
// pods that use copies already there.
func CheckCopiedBytes(host, want Copies, max resource.Quantity, p *field.Path) *field.Error {
	before, after := CopiedBytesAfter(host, nil), CopiedBytesAfter(host, want)
	if after <= max.Value() || after <= before {
		return nil
	}
	return field.Forbidden(p, fmt.Sprintf("the ConfigMaps and Secrets the pod references would take this cluster's copies on the management cluster to a total of %s, over the provider's bound of %s (bytes of keys and values)",
		resource.NewQuantity(after, resource.BinarySI).String(), max.String()))
}
