// Package v1alpha1 is the v1alpha1 wire version of the capn.dev API group.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=capn.dev/capn/pkg/apis/capn
// +k8s:defaulter-gen=TypeMeta
// +groupName=capn.dev
// +k8s:openapi-model-package=dev.capn.v1alpha1
package v1alpha1
