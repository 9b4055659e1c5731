package translate

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"capn.dev/capn/pkg/tenant/names"
)

var update = flag.Bool("update", false, "rewrite testdata/*/*/output.yaml from the translation")

// goldenContext is the tenant every golden case runs in.
func goldenContext() Context {
	svc := func(ns, name, ip string, ports ...corev1.ServicePort) corev1.Service {
		return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	return Context{
		WorkloadNamespace: "capn-w-tenant",
		APIServerHost:     "10.96.12.34",
		APIServerPort:     6443,
		Nameserver:        "10.96.0.10",
		DNSDomain:         "cluster.local",
		Services: []corev1.Service{
			svc("shop", "web", "10.96.7.7", corev1.ServicePort{Name: "http", Port: 80}, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP}),
			svc("shop", "headless", corev1.ClusterIPNone, corev1.ServicePort{Port: 80}),
			svc("other", "db", "10.96.8.8", corev1.ServicePort{Port: 5432}),
		},
		Level:          api.LevelBaseline,
		RuntimeClasses: []string{"runc"},
	}
}

// golden is what a case's output.yaml holds.
type golden struct {
	Errors     []string          `json:"errors,omitempty"`
	Pod        *corev1.Pod       `json:"pod,omitempty"`
	SecretData map[string]string `json:"secretData,omitempty"`
	Tokens     []Token           `json:"tokens,omitempty"`
	ConfigMaps []string          `json:"configMaps,omitempty"`
	Secrets    []string          `json:"secrets,omitempty"`
	Claims     []string          `json:"claims,omitempty"`
}

func TestPodGolden(t *testing.T) {
	eachGolden(t, "pod", func(t *testing.T, tenant *corev1.Pod) any {
		var g golden
		res, errs := Pod(tenant, goldenContext())
		for _, e := range errs {
			g.Errors = append(g.Errors, e.Error())
		}
		if res != nil {
			g.Pod, g.Tokens, g.ConfigMaps, g.Secrets, g.Claims = res.Pod, res.Tokens, res.ConfigMaps, res.Secrets, res.Claims
			g.SecretData = map[string]string{}
			for k, v := range res.SecretData {
				g.SecretData[k] = string(v)
			}
		}
		return g
	})
}

// eachGolden runs a subtest per case directory under testdata/kind: its
// input.yaml decoded (strictly) into a new In, and what run returns
// compared, as YAML, with its output.yaml.
func eachGolden[In any](t *testing.T, kind string, run func(t *testing.T, in *In) any) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", kind, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
			require.NoError(t, err)
			in := new(In)
			require.NoError(t, yaml.UnmarshalStrict(b, in))
			assertGolden(t, dir, run(t, in))
		})
	}
}

// assertGolden compares got, as YAML, with dir/output.yaml (rewritten
// with -update).
func assertGolden(t *testing.T, dir string, got any) {
	t.Helper()
	b, err := yaml.Marshal(got)
	require.NoError(t, err)
	out := filepath.Join(dir, "output.yaml")
	if *update {
		require.NoError(t, os.WriteFile(out, b, 0o644))
	}
	want, err := os.ReadFile(out)
	require.NoError(t, err, "run go test -update to write it")
	assert.Equal(t, string(want), string(b))
}

func TestPodIsRefusedWholeOrNotAtAll(t *testing.T) {
	tenant := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}},
			Volumes: []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}},
	}
	res, errs := Pod(tenant, goldenContext())
	assert.Nil(t, res, "nothing partial: a refused pod yields no host pod")
	require.Len(t, errs, 1, "%v", errs)
	assert.Equal(t, "spec.volumes[0]", errs[0].Field)
}

