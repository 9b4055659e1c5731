package plugin

import (
	"strings"
	"testing"

	"capn.dev/capn/pkg/versions"
)

func TestVersions(t *testing.T) {
	out, err := run(t, newFake(), "versions")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(versions.Supported) {
		t.Fatalf("got %q", out)
	}
	for i, m := range versions.Supported {
		want := m.Default
		if m.Default == versions.Default() {
			want += " (default)"
		}
		if lines[i] != want {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}
	if !strings.Contains(out, versions.Default()+" (default)") {
		t.Fatalf("default not marked:\n%s", out)
	}
}
