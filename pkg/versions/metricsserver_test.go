package versions

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metricsServerRequire matches the sigs.k8s.io/metrics-server requirement,
// on a one-line require or inside a require block (where the `tool` line
// leaves it, marked indirect).
var metricsServerRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?sigs\.k8s\.io/metrics-server\s+(v\S+)`)

// metricsServerReplace matches a replace of it, one-line or in a replace
// block.
var metricsServerReplace = regexp.MustCompile(`(?m)^\s*(?:replace\s+)?sigs\.k8s\.io/metrics-server(?:\s+v\S+)?\s+=>`)

// metricsServerTool matches the tool line that keeps `go mod tidy` from
// dropping the requirement.
var metricsServerTool = regexp.MustCompile(`(?m)^\s*(?:tool\s+)?sigs\.k8s\.io/metrics-server/cmd/metrics-server\s*$`)

// The image tag and the module version hack/build-tools.sh builds (and keys
// the cache directory hack/build-images.sh takes the tag from by) are kept in
// two places; this keeps them equal.
func TestMetricsServerImageMatchesModule(t *testing.T) {
	gomod, err := os.ReadFile("../../hack/tools/metrics-server/go.mod")
	require.NoError(t, err)
	m := metricsServerRequire.FindAllSubmatch(gomod, -1)
	require.Len(t, m, 1, "hack/tools/metrics-server/go.mod must require sigs.k8s.io/metrics-server exactly once")
	// A replace would make the built version differ from the required one.
	assert.False(t, metricsServerReplace.Match(gomod), "hack/tools/metrics-server/go.mod must not replace sigs.k8s.io/metrics-server")
	assert.True(t, metricsServerTool.Match(gomod), "hack/tools/metrics-server/go.mod must name sigs.k8s.io/metrics-server/cmd/metrics-server as a tool")

	repo, tag, ok := strings.Cut(MetricsServerImage, ":")
	require.True(t, ok, "MetricsServerImage %q has no tag", MetricsServerImage)
	assert.Equal(t, "registry.k8s.io/metrics-server/metrics-server", repo)
	assert.Equal(t, string(m[0][1]), tag, "MetricsServerImage's tag must be the metrics-server version hack/tools/metrics-server/go.mod pins")
}
