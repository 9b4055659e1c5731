package provisioner

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Dependencies point one way: the provisioner and the registry both depend
// on the API packages, never on each other (cmd/server wires them).
func TestProvisionerDoesNotImportRegistry(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "capn.dev/capn/pkg/provisioner/...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "capn.dev/capn/pkg/registry") || strings.HasPrefix(dep, "capn.dev/capn/pkg/apiserver") {
			t.Errorf("the provisioner imports %s", dep)
		}
	}
}
