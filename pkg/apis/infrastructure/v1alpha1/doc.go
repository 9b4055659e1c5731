// Package v1alpha1 is the smallest honest Cluster API infrastructure
// provider for capn: NestedInfraCluster and NestedInfraClusterTemplate in
// infrastructure.cluster.x-k8s.io. A Cluster that names a NestedControlPlane
// needs no infrastructure (Cluster.spec.infrastructureRef is optional in the
// v1beta2 contract), but a ClusterClass must name an infrastructure cluster
// template; this kind answers that: it is provisioned at once and leaves the
// endpoint to the control plane, which knows it.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +groupName=infrastructure.cluster.x-k8s.io
// +k8s:openapi-model-package=io.x-k8s.cluster.infrastructure.v1alpha1
package v1alpha1
