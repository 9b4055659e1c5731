package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

func TestValidateMetrics(t *testing.T) {
	shared := func(nc *capn.NestedCluster) { nc.Spec.DataPlane.Mode = capn.DataPlaneShared }
	runInvalid(t, []invalidCase{
		{"unknown mode", func(nc *capn.NestedCluster) { shared(nc); nc.Spec.Metrics.Mode = "Prometheus" },
			wantErr{"spec.metrics.mode", field.ErrorTypeNotSupported, `"MetricsServer"`}},
		{"MetricsServer without a data plane", func(nc *capn.NestedCluster) {
			nc.Spec.DataPlane.Mode = capn.DataPlaneNone
			nc.Spec.Metrics.Mode = capn.MetricsServer
		}, wantErr{"spec.metrics.mode", field.ErrorTypeForbidden, "Shared"}},
		{"image without a data plane", func(nc *capn.NestedCluster) {
			nc.Spec.DataPlane.Mode = capn.DataPlaneNone
			nc.Spec.Metrics.Image = "registry.example/metrics-server:v1"
		}, wantErr{"spec.metrics.image", field.ErrorTypeForbidden, "Shared"}},
		{"image with mode None", func(nc *capn.NestedCluster) {
			shared(nc)
			nc.Spec.Metrics = capn.MetricsSpec{Mode: capn.MetricsNone, Image: "registry.example/metrics-server:v1"}
		}, wantErr{"spec.metrics.image", field.ErrorTypeForbidden, "mode None"}},
		{"image not a reference", func(nc *capn.NestedCluster) { shared(nc); nc.Spec.Metrics.Image = "Not An Image" },
			wantErr{"spec.metrics.image", field.ErrorTypeInvalid, "image reference"}},
	})

	for _, m := range []capn.MetricsSpec{{}, {Mode: capn.MetricsServer}, {Mode: capn.MetricsNone}, {Image: "registry.example/metrics-server:v0.8.0"}} {
		nc := validNC(t)
		nc.Spec.DataPlane.Mode = capn.DataPlaneShared
		nc.Spec.Metrics = m
		assert.Empty(t, ValidateNestedCluster(nc), "Shared with %+v", m)
	}
	nc := validNC(t)
	nc.Spec.DataPlane.Mode = capn.DataPlaneNone
	nc.Spec.Metrics.Mode = capn.MetricsNone
	assert.Empty(t, ValidateNestedCluster(nc), "None needs no data plane")
}
