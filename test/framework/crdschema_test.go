package framework

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/builder3"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apiserver"
	capnopenapi "capn.dev/capn/pkg/generated/openapi"
)

// TestCRDSchemaOfNestedCluster converts capn's own OpenAPI (built the way
// capn-apiserver builds it) and has apiextensions validate the CRD, so a
// change to the API that a CRD cannot mirror fails here, not in
// `make bench-api`.
func TestCRDSchemaOfNestedCluster(t *testing.T) {
	cfg := genericapiserver.DefaultOpenAPIV3Config(capnopenapi.GetOpenAPIDefinitions, openapi.NewDefinitionNamer(apiserver.Scheme))
	defs, err := builder3.BuildOpenAPIDefinitionsForResources(cfg, v1alpha1.NestedCluster{}.OpenAPIModelName())
	require.NoError(t, err)
	doc, err := json.Marshal(map[string]any{"components": map[string]any{"schemas": defs}})
	require.NoError(t, err)

	crd, _, err := NestedClusterMirrorCRD(doc, "bench.capn.dev")
	require.NoError(t, err)
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	assert.Equal(t, "integer", props.Properties["spec"].Properties["apiServer"].Properties["replicas"].Type)
	assert.Equal(t, "string", props.Properties["status"].Properties["selector"].Type)

	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	var internal apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil))
	assert.Empty(t, validation.ValidateCustomResourceDefinition(context.Background(), &internal))
}
