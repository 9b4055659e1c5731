// Package crdschema turns the OpenAPI v3 schemas capn generates for its
// types into the structural schemas a CustomResourceDefinition accepts, so a
// CRD never carries a hand-written copy of an API that drifts from it.
package crdschema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Convert turns the schema of kind gvk in an OpenAPI v3 document (what
// kube-apiserver serves at /openapi/v3/apis/<group>/<version>) into the
// structural schema a CustomResourceDefinition accepts, so that a CRD can
// mirror an aggregated API without a hand-written copy that drifts:
//
//   - $ref, and the one-element allOf that kube-openapi wraps a $ref in to
//     give it a description or default, are inlined (a recursive type is
//     an error: a CRD schema cannot express it);
//   - a oneOf of string and integer or number (resource.Quantity,
//     intstr.IntOrString) becomes x-kubernetes-int-or-string, as
//     controller-gen writes it;
//   - an object without properties or additionalProperties (FieldsV1,
//     RawExtension) keeps unknown fields: the real API stores them;
//   - the root's metadata becomes {type: object}, the only form a CRD allows;
//   - a default that is a zero value ("", 0, false, {}, []) is what
//     kube-openapi writes for every non-pointer field, not a defaulting
//     rule, and is dropped, except on a list-map key that is not required
//     (a CRD needs one there); other defaults ("TCP") are kept;
//   - keywords a CRD schema does not have (x-kubernetes-patch-strategy,
//     x-kubernetes-group-version-kind, ...) are dropped.
//
// dropped lists each dropped keyword once, sorted, for the caller to log.
func Convert(doc []byte, gvk schema.GroupVersionKind) (props *apiextensionsv1.JSONSchemaProps, dropped []string, err error) {
	var d struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	root := ""
	for name, s := range d.Components.Schemas {
		if hasGVK(s, gvk) {
			root = name
		}
	}
	if root == "" {
		return nil, nil, fmt.Errorf("no schema for %s in the OpenAPI document", gvk)
	}
	return ConvertModel(d.Components.Schemas, root)
}

// ConvertModel is Convert for the schema named root among schemas (the
// components.schemas of an OpenAPI v3 document, or what
// builder3.BuildOpenAPIDefinitionsForResources returns, as JSON), for a type
// that no served kind is: a CRD's own types have no GVK in capn's document.
func ConvertModel(schemas map[string]map[string]any, root string) (props *apiextensionsv1.JSONSchemaProps, dropped []string, err error) {
	if _, ok := schemas[root]; !ok {
		return nil, nil, fmt.Errorf("no schema %q", root)
	}
	c := &crdConverter{schemas: schemas, dropped: map[string]bool{}}
	out, err := c.convert(map[string]any{"$ref": schemaRefPrefix + root}, nil)
	if err != nil {
		return nil, nil, err
	}
	c.dropZeroDefaults(out, false, nil)
	if p, ok := out["properties"].(map[string]any); ok && p["metadata"] != nil {
		p["metadata"] = map[string]any{"type": "object"}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	props = &apiextensionsv1.JSONSchemaProps{}
	if err := json.Unmarshal(raw, props); err != nil {
		return nil, nil, fmt.Errorf("converted schema: %w", err)
	}
	for k := range c.dropped {
		dropped = append(dropped, k)
	}
	slices.Sort(dropped)
	return props, dropped, nil
}

const schemaRefPrefix = "#/components/schemas/"

// crdSchemaKeywords are the JSONSchemaProps keywords a converted schema
// keeps; $ref, allOf and oneOf are resolved before.
var crdSchemaKeywords = map[string]bool{
	"description": true, "type": true, "format": true, "title": true, "default": true,
	"maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"maxLength": true, "minLength": true, "pattern": true, "maxItems": true, "minItems": true,
	"multipleOf": true, "enum": true, "maxProperties": true, "minProperties": true,
	"required": true, "items": true, "anyOf": true, "properties": true, "additionalProperties": true,
	"nullable": true, "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": true,
	"x-kubernetes-int-or-string": true, "x-kubernetes-list-map-keys": true, "x-kubernetes-list-type": true,
	"x-kubernetes-map-type": true, "x-kubernetes-validations": true,
}

type crdConverter struct {
	schemas map[string]map[string]any
	dropped map[string]bool
}

// convert returns the CRD form of s; stack holds the names of the schemas
// being inlined, to refuse recursion.
func (c *crdConverter) convert(s map[string]any, stack []string) (map[string]any, error) {
	s, stack, err := c.inline(s, stack)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, v := range s {
		switch {
		case k == "oneOf":
			if err := intOrString(v, out); err != nil {
				return nil, fmt.Errorf("%s: %w", strings.Join(stack, " > "), err)
			}
		case !crdSchemaKeywords[k]:
			c.dropped[k] = true
		default:
			out[k] = v
		}
	}
	if out["x-kubernetes-int-or-string"] == true {
		delete(out, "type")
		delete(out, "format")
	}
	if props, ok := out["properties"].(map[string]any); ok {
		conv := map[string]any{}
		for name, p := range props {
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s.%s: not a schema", strings.Join(stack, " > "), name)
			}
			if conv[name], err = c.convert(pm, stack); err != nil {
				return nil, err
			}
		}
		out["properties"] = conv
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := out[k].(map[string]any); ok {
			if out[k], err = c.convert(sub, stack); err != nil {
				return nil, err
			}
		}
	}
	if out["type"] == "object" && out["properties"] == nil && out["additionalProperties"] == nil {
		out["x-kubernetes-preserve-unknown-fields"] = true
	}
	return out, nil
}

// dropZeroDefaults removes zero-value defaults at and under s, except
// s's own when keep and those of the properties named in keepProps: the
// list-map keys of a list's items that are not required.
func (c *crdConverter) dropZeroDefaults(s map[string]any, keep bool, keepProps []any) {
	if d, ok := s["default"]; ok && isZero(d) && !keep {
		delete(s, "default")
		c.dropped["default (zero value)"] = true
	}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		if pm, ok := p.(map[string]any); ok {
			c.dropZeroDefaults(pm, slices.Contains(keepProps, any(name)), nil)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		keys, _ := s["x-kubernetes-list-map-keys"].([]any)
		required, _ := items["required"].([]any)
		keys = slices.DeleteFunc(slices.Clone(keys), func(k any) bool { return slices.Contains(required, k) })
		c.dropZeroDefaults(items, false, keys)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		c.dropZeroDefaults(ap, false, nil)
	}
}

// inline resolves s's $ref (or a one-element allOf around one); the keys
// s sets itself (description, default) win over the referenced schema's.
func (c *crdConverter) inline(s map[string]any, stack []string) (map[string]any, []string, error) {
	for {
		var target map[string]any
		rest := map[string]any{}
		for k, v := range s {
			rest[k] = v
		}
		if ref, ok := s["$ref"].(string); ok {
			name, found := strings.CutPrefix(ref, schemaRefPrefix)
			if !found {
				return nil, nil, fmt.Errorf("$ref %q: only %s<name> is resolved", ref, schemaRefPrefix)
			}
			if slices.Contains(stack, name) {
				return nil, nil, fmt.Errorf("%s: a recursive type cannot be a CRD schema", strings.Join(append(stack, name), " > "))
			}
			if target, ok = c.schemas[name]; !ok {
				return nil, nil, fmt.Errorf("$ref %q: no such schema", ref)
			}
			stack = append(slices.Clone(stack), name)
			delete(rest, "$ref")
		} else if all, ok := s["allOf"].([]any); ok {
			if len(all) != 1 {
				return nil, nil, fmt.Errorf("%s: allOf with %d members is not converted", strings.Join(stack, " > "), len(all))
			}
			if target, ok = all[0].(map[string]any); !ok {
				return nil, nil, fmt.Errorf("%s: allOf member is not a schema", strings.Join(stack, " > "))
			}
			delete(rest, "allOf")
		} else {
			return s, stack, nil
		}
		merged := map[string]any{}
		for k, v := range target {
			merged[k] = v
		}
		for k, v := range rest {
			merged[k] = v
		}
		s = merged
	}
}

// intOrString sets out to the CRD form of a oneOf of scalar types that
// holds a string and a number: what Quantity and IntOrString are.
func intOrString(v any, out map[string]any) error {
	branches, _ := v.([]any)
	var types []string
	for _, b := range branches {
		bm, _ := b.(map[string]any)
		t, _ := bm["type"].(string)
		if len(bm) != 1 || t == "" {
			return fmt.Errorf("oneOf %v: only a oneOf of bare types is converted", v)
		}
		types = append(types, t)
	}
	slices.Sort(types)
	if !reflect.DeepEqual(types, []string{"integer", "string"}) && !reflect.DeepEqual(types, []string{"number", "string"}) {
		return fmt.Errorf("oneOf of %v: only string with integer or number is converted", types)
	}
	out["x-kubernetes-int-or-string"] = true
	out["anyOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
	return nil
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case bool:
		return !x
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func hasGVK(s map[string]any, gvk schema.GroupVersionKind) bool {
	list, _ := s["x-kubernetes-group-version-kind"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
			return true
		}
	}
	return false
}

// DropDescriptions clears every description at and under p: a
// PodTemplateSpec inlined with its descriptions under each component is more
// than etcd's 1.5 MiB request limit (controller-gen's crd:maxDescLen=0 does
// the same).
func DropDescriptions(p *apiextensionsv1.JSONSchemaProps) {
	if p == nil {
		return
	}
	p.Description = ""
	for k, v := range p.Properties {
		DropDescriptions(&v)
		p.Properties[k] = v
	}
	if p.Items != nil {
		DropDescriptions(p.Items.Schema)
		for i := range p.Items.JSONSchemas {
			DropDescriptions(&p.Items.JSONSchemas[i])
		}
	}
	if p.AdditionalProperties != nil {
		DropDescriptions(p.AdditionalProperties.Schema)
	}
	for i := range p.AnyOf {
		DropDescriptions(&p.AnyOf[i])
	}
}
