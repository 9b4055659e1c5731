package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/controlplane/v1alpha1"
	infrav1alpha1 "capn.dev/capn/pkg/apis/infrastructure/v1alpha1"
	"capn.dev/capn/pkg/apiserver"
	"capn.dev/capn/pkg/crdschema"
	capnopenapi "capn.dev/capn/pkg/generated/openapi"
	"capn.dev/capn/pkg/provisioner/clusterapi"
)

// kind is one CRD: its names and the model its schema comes from.
type kind struct {
	group, kind, plural, model string
	shortNames                 []string
	// embedsNestedCluster: the schema carries a NestedCluster spec, whose
	// pod templates are kept opaque (see opaquePodTemplates).
	embedsNestedCluster bool
	status, scale       bool
	columns             []apiextensionsv1.CustomResourceColumnDefinition
	// validations are CEL rules on spec (or spec.template.spec).
	validations apiextensionsv1.ValidationRules
	// specPath leads from the root to the spec the rules apply to.
	specPath []string
}

var age = apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}

// nestedClusterRules keep spec.version and spec.replicas the only way to
// set what Cluster API drives, so there is one answer to "which version".
var nestedClusterRules = apiextensionsv1.ValidationRules{
	{Rule: "!has(self.nestedCluster) || !has(self.nestedCluster.version)",
		Message: "nestedCluster.version may not be set: spec.version sets it", FieldPath: ".nestedCluster.version", Reason: ptr.To(apiextensionsv1.FieldValueForbidden)},
	{Rule: "!has(self.nestedCluster) || !has(self.nestedCluster.apiServer) || !has(self.nestedCluster.apiServer.replicas)",
		Message: "nestedCluster.apiServer.replicas may not be set: spec.replicas sets it", FieldPath: ".nestedCluster.apiServer.replicas", Reason: ptr.To(apiextensionsv1.FieldValueForbidden)},
}

func kinds() []kind {
	return []kind{{
		group: v1alpha1.GroupName, kind: "NestedControlPlane", plural: "nestedcontrolplanes", shortNames: []string{"ncp"},
		model: v1alpha1.NestedControlPlane{}.OpenAPIModelName(), embedsNestedCluster: true, status: true, scale: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Cluster", Type: "string", JSONPath: `.metadata.labels['cluster\.x-k8s\.io/cluster-name']`},
			{Name: "Initialized", Type: "boolean", JSONPath: ".status.initialization.controlPlaneInitialized"},
			{Name: "Available", Type: "string", JSONPath: `.status.conditions[?(@.type=="Available")].status`},
			{Name: "Replicas", Type: "integer", JSONPath: ".status.replicas"},
			{Name: "Ready", Type: "integer", JSONPath: ".status.readyReplicas"},
			{Name: "Version", Type: "string", JSONPath: ".status.version"},
			age,
		},
		specPath: []string{"spec"},
		validations: append(apiextensionsv1.ValidationRules{
			{Rule: `self.version.matches('^v?[0-9]+\\.[0-9]+\\.[0-9]+$')`, Message: "must be a Kubernetes version such as v1.37.2", FieldPath: ".version", Reason: ptr.To(apiextensionsv1.FieldValueInvalid)},
			{Rule: "!has(oldSelf.controlPlaneEndpoint) || !has(oldSelf.controlPlaneEndpoint.host) || (has(self.controlPlaneEndpoint) && self.controlPlaneEndpoint == oldSelf.controlPlaneEndpoint)",
				Message: "is set by capn once and does not change", FieldPath: ".controlPlaneEndpoint", Reason: ptr.To(apiextensionsv1.FieldValueForbidden)},
		}, nestedClusterRules...),
	}, {
		group: v1alpha1.GroupName, kind: "NestedControlPlaneTemplate", plural: "nestedcontrolplanetemplates",
		model: v1alpha1.NestedControlPlaneTemplate{}.OpenAPIModelName(), embedsNestedCluster: true,
		columns:  []apiextensionsv1.CustomResourceColumnDefinition{age},
		specPath: []string{"spec", "template", "spec"}, validations: nestedClusterRules,
	}, {
		group: infrav1alpha1.GroupName, kind: "NestedInfraCluster", plural: "nestedinfraclusters",
		model: infrav1alpha1.NestedInfraCluster{}.OpenAPIModelName(), status: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Cluster", Type: "string", JSONPath: `.metadata.labels['cluster\.x-k8s\.io/cluster-name']`},
			{Name: "Provisioned", Type: "boolean", JSONPath: ".status.initialization.provisioned"},
			age,
		},
	}, {
		group: infrav1alpha1.GroupName, kind: "NestedInfraClusterTemplate", plural: "nestedinfraclustertemplates",
		model:   infrav1alpha1.NestedInfraClusterTemplate{}.OpenAPIModelName(),
		columns: []apiextensionsv1.CustomResourceColumnDefinition{age},
	}}
}

