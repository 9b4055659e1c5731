package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by capn-apiserver.
const GroupName = "capn.dev"

// ProvisionerFinalizer holds a NestedCluster until capn has deleted its
// management namespace, so deleting the API object never leaks a running
// control plane. Only capn and the provider's break-glass groups may remove it.
const ProvisionerFinalizer = GroupName + "/provisioner"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme registers the v1alpha1 types, conversions and defaulters.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Generated functions register themselves in their own files, so the
	// package compiles before codegen has run.
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NestedCluster{},
		&NestedClusterList{},
		&NestedClusterUpgrade{},
		&NestedClusterKubeconfigRequest{},
		&NestedClusterJoinTokenRequest{},
		&NestedEtcdPool{},
		&NestedEtcdPoolList{},
		&NestedClusterBackup{},
		&NestedClusterBackupList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	// Without this, list/watch field selectors beyond name and namespace
	// are refused before they reach the store's GetAttrs.
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("NestedCluster"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace", "status.phase":
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported: %s", label)
		})
}

// Resource qualifies a resource name with this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}
