package provisioner

import (
	"flag"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

// Accepted so `go test ./pkg/provisioner/... -update` works for every
// package; only the builders have golden files.
var _ = flag.Bool("update", false, "rewrite golden files (builders only)")

func nc(ns, name string) *capn.NestedCluster {
	c := &capn.NestedCluster{}
	c.Namespace, c.Name = ns, name
	return c
}

func TestManagementNamespace(t *testing.T) {
	longName := strings.Repeat("n", validation.MaxNameLength)
	longNS := strings.Repeat("s", 63)
	cases := []struct{ ns, name string }{
		{"default", "demo"},
		{"team-a", longName},
		{longNS, "demo"},
		{longNS, longName},
		{"a", "b"},
		// A cut landing on a dash.
		{strings.Repeat("x", 48) + "-y", "z"},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		got := ManagementNamespace(nc(tc.ns, tc.name))
		if again := ManagementNamespace(nc(tc.ns, tc.name)); again != got {
			t.Errorf("%s/%s: not deterministic: %s then %s", tc.ns, tc.name, got, again)
		}
		if errs := utilvalidation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("%s/%s: %q is not a DNS-1123 label: %v", tc.ns, tc.name, got, errs)
		}
		if !strings.HasPrefix(got, "capn-") || strings.Contains(got, "--") {
			t.Errorf("%s/%s: %q: want capn-<ns>-<name>-<hash> without a doubled dash", tc.ns, tc.name, got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%s/%s and %s map to the same namespace %s", tc.ns, tc.name, prev, got)
		}
		seen[got] = tc.ns + "/" + tc.name
	}
	if got := ManagementNamespace(nc("default", "demo")); got != "capn-default-demo-02c8c86b" {
		t.Errorf("short names must stay readable and stable across releases: got %s", got)
	}
	// Joins that read the same, and long names that share the cut prefix,
	// still differ by hash.
	pairs := [][2]*capn.NestedCluster{
		{nc("a-b", "c"), nc("a", "b-c")},
		{nc(longNS, longName), nc(longNS, longName[:39]+"m")},
	}
	for _, p := range pairs {
		if a, b := ManagementNamespace(p[0]), ManagementNamespace(p[1]); a == b {
			t.Errorf("%s/%s and %s/%s collide: %s", p[0].Namespace, p[0].Name, p[1].Namespace, p[1].Name, a)
		}
	}
}

func TestLabels(t *testing.T) {
	c := nc("team-a", "demo")
	sel := SelectorLabels(c, ComponentAPIServer)
	if !labels.Equals(sel, nestedcluster.APIServerSelector("demo")) {
		t.Errorf("apiserver selector %v, want nestedcluster.APIServerSelector %v", sel, nestedcluster.APIServerSelector("demo"))
	}
	for _, comp := range []string{ComponentEtcd, ComponentAPIServer, ComponentControllerManager, ComponentScheduler} {
		pod := labels.Set(ComponentLabels(c, comp))
		if !labels.SelectorFromSet(SelectorLabels(c, comp)).Matches(pod) {
			t.Errorf("%s: component labels %v not matched by its selector", comp, pod)
		}
		for k, v := range Labels(c) {
			if pod[k] != v {
				t.Errorf("%s: component labels %v lack %s=%s", comp, pod, k, v)
			}
		}
		for k, v := range pod {
			if errs := utilvalidation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%s: label %s=%q: %v", comp, k, v, errs)
			}
		}
	}
	if ComponentLabels(c, ComponentEtcd)[ComponentLabel] == ComponentLabels(c, ComponentAPIServer)[ComponentLabel] {
		t.Error("components must be told apart by label")
	}
}
