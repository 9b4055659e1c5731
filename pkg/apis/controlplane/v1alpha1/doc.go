// Package v1alpha1 is capn's Cluster API control-plane provider API:
// NestedControlPlane and NestedControlPlaneTemplate in
// controlplane.cluster.x-k8s.io, served by CustomResourceDefinitions (Cluster
// API finds a provider's contract through a CRD label, which an aggregated
// API cannot carry). A NestedControlPlane is a face over one NestedCluster,
// which stays the one source of truth.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +groupName=controlplane.cluster.x-k8s.io
// +k8s:openapi-model-package=io.x-k8s.cluster.controlplane.v1alpha1
package v1alpha1