// build returns the CRDs, schemas from the OpenAPI definitions built the way
// capn-apiserver builds its own.
func build() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	ks := kinds()
	var models []string
	for _, k := range ks {
		models = append(models, k.model)
	}
	cfg := genericapiserver.DefaultOpenAPIV3Config(capnopenapi.GetOpenAPIDefinitions, openapi.NewDefinitionNamer(apiserver.Scheme))
	defs, err := builder3.BuildOpenAPIDefinitionsForResources(cfg, models...)
	if err != nil {
		return nil, fmt.Errorf("OpenAPI definitions: %w", err)
	}
	raw, err := json.Marshal(defs)
	if err != nil {
		return nil, err
	}
	var schemas map[string]map[string]any
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, k := range ks {
		props, _, err := crdschema.ConvertModel(schemas, k.model)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.kind, err)
		}
		out = append(out, k.crd(props))
	}
	return out, nil
}

func (k kind) crd(props *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	if k.embedsNestedCluster {
		edit(props, append(slices.Clone(k.specPath), "nestedCluster"), func(nc *apiextensionsv1.JSONSchemaProps) {
			opaquePodTemplates(nc)
			nc.Description = "nestedCluster is the rest of the NestedCluster's spec (see `kubectl explain nestedcluster.spec`); " +
				"version and apiServer.replicas are set by this object's version and replicas."
		})
	}
	if len(k.validations) > 0 {
		edit(props, k.specPath, func(spec *apiextensionsv1.JSONSchemaProps) { spec.XValidations = k.validations })
	}
	v := apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v1alpha1", Served: true, Storage: true,
		Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props},
		AdditionalPrinterColumns: k.columns,
	}
	if k.status || k.scale {
		v.Subresources = &apiextensionsv1.CustomResourceSubresources{}
	}
	if k.status {
		v.Subresources.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
	}
	if k.scale {
		v.Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas",
			StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.selector")}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: k.plural + "." + k.group,
			Labels: map[string]string{clusterapi.ContractLabel: "v1alpha1"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: k.group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: k.plural, Singular: strings.ToLower(k.kind), Kind: k.kind,
				ListKind: k.kind + "List", ShortNames: k.shortNames, Categories: []string{"cluster-api"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{v},
		},
	}
}

// edit applies f to the schema at path (object properties) under props;
// Properties is a map of structs, so each level is copied and stored back.
func edit(props *apiextensionsv1.JSONSchemaProps, path []string, f func(*apiextensionsv1.JSONSchemaProps)) {
	if len(path) == 0 {
		f(props)
		return
	}
	child := props.Properties[path[0]]
	edit(&child, path[1:], f)
	props.Properties[path[0]] = child
}

// opaquePodTemplates replaces each component's podTemplate (a
// PodTemplateSpec, about a fifth of a megabyte of schema each) with an
// object that keeps its fields: capn-apiserver validates it, field by field
// against its allow-list, when the controller writes the NestedCluster, and
// the refusal is on the NestedControlPlane's Reconciled condition.
func opaquePodTemplates(p *apiextensionsv1.JSONSchemaProps) {
	for name, child := range p.Properties {
		if name == "podTemplate" {
			child = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true),
				Description: "podTemplate is a PodTemplateSpec merged into the component's pods; capn-apiserver validates it when the NestedCluster is written."}
		} else {
			opaquePodTemplates(&child)
		}
		p.Properties[name] = child
	}
}
