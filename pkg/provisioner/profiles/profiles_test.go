package profiles

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/versions"
)

var _ = flag.Bool("update", false, "rewrite golden files (builders only)")

var kubeComponents = []string{v1alpha1.ComponentAPIServer, v1alpha1.ComponentControllerManager, v1alpha1.ComponentScheduler}

func sampleParams(leaderElect bool) Params {
	return Params{
		EtcdServers: []string{"https://etcd:2379"}, EtcdPrefix: "/registry",
		ServiceCIDR: "10.96.0.0/12", PodCIDR: "10.244.0.0/16", DNSDomain: "cluster.local",
		LeaderElect: leaderElect, WebhookClientCert: true,
	}
}

func TestEverySupportedMinorHasAProfile(t *testing.T) {
	for _, m := range versions.Supported {
		v, err := versions.Parse(m.Default)
		if err != nil {
			t.Fatal(err)
		}
		p, err := For(v)
		if err != nil {
			t.Errorf("For(%s): %v", v, err)
			continue
		}
		if p.Minor != m.Minor {
			t.Errorf("For(%s).Minor = %d", v, p.Minor)
		}
		for _, c := range kubeComponents {
			if f, err := p.Flags(c, sampleParams(false)); err != nil || len(f) == 0 {
				t.Errorf("v1.%d %s: %v, %v", m.Minor, c, f, err)
			}
		}
	}
	// And no profile outlives its minor: removing one from Supported means
	// removing its override here too.
	if len(minors) != len(versions.Supported) {
		t.Errorf("profiles for minors %v, supported %v", slices.Sorted(maps.Keys(minors)), versions.SupportedMinors())
	}
	for _, bad := range []versions.Version{{Major: 1, Minor: 35}, {Major: 2, Minor: 37}, {Major: 1, Minor: 99}} {
		if _, err := For(bad); err == nil {
			t.Errorf("For(%s) succeeded, want an error", bad)
		}
	}
	if _, err := (Profile{}).Flags(v1alpha1.ComponentEtcd, Params{}); err == nil {
		t.Error("etcd flags must not come from a per-minor profile")
	}
}

func TestOverridesApply(t *testing.T) {
	p := Profile{Minor: 99, o: override{
		set:   map[string]Flags{v1alpha1.ComponentAPIServer: {"new-flag": "x", "profiling": "true"}},
		unset: map[string][]string{v1alpha1.ComponentAPIServer: {"enable-aggregator-routing"}},
	}}
	f, err := p.Flags(v1alpha1.ComponentAPIServer, sampleParams(false))
	if err != nil {
		t.Fatal(err)
	}
	if f["new-flag"] != "x" || f["profiling"] != "true" {
		t.Errorf("set not applied: %v", f)
	}
	if _, ok := f["enable-aggregator-routing"]; ok {
		t.Errorf("unset not applied: %v", f)
	}
}

func TestArgsSortedAndRendered(t *testing.T) {
	got := Flags{"b": "2", "a": "x=y", "c": ""}.Args()
	want := []string{"--a=x=y", "--b=2", "--c="}
	if !slices.Equal(got, want) {
		t.Errorf("Args = %v, want %v", got, want)
	}
}

