package crdschema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// A document shaped like kube-openapi's v3 output: $ref wrapped in allOf
// with a default, Quantity as a oneOf, FieldsV1 as a bare object, zero
// defaults (one on a list-map key that is not required, which a CRD needs),
// extensions a CRD does not have.
const widgetDoc = `{"components": {"schemas": {
  "com.example.v1.Widget": {
    "type": "object",
    "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
    "properties": {
      "apiVersion": {"type": "string"},
      "metadata": {"default": {}, "allOf": [{"$ref": "#/components/schemas/meta.ObjectMeta"}]},
      "spec": {"description": "the spec", "default": {}, "allOf": [{"$ref": "#/components/schemas/com.example.v1.Spec"}]}
    }
  },
  "com.example.v1.Spec": {
    "description": "Spec is overridden by the referring field's description.",
    "type": "object",
    "required": ["ports"],
    "properties": {
      "size": {"$ref": "#/components/schemas/resource.Quantity"},
      "name": {"type": "string", "default": ""},
      "raw": {"$ref": "#/components/schemas/meta.FieldsV1"},
      "ports": {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["port", "protocol"],
        "x-kubernetes-patch-strategy": "merge",
        "x-kubernetes-patch-merge-key": "port",
        "items": {"default": {}, "allOf": [{"$ref": "#/components/schemas/com.example.v1.Port"}]}
      },
      "refs": {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string", "default": ""}}}
      },
      "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}}
    }
  },
  "com.example.v1.Port": {
    "type": "object",
    "required": ["port"],
    "properties": {
      "port": {"type": "integer", "format": "int32", "default": 0},
      "protocol": {"type": "string", "default": "TCP", "enum": ["TCP", "UDP"]}
    }
  },
  "resource.Quantity": {"description": "a quantity", "oneOf": [{"type": "string"}, {"type": "number"}]},
  "meta.FieldsV1": {"type": "object"},
  "meta.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}}
}}}`

func TestCRDSchema(t *testing.T) {
	got, dropped, err := Convert([]byte(widgetDoc), widgetGVK)
	require.NoError(t, err)
	want := `{
	  "type": "object",
	  "properties": {
	    "apiVersion": {"type": "string"},
	    "metadata": {"type": "object"},
	    "spec": {
	      "description": "the spec",
	      "type": "object",
	      "required": ["ports"],
	      "properties": {
	        "size": {"description": "a quantity", "anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
	        "name": {"type": "string"},
	        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
	        "ports": {
	          "type": "array",
	          "x-kubernetes-list-type": "map",
	          "x-kubernetes-list-map-keys": ["port", "protocol"],
	          "items": {
	            "type": "object",
	            "required": ["port"],
	            "properties": {
	              "port": {"type": "integer", "format": "int32"},
	              "protocol": {"type": "string", "default": "TCP", "enum": ["TCP", "UDP"]}
	            }
	          }
	        },
	        "refs": {
	          "type": "array",
	          "x-kubernetes-list-type": "map",
	          "x-kubernetes-list-map-keys": ["name"],
	          "items": {"type": "object", "properties": {"name": {"type": "string", "default": ""}}}
	        },
	        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
	      }
	    }
	  }
	}`
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, want, string(gotJSON))
	assert.Equal(t, []string{"default (zero value)", "x-kubernetes-group-version-kind", "x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy"}, dropped)
}

func TestCRDSchemaRefusesWhatACRDCannotSay(t *testing.T) {
	for name, tc := range map[string]struct{ doc, err string }{
		"no such kind": {`{"components": {"schemas": {}}}`, "no schema for example.com/v1, Kind=Widget"},
		"recursion": {`{"components": {"schemas": {
		  "W": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
		        "properties": {"child": {"$ref": "#/components/schemas/W"}}}}}}`, "W > W: a recursive type cannot be a CRD schema"},
		"dangling ref": {`{"components": {"schemas": {
		  "W": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
		        "properties": {"child": {"$ref": "#/components/schemas/Nope"}}}}}}`, `"#/components/schemas/Nope": no such schema`},
		"other oneOf": {`{"components": {"schemas": {
		  "W": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
		        "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "boolean"}]}}}}}}`, "only string with integer or number is converted"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := Convert([]byte(tc.doc), widgetGVK)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}
