package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedEtcdPool is an etcd that many NestedClusters share, each under its
// own key prefix with its own etcd user (spec.etcd.pool). The provider runs
// the etcd; capn only adds and removes tenants in it. Cluster-scoped: it is
// the provider's, and tenants use one by name when RBAC grants them the verb
// "use" on it.
type NestedEtcdPool struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is where the pool is and how capn reaches it as root.
	// +optional
	Spec NestedEtcdPoolSpec `json:"spec,omitempty"`
	// status is what capn last observed of the pool. Read-only.
	// +optional
	Status NestedEtcdPoolStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedEtcdPoolList is a list of NestedEtcdPools.
type NestedEtcdPoolList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []NestedEtcdPool `json:"items"`
}

// NestedEtcdPoolSpec describes a shared etcd. Its etcd must run with TLS,
// client-certificate authentication and auth enabled: a tenant's identity
// in the pool is the common name of the client certificate capn issues it.
type NestedEtcdPoolSpec struct {
	// endpoints are the pool members' client URLs, https://host:port.
	// +listType=atomic
	Endpoints []string `json:"endpoints"`
	// credentialsSecretRef names the Secret, in a namespace of the
	// provider's that tenants cannot read, that holds the pool's CA
	// (ca.crt, and ca.key to sign each tenant's client certificate) and
	// the root user's client certificate (tls.crt, tls.key, CN root).
	CredentialsSecretRef NamespacedSecretReference `json:"credentialsSecretRef"`
}

// NamespacedSecretReference names a Secret in a given namespace.
type NamespacedSecretReference struct {
	// namespace of the Secret.
	Namespace string `json:"namespace"`
	// name of the Secret.
	Name string `json:"name"`
}

// NestedEtcdPoolStatus is the pool as capn last saw it.
type NestedEtcdPoolStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// tenants is how many NestedClusters keep their state in the pool.
	// +optional
	Tenants int32 `json:"tenants,omitempty"`
	// dbSizeBytes is the largest database size the members report. etcd
	// has no quota per prefix: one tenant can fill the pool, and a pool at
	// its quota refuses writes from every tenant.
	// +optional
	DBSizeBytes int64 `json:"dbSizeBytes,omitempty"`
	// conditions: Available (capn reached the pool as root with auth
	// enabled).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
