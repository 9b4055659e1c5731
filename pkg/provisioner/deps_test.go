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

// The provisioner works on the served v1alpha1 objects, which the API
// server has already defaulted; the internal version stays inside the API
// server. v1alpha1 itself imports the internal package (for conversion), so
// this checks each package's own imports, not its -deps.
func TestProvisionerDoesNotImportInternalAPI(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go not on PATH")
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "capn.dev/capn/pkg/provisioner/...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.NotEmpty(t, lines)
	for _, line := range lines {
		fields := strings.Fields(line)
		require.NotEmpty(t, fields, "go list printed an empty line: %s", out)
		for _, imp := range fields[1:] {
			if imp == "capn.dev/capn/pkg/apis/capn" || imp == "capn.dev/capn/pkg/apis/capn/install" {
				t.Errorf("%s imports %s", fields[0], imp)
			}
		}
	}
}
