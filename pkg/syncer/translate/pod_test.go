package translate

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"sigs.k8s.io/yaml"

	"capn.dev/capn/pkg/tenant/names"
)

var update = flag.Bool("update", false, "rewrite testdata/pod/*/output.yaml from the translation")

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
}

func TestPodGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/pod/*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
			require.NoError(t, err)
			var tenant corev1.Pod
			require.NoError(t, yaml.UnmarshalStrict(in, &tenant))

			var g golden
			res, errs := Pod(&tenant, goldenContext())
			for _, e := range errs {
				g.Errors = append(g.Errors, e.Error())
			}
			if res != nil {
				g.Pod, g.Tokens, g.ConfigMaps, g.Secrets = res.Pod, res.Tokens, res.ConfigMaps, res.Secrets
				g.SecretData = map[string]string{}
				for k, v := range res.SecretData {
					g.SecretData[k] = string(v)
				}
			}
			got, err := yaml.Marshal(g)
			require.NoError(t, err)
			out := filepath.Join(dir, "output.yaml")
			if *update {
				require.NoError(t, os.WriteFile(out, got, 0o644))
			}
			want, err := os.ReadFile(out)
			require.NoError(t, err, "run go test -update to write it")
			assert.Equal(t, string(want), string(got))
		})
	}
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

func TestHostLabelsDropReservedKeys(t *testing.T) {
	l := HostLabels("default", "u-1", map[string]string{
		"app":                          "web",
		"app.kubernetes.io/name":       "web",
		"app.kubernetes.io/managed-by": "capn",
		"capn.dev/cluster":             "victim",
		"x.capn.dev/y":                 "z",
		names.TenantNamespaceLabel:     "spoofed",
		"capn.dev.example.com/ok":      "kept",
	})
	assert.Equal(t, map[string]string{
		"app":                          "web",
		"app.kubernetes.io/name":       "web",
		"app.kubernetes.io/managed-by": names.ManagedByValue,
		names.TenantNamespaceLabel:     "default",
		names.TenantUIDLabel:           "u-1",
		"capn.dev.example.com/ok":      "kept",
	}, l)
}
