// Package layering checks that dependencies point one way: the registry,
// the provisioner, the syncer and the kubectl plugin each build on the API
// packages and on the shared tenant vocabulary (pkg/tenant), never on one
// another. cmd/ and the e2e tests wire them together.
package layering

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "capn.dev/capn/"

// forbidden maps each layer to the packages it must not reach, directly or
// through another package, in its code or in its tests.
var forbidden = map[string][]string{
	"pkg/registry":    {"pkg/provisioner", "pkg/syncer", "pkg/plugin"},
	"pkg/provisioner": {"pkg/registry", "pkg/apiserver", "pkg/syncer", "pkg/plugin"},
	"pkg/syncer":      {"pkg/registry", "pkg/apiserver", "pkg/provisioner", "pkg/plugin", "pkg/cmd/server"},
	"pkg/plugin":      {"pkg/registry", "pkg/apiserver", "pkg/provisioner", "pkg/syncer"},
	// The bottom: what every layer may use must not pull a layer in.
	"pkg/apis":   {"pkg/registry", "pkg/apiserver", "pkg/provisioner", "pkg/syncer", "pkg/plugin"},
	"pkg/tenant": {"pkg/registry", "pkg/apiserver", "pkg/provisioner", "pkg/syncer", "pkg/plugin", "pkg/apis"},
	// Flags the provisioner renders and capn-syncer parses.
	"pkg/cmd/syncer": {"pkg/registry", "pkg/apiserver", "pkg/provisioner", "pkg/syncer", "pkg/plugin"},
}

// imports lists every package pattern reaches (go list -deps), with its
// tests when withTests (-test), each with its direct imports; a test
// variant such as "p [p.test]" is reported as p.
func imports(t *testing.T, pattern string, withTests bool) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go not on PATH")
	args := []string{"list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`}
	if withTests {
		args = append(args, "-test")
	}
	args = append(args, pattern)
	out, err := exec.Command(goBin, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		require.NotEmpty(t, fields, "go list printed an empty line: %s", out)
		pkg, _, _ := strings.Cut(fields[0], " [")
		graph[pkg] = append(graph[pkg], fields[1:]...)
	}
	require.NotEmpty(t, graph)
	return graph
}

func within(pkg, dir string) bool {
	p := module + dir
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

func TestLayers(t *testing.T) {
	for layer, bans := range forbidden {
		t.Run(layer, func(t *testing.T) {
			graph := imports(t, module+layer+"/...", true)
			for pkg, imps := range graph {
				for _, imp := range imps {
					imp, _, _ = strings.Cut(imp, " [")
					for _, ban := range bans {
						if within(imp, ban) && !within(pkg, ban) {
							t.Errorf("%s reaches %s: %s imports %s", layer, ban, pkg, imp)
						}
					}
				}
			}
		})
	}
}

// The provisioner works on the served v1alpha1 objects, which the API
// server has already defaulted; the internal version stays inside the API
// server. v1alpha1 itself imports the internal package (for conversion), so
// this checks the provisioner's own imports, not its -deps. Tests may use
// the internal version to default objects as the API server would.
func TestProvisionerDoesNotImportInternalAPI(t *testing.T) {
	for pkg, imps := range imports(t, module+"pkg/provisioner/...", false) {
		if !within(pkg, "pkg/provisioner") {
			continue
		}
		for _, imp := range imps {
			if imp == module+"pkg/apis/capn" || imp == module+"pkg/apis/capn/install" {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}
