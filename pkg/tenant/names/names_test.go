package names

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestHostIsADNSLabel(t *testing.T) {
	long := strings.Repeat("a", 253)
	for _, c := range []struct{ ns, name string }{
		{"default", "web-7d4b9c-x2x"},
		{"default", long},
		{strings.Repeat("n", 63), long},
		{"kube-system", "coredns.conf"},          // dots are legal in Secret and ConfigMap names
		{"a", strings.Repeat("b", 34) + "-----"}, // a cut on dashes must not end the readable part with one
		{"UPPER", "Case"},
	} {
		h := Host(c.ns, c.name)
		assert.LessOrEqual(t, len(h), MaxLength, h)
		assert.Empty(t, validation.IsDNS1123Label(h), "%q", h)
		assert.NotContains(t, h, "--", "a cut left a double dash: %q", h)
	}
}

func TestHostKeepsPairsApart(t *testing.T) {
	// The readable parts of these pairs are equal; only the hash differs.
	pairs := [][2]string{
		{"a-x-b", "c"}, {"b", "c-x-a"}, // "c-x-a-x-b" both ways
		{"ns", "web.1"}, {"ns", "web-1"}, // dots become dashes
		{"ns", strings.Repeat("p", 60) + "1"}, {"ns", strings.Repeat("p", 60) + "2"}, // differ past the cut
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		h := Host(p[0], p[1])
		if prev, dup := seen[h]; dup {
			t.Fatalf("%v and %v both map to %s", prev, p, h)
		}
		seen[h] = p
	}
	assert.Equal(t, Host("a-x-b", "c")[:len("c-x-a-x-b")], Host("b", "c-x-a")[:len("c-x-a-x-b")], "the test's pairs should share a readable part")
}

func TestHostIsStable(t *testing.T) {
	// Host names are how the syncer finds what it made before a restart:
	// they must not change between versions of the syncer.
	assert.Equal(t, "web-x-default-", Host("default", "web")[:14])
	assert.Equal(t, Host("default", "web"), Host("default", "web"))
	assert.Len(t, Host("default", "web"), len("web-x-default-")+hashLength)
}

func TestHostManyNamesNoCollision(t *testing.T) {
	seen := make(map[string]string, 20000)
	for i := 0; i < 20000; i++ {
		ns, name := fmt.Sprintf("ns-%d", i%100), fmt.Sprintf("pod-%d", i)
		h := Host(ns, name)
		key := ns + "/" + name
		require.NotContains(t, seen, h, "%s and %s", seen[h], key)
		seen[h] = key
	}
}

func TestDerivedNeverMeetsHost(t *testing.T) {
	h := Host("default", "web")
	d := Derived(h, "token")
	tail := d[len(d)-1-hashLength:]
	assert.True(t, strings.HasPrefix(tail, "-") || strings.Contains(tail[1:], "-"), "a Host name's last 27 characters are a dash then no dash; %q must break that", tail)
	assert.Empty(t, validation.IsDNS1123Subdomain(d))
}

func TestIdentityOf(t *testing.T) {
	id, ok := IdentityOf(
		map[string]string{TenantNamespaceLabel: "default", TenantUIDLabel: "u-1"},
		map[string]string{TenantNameAnnotation: "web"})
	require.True(t, ok)
	assert.Equal(t, Identity{Namespace: "default", Name: "web", UID: "u-1"}, id)

	_, ok = IdentityOf(map[string]string{TenantNamespaceLabel: "default"}, map[string]string{TenantNameAnnotation: "web"})
	assert.False(t, ok, "an object without a UID is not the syncer's")
}

func TestCarriedKeysAreLabelKeysOfCapn(t *testing.T) {
	long := strings.Repeat("a", 250) + ".io/" + strings.Repeat("B", 63)
	for _, k := range []string{"app", "app.kubernetes.io/name", "x/-", long, "capn.dev/tenant-uid", "a_b.c-d"} {
		for _, carried := range []string{TenantLabelKey(k), NamespaceLabelKey(k)} {
			assert.Empty(t, validation.IsQualifiedName(carried), "%q from %q", carried, k)
			assert.True(t, strings.HasPrefix(carried, TenantLabelDomain+"/") || strings.HasPrefix(carried, NamespaceLabelDomain+"/"), carried)
			assert.True(t, CapnOwnedLabel(carried), carried)
		}
		assert.Equal(t, TenantLabelKey(k), TenantLabelKey(k), "deterministic")
		assert.NotEqual(t, TenantLabelKey(k), NamespaceLabelKey(k))
	}
	assert.NotEqual(t, TenantLabelKey("a.io/name"), TenantLabelKey("b.io/name"), "the prefix is part of the key")
	assert.False(t, CapnOwnedLabel("app.kubernetes.io/name"))
	assert.False(t, CapnOwnedLabel("capn.dev.example.com/x"))
}
