package provisioner

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/uuid"

	"k8s.io/apimachinery/pkg/labels"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
)

// Accepted so `go test ./pkg/provisioner/... -update` works for every
// package; only the builders have golden files.
var _ = flag.Bool("update", false, "rewrite golden files (builders only)")

func nc(ns, name string) *v1alpha1.NestedCluster {
	c := &v1alpha1.NestedCluster{}
	c.Namespace, c.Name = ns, name
	c.UID = uuid.NewUUID()
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
		{strings.Repeat("x", 24), "zz"},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		c := nc(tc.ns, tc.name)
		got := ManagementNamespace(c)
		assert.Equal(t, got, ManagementNamespace(c), "not deterministic")
		assert.Empty(t, utilvalidation.IsDNS1123Label(got), "%q is not a DNS-1123 label", got)
		assert.True(t, strings.HasPrefix(got, "capn-") && !strings.Contains(got, "--"), "%q: want capn-<ns>-<name>-<uid> without a doubled dash", got)
		assert.True(t, strings.HasSuffix(got, "-"+strings.ReplaceAll(string(c.UID), "-", "")), "%q does not end in all 128 bits of the UID", got)
		if prev, dup := seen[got]; dup {
			t.Errorf("%s/%s and %s map to the same namespace %s", tc.ns, tc.name, prev, got)
		}
		seen[got] = tc.ns + "/" + tc.name
	}
	c := nc("default", "demo")
	c.UID = "6f1c2b9e-3d4a-4e5f-8a7b-0c1d2e3f4a5b"
	assert.Equal(t, "capn-default-demo-6f1c2b9e3d4a4e5f8a7b0c1d2e3f4a5b", ManagementNamespace(c), "short names stay readable")
}

// The security finding: with 32 bits of hash, a tenant could pick a name
// whose legacy namespace is a victim's. The UID-derived name of two
// clusters with any names is never the same, and the same (namespace,
// name) created again gets a new one.
func TestManagementNamespaceNotForgeable(t *testing.T) {
	victim, attacker := nc("team-a", "prod"), nc("team-a", "prod")
	assert.NotEqual(t, ManagementNamespace(victim), ManagementNamespace(attacker), "same name, different UIDs")
	assert.Equal(t, LegacyNamespace(victim), LegacyNamespace(attacker), "the legacy name depends on the name only")
}

func TestLegacyNamespace(t *testing.T) {
	// The names the older capn gave; they must not change, or legacy
	// clusters would lose their namespace.
	assert.Equal(t, "capn-default-demo-02c8c86b", LegacyNamespace(nc("default", "demo")))
	long := LegacyNamespace(nc(strings.Repeat("s", 63), strings.Repeat("n", validation.MaxNameLength)))
	assert.Len(t, long, 63)
	assert.Empty(t, utilvalidation.IsDNS1123Label(long))
}

func TestResolveNamespace(t *testing.T) {
	c := nc("team-a", "demo")
	owned := map[string]string{OwnerUIDLabel: string(c.UID)}
	legacyLabels := map[string]string{ManagedByLabel: ManagedByValue, v1alpha1.ClusterLabel: "demo", ClusterNamespaceLabel: "team-a"}
	otherUID := map[string]string{OwnerUIDLabel: "0000", ManagedByLabel: ManagedByValue, v1alpha1.ClusterLabel: "demo", ClusterNamespaceLabel: "team-a"}
	victimLegacy := map[string]string{ManagedByLabel: ManagedByValue, v1alpha1.ClusterLabel: "victim", ClusterNamespaceLabel: "team-v"}
	cases := []struct {
		name            string
		current, legacy map[string]string
		want            string
		err             error
	}{
		{name: "new cluster", want: ManagementNamespace(c)},
		{name: "own namespace", current: owned, want: ManagementNamespace(c)},
		{name: "foreign namespace at the UID name", current: map[string]string{}, err: ErrNotOwned},
		{name: "another UID at the UID name", current: otherUID, err: ErrNotOwned},
		{name: "legacy namespace of this cluster", legacy: legacyLabels, want: LegacyNamespace(c)},
		{name: "legacy namespace claimed by this UID", legacy: owned, want: LegacyNamespace(c)},
		{name: "legacy name held by another UID", legacy: otherUID, want: ManagementNamespace(c)},
		{name: "legacy name is a victim's (collision)", legacy: victimLegacy, want: ManagementNamespace(c)},
		{name: "unlabelled namespace at the legacy name", legacy: map[string]string{}, want: ManagementNamespace(c)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveNamespace(c, func(name string) (map[string]string, error) {
				switch name {
				case ManagementNamespace(c):
					return tc.current, nil
				case LegacyNamespace(c):
					return tc.legacy, nil
				}
				return nil, fmt.Errorf("unexpected lookup of %s", name)
			})
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLabels(t *testing.T) {
	c := nc("team-a", "demo")
	sel := SelectorLabels(c, v1alpha1.ComponentAPIServer)
	// /scale reports this selector to HPAs and users: its keys are API.
	want := labels.Set{"capn.dev/cluster": "demo", "capn.dev/component": "kube-apiserver"}
	if !labels.Equals(sel, want) {
		t.Errorf("apiserver selector %v, want the /scale selector %v", sel, want)
	}
	for _, comp := range []string{v1alpha1.ComponentEtcd, v1alpha1.ComponentAPIServer, v1alpha1.ComponentControllerManager, v1alpha1.ComponentScheduler} {
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
	if ComponentLabels(c, v1alpha1.ComponentEtcd)[v1alpha1.ComponentLabel] == ComponentLabels(c, v1alpha1.ComponentAPIServer)[v1alpha1.ComponentLabel] {
		t.Error("components must be told apart by label")
	}
}
