// Package versions declares, in one place, which Kubernetes versions a tenant
// control plane may run and the skew rules between them. The API validation,
// the defaulting and (later) the provisioner's flag profiles all read it, so
// adding a minor is a one-line change here plus a profile.
package versions

import (
	"fmt"
	"regexp"
	"strconv"
)

// Minor is one supported Kubernetes minor release.
type Minor struct {
	// Minor is the minor number within major 1, e.g. 37 for 1.37.
	Minor int
	// Default is the patch release used when only the minor is implied,
	// and the one whose images capn builds for local clusters.
	Default string
}

// Supported lists the minors capn can run, oldest first.
var Supported = []Minor{
	{Minor: 36, Default: "v1.36.3"},
	{Minor: 37, Default: "v1.37.2"},
}

// Default is the version a NestedCluster gets when spec.version is empty:
// the newest supported.
func Default() string { return Supported[len(Supported)-1].Default }

// Version is a parsed Kubernetes release version.
type Version struct {
	Major, Minor, Patch int
}

func (v Version) String() string { return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare returns -1, 0 or 1.
func (v Version) Compare(o Version) int {
	for _, d := range [][2]int{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		if d[0] < d[1] {
			return -1
		}
		if d[0] > d[1] {
			return 1
		}
	}
	return 0
}

// Pre-releases are refused on purpose: capn only provisions released builds.
// Each number has at most maxDigits digits: real releases are far below that,
// and an unbounded one overflows int and then compares as the newest version
// there is, so a cluster set to it could never be changed back.
const maxDigits = 4

var versionRE = regexp.MustCompile(fmt.Sprintf(`^v(0|[1-9][0-9]{0,%[1]d})\.(0|[1-9][0-9]{0,%[1]d})\.(0|[1-9][0-9]{0,%[1]d})$`, maxDigits-1))

// Parse accepts exactly "vMAJOR.MINOR.PATCH".
func Parse(s string) (Version, error) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("must be of the form vMAJOR.MINOR.PATCH, each at most %d digits, e.g. %s", maxDigits, Default())
	}
	var v Version
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	v.Patch, _ = strconv.Atoi(m[3])
	return v, nil
}

// IsSupported reports whether v's minor is in Supported.
func IsSupported(v Version) bool {
	if v.Major != 1 {
		return false
	}
	for _, m := range Supported {
		if m.Minor == v.Minor {
			return true
		}
	}
	return false
}

// SupportedMinors returns "v1.36", "v1.37", ... for error messages.
func SupportedMinors() []string {
	out := make([]string, 0, len(Supported))
	for _, m := range Supported {
		out = append(out, fmt.Sprintf("v1.%d", m.Minor))
	}
	return out
}

// CheckStep applies the skew policy to a version change from old to new:
// no downgrade and at most one minor step at a time. An empty string means
// the step is allowed.
func CheckStep(from, to Version) string {
	switch {
	case to.Compare(from) < 0:
		return fmt.Sprintf("downgrade from %s to %s is not supported", from, to)
	case to.Major != from.Major:
		return fmt.Sprintf("cannot change major version from %s to %s", from, to)
	case to.Minor > from.Minor+1:
		return fmt.Sprintf("cannot skip minor versions: upgrade from %s to v%d.%d first", from, from.Major, from.Minor+1)
	}
	return ""
}
