package install

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/yaml"

	corev1 "k8s.io/api/core/v1"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/validation"
)

// The request path of a NestedCluster write is decode -> default -> convert
// to internal -> validate. These benchmarks measure it on the example
// manifest; BenchmarkDecodeConfigMapBaseline decodes a core object of the
// same byte size with the same machinery, so the ratio shows what capn's
// defaulting, conversion and validation add.

func exampleJSON(b *testing.B) []byte {
	b.Helper()
	raw, err := os.ReadFile("../../../../artifacts/examples/nestedcluster.yaml")
	if err != nil {
		b.Fatal(err)
	}
	js, err := yaml.ToJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	return js
}

func newCodecs() serializer.CodecFactory {
	s := runtime.NewScheme()
	Install(s)
	return serializer.NewCodecFactory(s)
}

func BenchmarkDecodeDefaultConvertValidate(b *testing.B) {
	js := exampleJSON(b)
	codecs := newCodecs()
	dec := codecs.UniversalDecoder(capn.SchemeGroupVersion)
	b.ReportAllocs()
	for b.Loop() {
		obj, _, err := dec.Decode(js, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		nc := obj.(*capn.NestedCluster)
		nc.Namespace = "default"
		if errs := validation.ValidateNestedCluster(nc); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidateUpdate(b *testing.B) {
	js := exampleJSON(b)
	codecs := newCodecs()
	obj, _, err := codecs.UniversalDecoder(capn.SchemeGroupVersion).Decode(js, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	oldNC := obj.(*capn.NestedCluster)
	oldNC.Namespace, oldNC.ResourceVersion = "default", "1"
	newNC := oldNC.DeepCopy()
	newNC.Spec.APIServer.Replicas = new(int32)
	*newNC.Spec.APIServer.Replicas = 3
	b.ReportAllocs()
	for b.Loop() {
		if errs := validation.ValidateNestedClusterUpdate(newNC, oldNC); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkDecodeConfigMapBaseline(b *testing.B) {
	size := len(exampleJSON(b))
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	// Pad the value so the encoded ConfigMap is as long as the example.
	cm := &corev1.ConfigMap{Data: map[string]string{"k": ""}}
	cm.APIVersion, cm.Kind, cm.Name = "v1", "ConfigMap", "demo"
	base, err := json.Marshal(cm)
	if err != nil {
		b.Fatal(err)
	}
	cm.Data["k"] = strings.Repeat("x", max(0, size-len(base)))
	js, err := runtime.Encode(serializer.NewCodecFactory(s).LegacyCodec(corev1.SchemeGroupVersion), cm)
	if err != nil {
		b.Fatal(err)
	}
	dec := serializer.NewCodecFactory(s).UniversalDeserializer()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := dec.Decode(js, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
