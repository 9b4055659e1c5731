package versions

// removedFlags are component flags that a minor no longer accepts, keyed by
// that minor. A binary refuses an unknown flag at start, so a NestedCluster
// that carries one in extraArgs would crash-loop after an upgrade: the API
// refuses it instead. Found by comparing `--help` of each supported release
// (TestProfileFlags runs the rendered flags against the real binaries).
var removedFlags = map[int]map[string][]string{
	37: {"kube-controller-manager": {"concurrent-service-syncs"}},
}

// FlagRemoved returns the minor (of major 1) that removed component's flag,
// if v is that minor or later; 0 when v still accepts it.
func FlagRemoved(v Version, component, flag string) int {
	if v.Major != 1 {
		return 0
	}
	for minor, byComponent := range removedFlags {
		if minor > v.Minor {
			continue
		}
		for _, f := range byComponent[component] {
			if f == flag {
				return minor
			}
		}
	}
	return 0
}