func TestPrivilegedLevelIsNeverUsed(t *testing.T) {
	tenant := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"},
		Spec:       corev1.PodSpec{NodeName: "n", HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
	c := goldenContext()
	c.Level = api.LevelPrivileged
	res, errs := Pod(tenant, c)
	assert.Nil(t, res)
	require.NotEmpty(t, errs)
	assert.Contains(t, errs[0].Error(), `pod security level "baseline": host namespaces`)
}

// Red-team finding 8: a tenant label reached the host pod as it was, so
// a provider selector on app.kubernetes.io/name=capn-apiserver (or on a
// capn key) took in tenant pods. Every tenant key, and every key of the
// pod's namespace, now lives under a capn-owned domain.
func TestPodLabelsCarryTenantKeysUnderCapnDomains(t *testing.T) {
	tenant := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", UID: "u-1", Labels: map[string]string{
		"app":                          "web",
		"app.kubernetes.io/name":       "capn-apiserver",
		"app.kubernetes.io/managed-by": "capn",
		"capn.dev/cluster":             "victim",
		names.TenantNamespaceLabel:     "spoofed",
		names.IngressIsolatedLabel:     "true",
	}}}
	c := Context{NamespaceLabels: map[string]string{corev1.LabelMetadataName: "default", "team": "a"}}
	l := PodLabels(tenant, c)
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by":                       names.ManagedByValue,
		names.TenantNamespaceLabel:                           "default",
		names.TenantUIDLabel:                                 "u-1",
		names.TenantLabelKey("app"):                          "web",
		names.TenantLabelKey("app.kubernetes.io/name"):       "capn-apiserver",
		names.TenantLabelKey("app.kubernetes.io/managed-by"): "capn",
		names.TenantLabelKey("capn.dev/cluster"):             "victim",
		names.TenantLabelKey(names.TenantNamespaceLabel):     "spoofed",
		names.TenantLabelKey(names.IngressIsolatedLabel):     "true",
		names.NamespaceLabelKey(corev1.LabelMetadataName):    "default",
		names.NamespaceLabelKey("team"):                      "a",
	}, l)
	for k := range l {
		assert.True(t, names.CapnOwnedLabel(k), "host key %q is not capn's", k)
		assert.Empty(t, validation.IsQualifiedName(k), "%q", k)
	}

	c.IngressIsolated, c.EgressIsolated = true, true
	l = PodLabels(tenant, c)
	assert.Equal(t, "true", l[names.IngressIsolatedLabel])
	assert.Equal(t, "true", l[names.EgressIsolatedLabel])
}

// podOn is a minimal tenant pod bound to a node, for table tests that
// change one field.
func podOn(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", UID: "u"},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
	mutate(p)
	return p
}

// errorStrings is errs as the tenant reads them.
func errorStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestPodNameserversAreTheClusterDNSOnly(t *testing.T) {
	many := make([]string, 30)
	for i := range many {
		many[i] = fmt.Sprintf("s%d.example", i)
	}
	cases := []struct {
		name            string
		policy          corev1.DNSPolicy
		cfg             *corev1.PodDNSConfig
		wantNameservers []string
		wantSearches    []string
		wantErrs        []string
	}{{
		name:            "None naming the cluster DNS keeps its searches and options",
		policy:          corev1.DNSNone,
		cfg:             &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10"}, Searches: []string{"a.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}},
		wantNameservers: []string{"10.96.0.10"},
		wantSearches:    []string{"a.example"},
	}, {
		name:            "None naming the cluster DNS twice names it once",
		policy:          corev1.DNSNone,
		cfg:             &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "10.96.0.10"}},
		wantNameservers: []string{"10.96.0.10"},
	}, {
		name:     "None naming the management DNS is refused",
		policy:   corev1.DNSNone,
		cfg:      &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "10.0.0.10"}},
		wantErrs: []string{`spec.dnsConfig.nameservers[1]: Invalid value: "10.0.0.10": only the cluster DNS 10.96.0.10 may be named: the pod resolves through its cluster's DNS only`},
	}, {
		name:     "None with no nameserver is refused",
		policy:   corev1.DNSNone,
		cfg:      &corev1.PodDNSConfig{Searches: []string{"a.example"}},
		wantErrs: []string{"spec.dnsConfig.nameservers: Required value: with dnsPolicy None, name the cluster DNS 10.96.0.10"},
	}, {
		name:     "ClusterFirst adding another nameserver is refused, not dropped",
		policy:   corev1.DNSClusterFirst,
		cfg:      &corev1.PodDNSConfig{Nameservers: []string{"8.8.8.8"}},
		wantErrs: []string{`spec.dnsConfig.nameservers[0]: Invalid value: "8.8.8.8": only the cluster DNS 10.96.0.10 may be named: the pod resolves through its cluster's DNS only`},
	}, {
		name:            "ClusterFirst adding the cluster DNS names it once",
		policy:          corev1.DNSClusterFirst,
		cfg:             &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10"}},
		wantNameservers: []string{"10.96.0.10"},
		wantSearches:    []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"},
	}, {
		name:     "ClusterFirst searches over Kubernetes' bound once merged are refused",
		policy:   corev1.DNSClusterFirst,
		cfg:      &corev1.PodDNSConfig{Searches: many},
		wantErrs: []string{"spec.dnsConfig.searches: Too many: 33: must have at most 32 items"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, errs := Pod(podOn(func(p *corev1.Pod) { p.Spec.DNSPolicy, p.Spec.DNSConfig = tc.policy, tc.cfg }), goldenContext())
			if tc.wantErrs != nil {
				assert.Nil(t, res)
				assert.Equal(t, tc.wantErrs, errorStrings(errs))
				return
			}
			require.Empty(t, errs)
			got := res.Pod.Spec.DNSConfig
			assert.Equal(t, corev1.DNSNone, res.Pod.Spec.DNSPolicy)
			assert.Equal(t, tc.wantNameservers, got.Nameservers)
			assert.Equal(t, tc.wantSearches, got.Searches)
		})
	}
}