func TestMerge(t *testing.T) {
	base := Flags{"profiling": "false", "secure-port": "6443"}
	got, err := Merge(v1alpha1.ComponentAPIServer, base, map[string]string{"profiling": "true", "v": "3"})
	if err != nil || got["profiling"] != "true" || got["v"] != "3" || got["secure-port"] != "6443" {
		t.Errorf("Merge = %v, %v", got, err)
	}
	if base["profiling"] != "false" {
		t.Error("Merge modified its input")
	}
	for _, tc := range []struct {
		component, key, want string
	}{
		{v1alpha1.ComponentAPIServer, "secure-port", "managed by capn"},
		{v1alpha1.ComponentAPIServer, "service-account-jwks-uri", "managed by capn"},
		{v1alpha1.ComponentAPIServer, "authentication-config", "managed by capn"},
		{v1alpha1.ComponentScheduler, "profiling", "--config"},
		{v1alpha1.ComponentControllerManager, "--v", "bare flag name"},
		{v1alpha1.ComponentControllerManager, "v=1 --x", "bare flag name"},
	} {
		if _, err := Merge(tc.component, base, map[string]string{tc.key: "1"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Merge(%s, %q): err = %v, want %q", tc.component, tc.key, err, tc.want)
		}
	}
}

// TestGeneratedFlagsAgreeWithOwnedFlags keeps the profiles and the API's
// OwnedFlags in step, both ways:
//   - every flag capn generates for a kube-* component is owned (the API
//     refuses it) or listed Overridable
//     (a default the user may change);
//   - every owned flag is generated, unless it is owned only to forbid it
//     (listed below with why capn does not set it).
func TestGeneratedFlagsAgreeWithOwnedFlags(t *testing.T) {
	forbidOnly := map[string]map[string]string{
		v1alpha1.ComponentAPIServer: {
			"anonymous-auth":         "replaced by the anonymous section of authentication-config; the two conflict",
			"cert-dir":               "unused: tls-cert-file/tls-private-key-file are set",
			"token-auth-file":        "static tokens are not supported",
			"etcd-servers-overrides": "owned to forbid storing resources outside capn's etcd",
		},
		v1alpha1.ComponentControllerManager: {
			"cluster-signing-kubelet-serving-cert-file":       "cluster-signing-cert-file covers every signer",
			"cluster-signing-kubelet-serving-key-file":        "cluster-signing-key-file covers every signer",
			"cluster-signing-kubelet-client-cert-file":        "cluster-signing-cert-file covers every signer",
			"cluster-signing-kubelet-client-key-file":         "cluster-signing-key-file covers every signer",
			"cluster-signing-kube-apiserver-client-cert-file": "cluster-signing-cert-file covers every signer",
			"cluster-signing-kube-apiserver-client-key-file":  "cluster-signing-key-file covers every signer",
			"cluster-signing-legacy-unknown-cert-file":        "cluster-signing-cert-file covers every signer",
			"cluster-signing-legacy-unknown-key-file":         "cluster-signing-key-file covers every signer",
		},
		v1alpha1.ComponentScheduler: {
			"kubeconfig":            "set in the --config file; the flag is ignored with --config",
			"profiling":             "ignored with --config; owned so it is refused instead of silently dropped",
			"contention-profiling":  "ignored with --config; owned so it is refused instead of silently dropped",
			"kube-api-content-type": "ignored with --config; owned so it is refused instead of silently dropped",
			"kube-api-qps":          "ignored with --config; owned so it is refused instead of silently dropped",
			"kube-api-burst":        "ignored with --config; owned so it is refused instead of silently dropped",
		},
	}
	for _, m := range versions.Supported {
		p, err := For(versions.Version{Major: 1, Minor: m.Minor})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range kubeComponents {
			generated := Flags{}
			for _, le := range []bool{false, true} {
				in := sampleParams(le)
				in.SharedDataPlane = le // both sets of conditional flags
				f, err := p.Flags(c, in)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range f {
					generated[k] = v
				}
			}
			for _, k := range sortedKeys(generated) {
				_, owned := validation.OwnedFlag(c, k)
				overridable := slices.Contains(Overridable[c], k)
				if owned == overridable {
					t.Errorf("v1.%d %s --%s: owned=%v overridable=%v; want exactly one", m.Minor, c, k, owned, overridable)
				}
			}
			for _, k := range Overridable[c] {
				if _, ok := generated[k]; !ok {
					t.Errorf("v1.%d %s: Overridable lists --%s, which capn does not generate", m.Minor, c, k)
				}
			}
			for k := range validation.OwnedFlags[c] {
				_, gen := generated[k]
				_, forbid := forbidOnly[c][k]
				if gen == forbid {
					t.Errorf("v1.%d %s: owned --%s generated=%v forbid-only=%v; want exactly one", m.Minor, c, k, gen, forbid)
				}
			}
		}
	}
}

func sortedKeys(f Flags) []string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestConfigFiles checks that the generated config files parse strictly as
// their upstream types and say what capn relies on: anonymous access only on
// the health endpoints, and the scheduler's kubeconfig at the mounted path.
func TestConfigFiles(t *testing.T) {
	for _, m := range versions.Supported {
		p, err := For(versions.Version{Major: 1, Minor: m.Minor})
		if err != nil {
			t.Fatal(err)
		}
		for join, want := range map[bool]string{
			false: "[/healthz /livez /readyz]",
			true:  "[/api/v1/namespaces/kube-public/configmaps/cluster-info /healthz /livez /readyz]",
		} {
			js, err := utilyaml.ToJSON([]byte(p.AuthenticationConfig(Params{NodeJoin: join})))
			if err != nil {
				t.Fatal(err)
			}
			var authn apiserverv1.AuthenticationConfiguration
			dec := json.NewDecoder(strings.NewReader(string(js)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&authn); err != nil {
				t.Fatalf("v1.%d authentication config: %v", m.Minor, err)
			}
			if authn.Anonymous == nil || !authn.Anonymous.Enabled {
				t.Fatalf("v1.%d: anonymous section missing", m.Minor)
			}
			var paths []string
			for _, c := range authn.Anonymous.Conditions {
				paths = append(paths, c.Path)
			}
			sort.Strings(paths)
			if got := fmt.Sprint(paths); got != want {
				t.Errorf("v1.%d, node join %v: anonymous paths = %s", m.Minor, join, got)
			}
		}
		if sc := p.SchedulerConfig(); !strings.Contains(sc, "kind: KubeSchedulerConfiguration") || !strings.Contains(sc, "kubeconfig: /") {
			t.Errorf("v1.%d scheduler config:\n%s", m.Minor, sc)
		}
	}
}

// kube-controller-manager exits at start when it cannot read the tenant's
// extension-apiserver-authentication ConfigMap (the tenant apiserver is
// not up yet), unless both CA files are given and the lookup is skipped.
func TestControllerManagerSkipsInClusterCALookup(t *testing.T) {
	for _, m := range versions.Supported {
		p, err := For(versions.Version{Major: 1, Minor: m.Minor})
		if err != nil {
			t.Fatal(err)
		}
		f, err := p.Flags(v1alpha1.ComponentControllerManager, sampleParams(false))
		if err != nil {
			t.Fatal(err)
		}
		for flag, want := range map[string]string{
			"client-ca-file":               PKIDir + "/" + FileCACert,
			"requestheader-client-ca-file": PKIDir + "/" + FileFrontProxyCACert,
		} {
			if f[flag] != want {
				t.Errorf("v1.%d --%s = %q, want %q", m.Minor, flag, f[flag], want)
			}
		}
	}
}
