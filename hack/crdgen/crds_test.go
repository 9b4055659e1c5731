package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"

	"capn.dev/capn/pkg/provisioner/clusterapi"
)

// TestCRDsAreValid has apiextensions validate each CRD as kube-apiserver
// would at create (structural schema, CEL rules compiled and costed), so a
// change to a NestedCluster type that a CRD cannot carry fails here.
func TestCRDsAreValid(t *testing.T) {
	crds, err := build()
	require.NoError(t, err)
	require.Len(t, crds, 4)
	for _, crd := range crds {
		t.Run(crd.Name, func(t *testing.T) {
			assert.Equal(t, "v1alpha1", crd.Labels[clusterapi.ContractLabel], "Cluster API finds the contract by this label")
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
			var internal apiextensions.CustomResourceDefinition
			require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil))
			assert.Empty(t, validation.ValidateCustomResourceDefinition(context.Background(), &internal))
		})
	}
}

func TestNestedControlPlaneSchema(t *testing.T) {
	crds, err := build()
	require.NoError(t, err)
	props := crds[0].Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := props.Properties["spec"]
	assert.Contains(t, spec.Required, "version")
	assert.Equal(t, "integer", spec.Properties["replicas"].Type)
	nc := spec.Properties["nestedCluster"]
	assert.Equal(t, "integer", nc.Properties["controllerManager"].Properties["replicas"].Type, "per-component replicas stay available")
	pt := nc.Properties["apiServer"].Properties["podTemplate"]
	assert.True(t, *pt.XPreserveUnknownFields, "pod templates are opaque to the CRD; capn validates them")
	assert.Len(t, spec.XValidations, 4)
	assert.Equal(t, ".spec.replicas", crds[0].Spec.Versions[0].Subresources.Scale.SpecReplicasPath)
	tmpl := crds[1].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["template"].Properties["spec"]
	assert.NotContains(t, tmpl.Properties, "version", "Cluster API sets the version from the topology")
	assert.Len(t, tmpl.XValidations, 2)
}
