package versions

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]Version{
		"v1.37.2":    {1, 37, 2},
		"v1.36.0":    {1, 36, 0},
		"v0.0.0":     {0, 0, 0},
		"v2.10.11":   {2, 10, 11},
		"v1.37.9999": {1, 37, 9999},
	}
	for s, want := range good {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, want)
		}
		if got.String() != s {
			t.Errorf("Parse(%q).String() = %q, want it to round-trip", s, got.String())
		}
	}
	bad := []string{
		"", "1.37.2", "v1.37", "v1", "v1.37.2.1", "V1.37.2", "v01.37.2", "v1.037.2", "v1.37.02",
		"v1.37.2-rc.0", "v1.37.2+build", " v1.37.2", "v1.37.2 ", "v-1.37.2", "latest",
		// Overlong numbers used to overflow into the largest version there is.
		"v1.37.99999999999999999999999", "v1.37.10000", "v99999.0.0",
	}
	for _, s := range bad {
		if v, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %v, want error", s, v)
		} else if !strings.Contains(err.Error(), "vMAJOR.MINOR.PATCH") {
			t.Errorf("Parse(%q) error %q should show the expected form", s, err)
		}
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"v1.37.2", "v1.37.2", 0},
		{"v1.37.1", "v1.37.2", -1},
		{"v1.37.0", "v1.36.9", 1},
		{"v2.0.0", "v1.99.99", 1},
		{"v1.9.0", "v1.10.0", -1}, // numeric, not lexical
	}
	for _, tc := range cases {
		if got := mustParse(t, tc.a).Compare(mustParse(t, tc.b)); got != tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCheckStep(t *testing.T) {
	cases := []struct {
		from, to string
		wantMsg  string // "" means allowed
	}{
		{"v1.37.2", "v1.37.2", ""},
		{"v1.37.0", "v1.37.2", ""},
		{"v1.36.3", "v1.37.0", ""},
		{"v1.36.0", "v1.37.9", ""},
		{"v1.37.2", "v1.37.1", "downgrade from v1.37.2 to v1.37.1"},
		{"v1.37.0", "v1.36.3", "downgrade"},
		{"v1.35.0", "v1.37.0", "cannot skip minor versions: upgrade from v1.35.0 to v1.36 first"},
		{"v1.36.3", "v1.38.0", "upgrade from v1.36.3 to v1.37 first"},
		{"v1.37.0", "v2.0.0", "cannot change major version"},
		{"v2.0.0", "v1.37.0", "downgrade"},
	}
	for _, tc := range cases {
		got := CheckStep(mustParse(t, tc.from), mustParse(t, tc.to))
		if (tc.wantMsg == "") != (got == "") || !strings.Contains(got, tc.wantMsg) {
			t.Errorf("CheckStep(%s, %s) = %q, want %q", tc.from, tc.to, got, tc.wantMsg)
		}
	}
}

func TestSupported(t *testing.T) {
	if len(Supported) == 0 {
		t.Fatal("no supported versions")
	}
	for i, m := range Supported {
		v := mustParse(t, m.Default)
		if v.Major != 1 || v.Minor != m.Minor {
			t.Errorf("Supported[%d]: default %s is not a v1.%d release", i, m.Default, m.Minor)
		}
		if !IsSupported(v) {
			t.Errorf("IsSupported(%s) = false for a listed default", m.Default)
		}
		// Oldest first, one minor apart: CheckStep only ever allows single
		// steps, so a gap would strand clusters on the older minor.
		if i > 0 && m.Minor != Supported[i-1].Minor+1 {
			t.Errorf("Supported is not contiguous and ascending at %d: %d after %d", i, m.Minor, Supported[i-1].Minor)
		}
	}
	for _, s := range []string{"v2.37.0", "v1.0.0", "v1.99.0"} {
		if IsSupported(mustParse(t, s)) {
			t.Errorf("IsSupported(%s) = true", s)
		}
	}
	if got, want := len(SupportedMinors()), len(Supported); got != want {
		t.Errorf("SupportedMinors() has %d entries, want %d", got, want)
	}
	for i, s := range SupportedMinors() {
		if !strings.HasPrefix(Supported[i].Default, s+".") {
			t.Errorf("SupportedMinors()[%d] = %q does not match %s", i, s, Supported[i].Default)
		}
	}
}

func TestDefaultIsNewest(t *testing.T) {
	d := mustParse(t, Default())
	for _, m := range Supported {
		if mustParse(t, m.Default).Compare(d) > 0 {
			t.Errorf("Default() = %s but %s is newer", Default(), m.Default)
		}
	}
	if d.Minor != Supported[len(Supported)-1].Minor {
		t.Errorf("Default() = %s, want the newest supported minor", Default())
	}
}

func mustParse(t *testing.T, s string) Version {
	t.Helper()
	v, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return v
}
