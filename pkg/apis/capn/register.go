package capn

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by capn-apiserver.
const GroupName = "capn.dev"

// SchemeGroupVersion is the internal version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

var (
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers the internal types.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind qualifies a kind name with this group.
func Kind(kind string) schema.GroupKind { return SchemeGroupVersion.WithKind(kind).GroupKind() }

// Resource qualifies a resource name with this group, for apierrors.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
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
	return nil
}
