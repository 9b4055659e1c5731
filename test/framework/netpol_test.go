package framework

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The engine's image tag is the version hack/build-images.sh packs: the one
// hack/tools/netpol/go.mod pins.
func TestNetworkPolicyEngineImage(t *testing.T) {
	b, err := os.ReadFile("../../hack/tools/netpol/go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*sigs\.k8s\.io/kube-network-policies (v\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "hack/tools/netpol/go.mod requires no sigs.k8s.io/kube-network-policies")
	_, tag, _ := strings.Cut(NetworkPolicyEngineImage, ":")
	require.Equal(t, string(m[1]), tag)
}
