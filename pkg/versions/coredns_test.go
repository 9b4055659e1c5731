package versions

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corednsRequire matches the github.com/coredns/coredns requirement, on a
// one-line require or inside a require block.
var corednsRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/coredns/coredns\s+(v\S+)`)

// corednsReplace matches a replace of it, one-line or in a replace block.
var corednsReplace = regexp.MustCompile(`(?m)^\s*(?:replace\s+)?github\.com/coredns/coredns(?:\s+v\S+)?\s+=>`)

// The image tag and the module version hack/build-tools.sh builds (and
// hack/build-images.sh tags) are kept in two places; this keeps them equal.
func TestCoreDNSImageMatchesModule(t *testing.T) {
	gomod, err := os.ReadFile("../../hack/tools/coredns/go.mod")
	require.NoError(t, err)
	m := corednsRequire.FindAllSubmatch(gomod, -1)
	require.Len(t, m, 1, "hack/tools/coredns/go.mod must require github.com/coredns/coredns exactly once")
	// A replace would make the built version differ from the required one.
	assert.False(t, corednsReplace.Match(gomod), "hack/tools/coredns/go.mod must not replace github.com/coredns/coredns")

	repo, tag, ok := strings.Cut(CoreDNSImage, ":")
	require.True(t, ok, "CoreDNSImage %q has no tag", CoreDNSImage)
	assert.Equal(t, "registry.k8s.io/coredns/coredns", repo)
	assert.Equal(t, string(m[0][1]), tag, "CoreDNSImage's tag must be the CoreDNS version hack/tools/coredns/go.mod pins")
}
