package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedInfraCluster is the infrastructure of a Cluster whose control plane
// is a NestedControlPlane: the management cluster capn runs on, already
// there. capn marks it provisioned; it has nothing to configure.
type NestedInfraCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is empty: the NestedControlPlane provides the endpoint.
	// +optional
	Spec NestedInfraClusterSpec `json:"spec,omitempty"`
	// status reports the infrastructure provisioned.
	// +optional
	Status NestedInfraClusterStatus `json:"status,omitempty"`
}

// NestedInfraClusterSpec is empty on purpose: the control plane's endpoint
// comes from the NestedControlPlane.
type NestedInfraClusterSpec struct{}

// NestedInfraClusterStatus is what Cluster API reads.
type NestedInfraClusterStatus struct {
	// initialization.provisioned is true once capn has seen the object.
	// +optional
	Initialization Initialization `json:"initialization,omitempty"`
	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Initialization is Cluster API's initialization contract.
type Initialization struct {
	// provisioned is true when the infrastructure is ready.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedInfraClusterList is a list of NestedInfraClusters.
type NestedInfraClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NestedInfraCluster `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedInfraClusterTemplate is what a ClusterClass stamps
// NestedInfraClusters from.
type NestedInfraClusterTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	Spec NestedInfraClusterTemplateSpec `json:"spec"`
}

// NestedInfraClusterTemplateSpec holds the template.
type NestedInfraClusterTemplateSpec struct {
	// template is copied into each NestedInfraCluster.
	Template NestedInfraClusterTemplateResource `json:"template"`
}

// NestedInfraClusterTemplateResource is a NestedInfraCluster's spec.
type NestedInfraClusterTemplateResource struct {
	// spec is empty.
	// +optional
	Spec NestedInfraClusterSpec `json:"spec,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedInfraClusterTemplateList is a list of NestedInfraClusterTemplates.
type NestedInfraClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NestedInfraClusterTemplate `json:"items"`
}