func TestDeletionGracePeriodIsBounded(t *testing.T) {
	cases := []struct {
		name   string
		tenant *int64
		max    int64
		want   *int64
	}{
		{name: "no grace keeps the host pod's own", tenant: nil, want: nil},
		{name: "within the default bound", tenant: ptr.To[int64](30), want: ptr.To[int64](30)},
		{name: "zero stays zero", tenant: ptr.To[int64](0), want: ptr.To[int64](0)},
		{name: "over the default bound is capped", tenant: ptr.To[int64](100000), want: ptr.To[int64](names.MaxGracePeriodSeconds)},
		{name: "over the provider's bound is capped", tenant: ptr.To[int64](100), max: 90, want: ptr.To[int64](90)},
		{name: "within the provider's bound", tenant: ptr.To[int64](80), max: 90, want: ptr.To[int64](80)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goldenContext()
			c.MaxGracePeriodSeconds = tc.max
			assert.Equal(t, tc.want, DeletionGracePeriod(tc.tenant, c))
		})
	}
}

func TestPodDropsNetRaw(t *testing.T) {
	caps := func(add, drop []corev1.Capability) *corev1.SecurityContext {
		return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: add, Drop: drop}}
	}
	cases := []struct {
		name        string
		allowNetRaw bool
		sc          *corev1.SecurityContext
		want        *corev1.SecurityContext
		wantErr     string
	}{{
		name: "no securityContext gets one that drops NET_RAW",
		want: caps(nil, []corev1.Capability{"NET_RAW"}),
	}, {
		name: "the tenant's drops and other fields stay",
		sc:   &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"CHOWN"}}},
		want: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"CHOWN", "NET_RAW"}}},
	}, {
		name: "dropping ALL already drops it",
		sc:   caps(nil, []corev1.Capability{"ALL"}),
		want: caps(nil, []corev1.Capability{"ALL"}),
	}, {
		name: "dropping NET_RAW is not repeated",
		sc:   caps(nil, []corev1.Capability{"NET_RAW"}),
		want: caps(nil, []corev1.Capability{"NET_RAW"}),
	}, {
		name:        "a provider that allows NET_RAW keeps the tenant's securityContext",
		allowNetRaw: true,
		sc:          caps(nil, []corev1.Capability{"CHOWN"}),
		want:        caps(nil, []corev1.Capability{"CHOWN"}),
	}, {
		name:    "adding NET_RAW back is refused at baseline",
		sc:      caps([]corev1.Capability{"NET_RAW"}, nil),
		wantErr: `spec: Forbidden: pod security level "baseline": non-default capabilities (containers "init", "c" must not include "NET_RAW" in securityContext.capabilities.add)`,
	}, {
		name:        "adding NET_RAW is refused at baseline even where the provider allows it",
		allowNetRaw: true,
		sc:          caps([]corev1.Capability{"NET_RAW"}, nil),
		wantErr:     `spec: Forbidden: pod security level "baseline": non-default capabilities (containers "init", "c" must not include "NET_RAW" in securityContext.capabilities.add)`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tenant := podOn(func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "i", SecurityContext: tc.sc.DeepCopy()}}
				p.Spec.Containers[0].SecurityContext = tc.sc.DeepCopy()
			})
			before := tenant.DeepCopy()
			c := goldenContext()
			c.AllowNetRaw = tc.allowNetRaw
			res, errs := Pod(tenant, c)
			assert.Equal(t, before, tenant, "the tenant pod is not changed")
			if tc.wantErr != "" {
				assert.Nil(t, res)
				assert.Equal(t, []string{tc.wantErr}, errorStrings(errs))
				return
			}
			require.Empty(t, errs)
			assert.Equal(t, tc.want, res.Pod.Spec.InitContainers[0].SecurityContext, "init container")
			assert.Equal(t, tc.want, res.Pod.Spec.Containers[0].SecurityContext, "container")
		})
	}
}

