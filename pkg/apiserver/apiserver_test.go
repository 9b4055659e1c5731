package apiserver

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func TestNegotiatedSerializerHasNoProtobuf(t *testing.T) {
	var types []string
	for _, info := range NegotiatedSerializer.SupportedMediaTypes() {
		types = append(types, info.MediaType)
		if info.MediaType == runtime.ContentTypeProtobuf {
			t.Errorf("protobuf is offered, but the capn.dev types cannot be encoded as protobuf")
		}
	}
	if len(types) == 0 || types[0] != runtime.ContentTypeJSON {
		t.Errorf("media types %v, want JSON first", types)
	}
}

// What kube-controller-manager's metadata client (namespace deleter,
// garbage collector) asks for: protobuf first, JSON as the fallback.
func TestMetadataClientGetsJSONNestedClusterList(t *testing.T) {
	const accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	req := httptest.NewRequest("GET", "/apis/capn.dev/v1alpha1/namespaces/default/nestedclusters", nil)
	req.Header.Set("Accept", accept)
	mt, info, err := negotiation.NegotiateOutputMediaType(req, NegotiatedSerializer, negotiation.DefaultEndpointRestrictions)
	if err != nil {
		t.Fatal(err)
	}
	if info.MediaType != runtime.ContentTypeJSON {
		t.Fatalf("negotiated %s (%+v), want JSON", info.MediaType, mt)
	}
	// And a NestedClusterList encodes with what was negotiated.
	list := &v1alpha1.NestedClusterList{Items: []v1alpha1.NestedCluster{{}}}
	list.Items[0].Name = "demo"
	enc := NegotiatedSerializer.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion)
	var buf bytes.Buffer
	if err := enc.Encode(list, &buf); err != nil {
		t.Fatalf("encoding a NestedClusterList as %s: %v", info.MediaType, err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"demo"`)) {
		t.Errorf("encoded list lacks the item: %s", buf.String())
	}
}
