package translate

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/tenant/names"
)

// HostMeta is the metadata of the host copy of a tenant object: its
// deterministic name in the workload namespace, and the tenant identity
// (namespace, UID, name) that a restarted syncer finds it by.
func HostMeta(tenant metav1.Object, workloadNamespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        names.Host(tenant.GetNamespace(), tenant.GetName()),
		Namespace:   workloadNamespace,
		Labels:      HostLabels(tenant.GetNamespace(), string(tenant.GetUID())),
		Annotations: map[string]string{names.TenantNameAnnotation: tenant.GetName()},
	}
}

// HostConfigMap is the host copy of a tenant ConfigMap a pod references.
func HostConfigMap(tenant *corev1.ConfigMap, workloadNamespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: HostMeta(tenant, workloadNamespace), Data: tenant.Data, BinaryData: tenant.BinaryData}
}

// HostSecret is the host copy of a tenant Secret a pod references. A
// service-account-token Secret on the host would be handled by the
// host's token controller: its copy is Opaque.
func HostSecret(tenant *corev1.Secret, workloadNamespace string) *corev1.Secret {
	typ := tenant.Type
	if typ == corev1.SecretTypeServiceAccountToken {
		typ = corev1.SecretTypeOpaque
	}
	return &corev1.Secret{ObjectMeta: HostMeta(tenant, workloadNamespace), Type: typ, Data: tenant.Data}
}
