package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

func TestValidateDNS(t *testing.T) {
	shared := func(nc *capn.NestedCluster) { nc.Spec.DataPlane.Mode = capn.DataPlaneShared }
	runInvalid(t, []invalidCase{
		{"unknown mode", func(nc *capn.NestedCluster) { shared(nc); nc.Spec.DNS.Mode = "kube-dns" },
			wantErr{"spec.dns.mode", field.ErrorTypeNotSupported, `"CoreDNS"`}},
		{"CoreDNS without a data plane", func(nc *capn.NestedCluster) {
			nc.Spec.DataPlane.Mode = capn.DataPlaneNone
			nc.Spec.DNS.Mode = capn.DNSCoreDNS
		}, wantErr{"spec.dns.mode", field.ErrorTypeForbidden, "Shared"}},
		{"image without a data plane", func(nc *capn.NestedCluster) {
			nc.Spec.DataPlane.Mode = capn.DataPlaneNone
			nc.Spec.DNS.Image = "registry.example/coredns:v1"
		}, wantErr{"spec.dns.image", field.ErrorTypeForbidden, "Shared"}},
		{"image with mode None", func(nc *capn.NestedCluster) {
			shared(nc)
			nc.Spec.DNS = capn.DNSSpec{Mode: capn.DNSNone, Image: "registry.example/coredns:v1"}
		}, wantErr{"spec.dns.image", field.ErrorTypeForbidden, "mode None"}},
		{"image not a reference", func(nc *capn.NestedCluster) { shared(nc); nc.Spec.DNS.Image = "Not An Image" },
			wantErr{"spec.dns.image", field.ErrorTypeInvalid, "image reference"}},
	})

	for _, dns := range []capn.DNSSpec{{}, {Mode: capn.DNSCoreDNS}, {Mode: capn.DNSNone}, {Image: "registry.example/coredns:v1.15.0"}} {
		nc := validNC(t)
		nc.Spec.DataPlane.Mode = capn.DataPlaneShared
		nc.Spec.DNS = dns
		assert.Empty(t, ValidateNestedCluster(nc), "Shared with %+v", dns)
	}
	nc := validNC(t)
	nc.Spec.DataPlane.Mode = capn.DataPlaneNone
	nc.Spec.DNS.Mode = capn.DNSNone
	assert.Empty(t, ValidateNestedCluster(nc), "None needs no data plane")
}
