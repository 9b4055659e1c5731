package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/versions"
)

func TestTenantMetricsImageFlag(t *testing.T) {
	o := parse(t)
	assert.Equal(t, versions.MetricsServerImage, o.DataPlane.MetricsImage)
	assert.Equal(t, versions.MetricsServerImage, o.DataPlane.builders().MetricsImage)

	o = parse(t, "--tenant-metrics-image=registry.example/metrics-server:v9")
	assert.Empty(t, o.DataPlane.Validate())
	assert.Equal(t, "registry.example/metrics-server:v9", o.DataPlane.builders().MetricsImage)

	for _, bad := range []string{"", "Not An Image"} {
		errs := parse(t, "--tenant-metrics-image="+bad).DataPlane.Validate()
		require.Len(t, errs, 1, "%q", bad)
		assert.ErrorContains(t, errs[0], "--tenant-metrics-image")
	}
}
