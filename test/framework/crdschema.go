package framework

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/crdschema"
)

// NestedClusterMirrorCRD is a CRD nestedclusters.<group> (v1alpha1, kind
// NestedCluster, namespaced) whose schema is capn.dev/v1alpha1
// NestedCluster's from doc (see CRDSchema), with the status and scale
// subresources the real resource has: /scale maps to
// spec.apiServer.replicas, status.replicas and status.selector.
func NestedClusterMirrorCRD(doc []byte, group string) (crd *apiextensionsv1.CustomResourceDefinition, dropped []string, err error) {
	props, dropped, err := crdschema.Convert(doc, schema.GroupVersionKind{Group: "capn.dev", Version: "v1alpha1", Kind: "NestedCluster"})
	if err != nil {
		return nil, nil, err
	}
	// A PodTemplateSpec under each of five components, inlined with its
	// descriptions, is more than etcd's 1.5 MiB request limit; as with
	// controller-gen's crd:maxDescLen=0, descriptions go (they do not
	// validate anything).
	crdschema.DropDescriptions(props)
	dropped = append(dropped, "description")
	slices.Sort(dropped)
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "nestedclusters." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "nestedclusters", Singular: "nestedcluster",
				Kind: "NestedCluster", ListKind: "NestedClusterList", ShortNames: []string{"nc"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.apiServer.replicas",
						StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.selector")},
				},
			}},
		},
	}, dropped, nil
}
