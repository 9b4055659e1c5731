package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	capnv1alpha1 "capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedControlPlane is a Cluster API control plane (contract v1beta2)
// served by capn: it owns exactly one NestedCluster of the same name in its
// namespace, and every lifecycle operation (create, scale, upgrade, delete)
// goes through that NestedCluster's API.
type NestedControlPlane struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired control plane.
	Spec NestedControlPlaneSpec `json:"spec"`
	// status mirrors the NestedCluster's, in the shape Cluster API reads.
	// +optional
	Status NestedControlPlaneStatus `json:"status,omitempty"`
}

// NestedControlPlaneSpec is the desired control plane.
type NestedControlPlaneSpec struct {
	// version is the Kubernetes version of the control plane, e.g. v1.37.2
	// (a missing "v" is added). Changing it runs the NestedCluster's ordered
	// upgrade through nestedclusters/upgrade, with its skew checks.
	Version string `json:"version"`
	// replicas is the number of kube-apiserver replicas, set through
	// nestedclusters/scale. Defaults to the NestedCluster's default (1).
	// The other components' replicas are under nestedCluster.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// controlPlaneEndpoint is the tenant apiserver's address, set by capn
	// from the NestedCluster's status.endpoint once it is known.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty"`
	// nestedCluster is the rest of the NestedCluster's spec: per-component
	// settings, etcd, data plane, DNS, metrics, sleep. Its version and
	// apiServer.replicas are refused: spec.version and spec.replicas set them.
	// +optional
	NestedCluster capnv1alpha1.NestedClusterSpec `json:"nestedCluster,omitempty"`
}

// APIEndpoint is a reachable Kubernetes API endpoint.
type APIEndpoint struct {
	// host is the hostname or IP address the apiserver serves on.
	// +optional
	Host string `json:"host,omitempty"`
	// port is the port the apiserver serves on.
	// +optional
	Port int32 `json:"port,omitempty"`
}

// NestedControlPlaneStatus is what Cluster API reads of a control plane.
type NestedControlPlaneStatus struct {
	// observedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// initialization reports when the control plane first served requests.
	// +optional
	Initialization Initialization `json:"initialization,omitempty"`
	// selector selects the kube-apiserver pods (in the NestedCluster's
	// management namespace), for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// replicas is the number of kube-apiserver pods.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// readyReplicas is the number of ready kube-apiserver pods.
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
	// availableReplicas is the number of available kube-apiserver pods.
	// +optional
	AvailableReplicas *int32 `json:"availableReplicas,omitempty"`
	// upToDateReplicas is the number of kube-apiserver pods at the desired
	// version and template.
	// +optional
	UpToDateReplicas *int32 `json:"upToDateReplicas,omitempty"`
	// version is the lowest version a control-plane component runs: during
	// an ordered upgrade it stays the old one until every component is done.
	// +optional
	Version string `json:"version,omitempty"`
	// versions are the versions the kube-apiserver pods run, oldest first,
	// with how many run each.
	// +optional
	// +listType=map
	// +listMapKey=version
	Versions []StatusVersion `json:"versions,omitempty"`
	// nestedCluster is the name of the NestedCluster this control plane
	// owns (always the control plane's own name).
	// +optional
	NestedCluster string `json:"nestedCluster,omitempty"`
	// conditions: Available (the NestedCluster is Ready), Paused, and
	// Reconciled (False with the NestedCluster API's answer when a change was
	// refused).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Initialization is Cluster API's initialization contract.
type Initialization struct {
	// controlPlaneInitialized is true once the tenant apiserver has served
	// requests; it never goes back.
	// +optional
	ControlPlaneInitialized *bool `json:"controlPlaneInitialized,omitempty"`
}

// StatusVersion is how many replicas run one version.
type StatusVersion struct {
	// version is a Kubernetes version.
	Version string `json:"version"`
	// replicas is how many kube-apiserver replicas run it.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedControlPlaneList is a list of NestedControlPlanes.
type NestedControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NestedControlPlane `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedControlPlaneTemplate is what a ClusterClass stamps
// NestedControlPlanes from; Cluster API sets version (and replicas, when the
// topology names them) on each one.
type NestedControlPlaneTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	Spec NestedControlPlaneTemplateSpec `json:"spec"`
}

// NestedControlPlaneTemplateSpec holds the template.
type NestedControlPlaneTemplateSpec struct {
	// template is copied into each NestedControlPlane.
	Template NestedControlPlaneTemplateResource `json:"template"`
}

// NestedControlPlaneTemplateResource is a NestedControlPlane's metadata and
// spec without what Cluster API or capn sets per cluster.
type NestedControlPlaneTemplateResource struct {
	// metadata is labels and annotations for the NestedControlPlane.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`
	// spec is the NestedControlPlane's spec without version and
	// controlPlaneEndpoint.
	Spec NestedControlPlaneTemplateResourceSpec `json:"spec"`
}

// NestedControlPlaneTemplateResourceSpec is the templated part of a
// NestedControlPlane's spec.
type NestedControlPlaneTemplateResourceSpec struct {
	// replicas is the number of kube-apiserver replicas; the Cluster's
	// topology may override it.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// nestedCluster is as in NestedControlPlane.
	// +optional
	NestedCluster capnv1alpha1.NestedClusterSpec `json:"nestedCluster,omitempty"`
}

// ObjectMeta is the metadata a template may carry.
type ObjectMeta struct {
	// labels for the object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations for the object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedControlPlaneTemplateList is a list of NestedControlPlaneTemplates.
type NestedControlPlaneTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NestedControlPlaneTemplate `json:"items"`
}