func TestPodBoundsEmptyDirs(t *testing.T) {
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	cases := []struct {
		name    string
		max     string
		limit   *resource.Quantity
		want    *resource.Quantity
		wantErr string
	}{
		{name: "none gets the default bound", want: q("1Gi")},
		{name: "within the default bound stays", limit: q("512Mi"), want: q("512Mi")},
		{name: "at the default bound stays", limit: q("1024Mi"), want: q("1024Mi")},
		{name: "over the default bound is refused", limit: q("2Gi"),
			wantErr: `spec.volumes[0].emptyDir.sizeLimit: Invalid value: "2Gi": must be at most 1Gi: emptyDir volumes share the node's disk and memory with other tenants' pods`},
		{name: "none gets the provider's bound", max: "4Gi", want: q("4Gi")},
		{name: "within the provider's bound stays", max: "4Gi", limit: q("2Gi"), want: q("2Gi")},
		{name: "over the provider's bound is refused", max: "100Mi", limit: q("1Gi"),
			wantErr: `spec.volumes[0].emptyDir.sizeLimit: Invalid value: "1Gi": must be at most 100Mi: emptyDir volumes share the node's disk and memory with other tenants' pods`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goldenContext()
			if tc.max != "" {
				c.MaxEmptyDirSize = resource.MustParse(tc.max)
			}
			res, errs := Pod(podOn(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: tc.limit}}}}
			}), c)
			if tc.wantErr != "" {
				assert.Nil(t, res)
				assert.Equal(t, []string{tc.wantErr}, errorStrings(errs))
				return
			}
			require.Empty(t, errs)
			got := res.Pod.Spec.Volumes[0].EmptyDir.SizeLimit
			require.NotNil(t, got)
			assert.Zero(t, tc.want.Cmp(*got), "sizeLimit %s, want %s", got, tc.want)
		})
	}
}

// Red-team finding 6: a tenant asked for imagePullPolicy Never and ran an
// image already on the node (capn-apiserver:dev). With PullAlways, every
// container whose image the provider did not list pulls, so the registry
// sees the tenant's credentials first.
func TestPodPullAlways(t *testing.T) {
	tenant := podOn(func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "capn.dev/capn-apiserver:dev", ImagePullPolicy: corev1.PullNever}}
		p.Spec.Containers[0].Image = "registry.example/dns:1"
		p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	})
	c := goldenContext()
	res, errs := Pod(tenant, c)
	require.Empty(t, errs)
	assert.Equal(t, corev1.PullNever, res.Pod.Spec.InitContainers[0].ImagePullPolicy, "off: as the tenant asks")

	c.PullAlways, c.CachedImages = true, []string{"registry.example/dns:1"}
	res, errs = Pod(tenant, c)
	require.Empty(t, errs)
	assert.Equal(t, corev1.PullAlways, res.Pod.Spec.InitContainers[0].ImagePullPolicy, "an unlisted image pulls")
	assert.Equal(t, corev1.PullIfNotPresent, res.Pod.Spec.Containers[0].ImagePullPolicy, "a listed image keeps the tenant's policy")
}
