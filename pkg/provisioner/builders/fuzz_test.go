package builders

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
)

// maxFuzzTemplate bounds one pod template: far above what validation lets
// through, small enough that decoding stays cheap.
const maxFuzzTemplate = 64 << 10

// fuzzComponents are the components a podTemplate can be set on, indexed
// by the fuzz target's component argument.
var fuzzComponents = []struct {
	field, name string // spec field, component (= container and Deployment name)
}{
	{"apiServer", v1alpha1.ComponentAPIServer},
	{"controllerManager", v1alpha1.ComponentControllerManager},
	{"scheduler", v1alpha1.ComponentScheduler},
}

// fuzzTemplateSeeds are pod templates for controllerManager (component 1):
// mostly what validation must refuse, so the fuzzer starts next to the
// allow-list's edges, plus a few it accepts.
var fuzzTemplateSeeds = []string{
	`{}`,
	`{"spec":{"terminationGracePeriodSeconds":9223372036854775807}}`,
	`{"metadata":{"finalizers":["example.com/keep"],"labels":{"team":"c"},"annotations":{"example.com/a":"b"}}}`,
	`{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}],"containers":[{"name":"kube-controller-manager","volumeMounts":[{"name":"root","mountPath":"/host"}]}]}}`,
	`{"spec":{"containers":[{"name":"side","image":"busybox","securityContext":{"privileged":true}}]}}`,
	`{"spec":{"containers":[{"name":"kube-controller-manager","securityContext":{"capabilities":{"drop":["NET_ADMIN"]}}}]}}`,
	`{"spec":{"containers":[{"name":"side","image":"example.com/side:1","securityContext":{"allowPrivilegeEscalation":false,"runAsUser":1000}},{"name":"kube-controller-manager","env":[{"name":"GOMAXPROCS","value":"2"}]}]}}`,
	`{"spec":{"containers":[{"name":"kube-controller-manager","image":"evil.example.com/kcm:latest"}]}}`,
	`{"spec":{"hostNetwork":true,"hostPID":true,"hostIPC":true,"nodeName":"n1","nodeSelector":{"a":"b"},"tolerations":[{"operator":"Exists"}],"priorityClassName":"system-node-critical","affinity":{}}}`,
	`{"spec":{"securityContext":{"runAsUser":1000,"runAsGroup":1000,"fsGroup":1000,"supplementalGroups":[2000],"runAsNonRoot":true},"terminationGracePeriodSeconds":30}}`,
	`{"spec":{"initContainers":[{"name":"proxy","image":"example.com/proxy:1","restartPolicy":"Always","ports":[{"name":"p","containerPort":8080}]}],"volumes":[{"name":"scratch","emptyDir":{"medium":"Memory","sizeLimit":"64Mi"}},{"name":"info","downwardAPI":{"items":[{"path":"labels","fieldRef":{"fieldPath":"metadata.labels"}}]}}],"containers":[{"name":"kube-controller-manager","volumeMounts":[{"name":"scratch","mountPath":"/scratch"}],"resources":{"requests":{"cpu":"100m"},"limits":{"memory":"1Gi"}}}]}}`,
	`{"spec":{"containers":[{"name":"kube-controller-manager","readinessProbe":{"httpGet":{"path":"/healthz","port":10257,"scheme":"HTTPS"}},"env":[{"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}]}]}}`,
	`{"spec":{"containers":[{"name":"metrics","image":"example.com/m:1","imagePullPolicy":"Always","workingDir":"/w","command":["/m"],"args":["--x"],` +
		`"ports":[{"name":"m","containerPort":9090,"protocol":"TCP"}],"readinessProbe":{"tcpSocket":{"port":9090}},"livenessProbe":{"grpc":{"port":9090,"service":"h"}},` +
		`"securityContext":{"runAsUser":1000,"runAsGroup":1000,"runAsNonRoot":true,"readOnlyRootFilesystem":true},` +
		`"volumeMounts":[{"name":"proj","mountPath":"/p","readOnly":true,"subPath":"x"}],` +
		`"env":[{"name":"LIM","valueFrom":{"resourceFieldRef":{"containerName":"metrics","resource":"limits.memory","divisor":"1Mi"}}}]}],` +
		`"volumes":[{"name":"proj","projected":{"defaultMode":420,"sources":[{"downwardAPI":{"items":[{"path":"n","fieldRef":{"fieldPath":"metadata.name"}}]}}]}},` +
		`{"name":"img","image":{"reference":"example.com/data:1","pullPolicy":"IfNotPresent"}}]}}`,
}

// FuzzPodTemplateMerge renders clusters whose podTemplate the API accepted
// and checks that the strategic merge cannot take away what capn relies on:
// the component's container with its generated flags and env, capn's
// hardening on every container, and the placement and identity of the pod,
// which belong to the provider. Rendering must also be deterministic and
// leave the NestedCluster alone: the controller compares renders to decide
// whether to apply.
func FuzzPodTemplateMerge(f *testing.F) {
	inputs, err := filepath.Glob("testdata/*/input.yaml")
	require.NoError(f, err)
	require.NotEmpty(f, inputs)
	for _, in := range inputs {
		raw, err := os.ReadFile(in)
		require.NoError(f, err)
		obj, _, err := fuzzDecoder.Decode(raw, nil, nil)
		require.NoError(f, err, in)
		nc := obj.(*capn.NestedCluster)
		for i, c := range []*capn.ComponentSpec{&nc.Spec.APIServer.ComponentSpec, &nc.Spec.ControllerManager, &nc.Spec.Scheduler} {
			if c.PodTemplate == nil {
				continue
			}
			data, err := json.Marshal(c.PodTemplate)
			require.NoError(f, err)
			f.Add(data, uint8(i))
		}
	}
	for _, s := range fuzzTemplateSeeds {
		f.Add([]byte(s), uint8(1))
	}

	// What each component renders without a template: the reference for
	// everything the template may not change.
	plain := fuzzCluster(f, nil, 0)
	require.NotNil(f, plain)
	objs, err := All(served(f, plain), defaultParams)
	require.NoError(f, err)
	baseline := map[string]*corev1.PodTemplateSpec{}
	for _, c := range fuzzComponents {
		baseline[c.name] = componentTemplate(f, objs, c.name)
	}

	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		if len(data) > maxFuzzTemplate {
			t.Skip()
		}
		comp := fuzzComponents[int(which)%len(fuzzComponents)]
		in := fuzzCluster(t, data, which)
		if in == nil {
			t.Skip()
		}
		if errs := validation.ValidateNestedCluster(in); len(errs) > 0 {
			t.Skip()
		}

		nc := served(t, in)
		before := nc.DeepCopy()
		objs, err := All(nc, defaultParams)
		require.NoError(t, err, "the API accepted a podTemplate the builders cannot render")
		require.True(t, apiequality.Semantic.DeepEqual(before, nc), "All mutated the NestedCluster")
		again, err := All(nc.DeepCopy(), defaultParams)
		require.NoError(t, err)
		require.Equal(t, mustJSON(t, objs), mustJSON(t, again), "rendering is not deterministic")

		for _, o := range objs {
			if spec := podSpecFor(o); spec != nil {
				requireHardened(t, o.GetName(), spec)
				requireWellFormed(t, o.GetName(), spec)
			}
		}
		requireCapnOwned(t, comp.name, baseline[comp.name], componentTemplate(t, objs, comp.name))
	})
}

// fuzzCluster is the minimal golden cluster with data as one component's
// podTemplate (none when data is nil), decoded as the apiserver decodes it,
// or nil when the apiserver would refuse the bytes before validation.
func fuzzCluster(t testing.TB, data []byte, which uint8) *capn.NestedCluster {
	t.Helper()
	tpl := ""
	if data != nil {
		// Splicing is safe only for one JSON object: anything else could
		// close the surrounding document and add fields of its own.
		trimmed := bytes.TrimSpace(data)
		if !json.Valid(trimmed) || len(trimmed) == 0 || trimmed[0] != '{' {
			return nil
		}
		tpl = fmt.Sprintf(`,%q:{"podTemplate":%s}`, fuzzComponents[int(which)%len(fuzzComponents)].field, trimmed)
	}
	doc := `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedCluster",` +
		`"metadata":{"name":"demo","namespace":"default","uid":"00000005-0000-4000-8000-000000000005"},` +
		`"spec":{"version":"v1.37.2","etcd":{"managed":{"replicas":1,"storage":{"type":"EmptyDir"}}}` + tpl + `}}`
	obj, _, err := fuzzDecoder.Decode([]byte(doc), nil, nil)
	if err != nil {
		return nil
	}
	nc, _ := obj.(*capn.NestedCluster)
	return nc
}

var fuzzDecoder = serializer.NewCodecFactory(testScheme, serializer.EnableStrict).UniversalDecoder()

func componentTemplate(t testing.TB, objs []Object, component string) *corev1.PodTemplateSpec {
	t.Helper()
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && d.Spec.Template.Labels[v1alpha1.ComponentLabel] == component {
			return &d.Spec.Template
		}
	}
	require.FailNow(t, "no Deployment for "+component)
	return nil
}

// requireHardened checks what harden() and podSpec() promise for every
// container of every workload, whatever the template said.
func requireHardened(t *testing.T, workload string, spec *corev1.PodSpec) {
	t.Helper()
	require.False(t, spec.HostNetwork, "%s: hostNetwork", workload)
	require.False(t, spec.HostPID, "%s: hostPID", workload)
	require.False(t, spec.HostIPC, "%s: hostIPC", workload)
	require.Equal(t, ptrFalse, spec.AutomountServiceAccountToken, "%s: automountServiceAccountToken", workload)

	psc := spec.SecurityContext
	require.NotNil(t, psc, "%s: pod securityContext", workload)
	require.Equal(t, ptrTrue, psc.RunAsNonRoot, "%s: runAsNonRoot", workload)
	require.Equal(t, &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}, psc.SeccompProfile, "%s: seccomp", workload)
	require.Empty(t, psc.Sysctls, "%s: sysctls", workload)
	requireNotRoot(t, workload+": pod runAsUser", psc.RunAsUser)

	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			where := workload + "/" + c.Name
			sc := c.SecurityContext
			require.NotNil(t, sc, "%s: securityContext", where)
			require.Nil(t, sc.Privileged, "%s: privileged", where)
			require.Nil(t, sc.ProcMount, "%s: procMount", where)
			require.Nil(t, sc.WindowsOptions, "%s: windowsOptions", where)
			require.Equal(t, ptrFalse, sc.AllowPrivilegeEscalation, "%s: allowPrivilegeEscalation", where)
			require.Equal(t, ptrTrue, sc.ReadOnlyRootFilesystem, "%s: readOnlyRootFilesystem", where)
			require.Equal(t, &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, sc.Capabilities, "%s: capabilities", where)
			if sc.SeccompProfile != nil {
				require.NotEqual(t, corev1.SeccompProfileTypeUnconfined, sc.SeccompProfile.Type, "%s: seccomp", where)
			}
			if sc.AppArmorProfile != nil {
				require.NotEqual(t, corev1.AppArmorProfileTypeUnconfined, sc.AppArmorProfile.Type, "%s: appArmor", where)
			}
			if sc.RunAsNonRoot != nil {
				require.True(t, *sc.RunAsNonRoot, "%s: runAsNonRoot", where)
			}
			requireNotRoot(t, where+": runAsUser", sc.RunAsUser)
		}
	}
}

// requireWellFormed checks the rules of pod validation that the podTemplate
// can break: names that must stay unique or resolve, images that must
// parse, and one-of fields (volume source, probe handler, env source) left
// empty by the template or filled by it next to capn's, since a strategic
// merge adds to what it does not replace. The management apiserver refuses
// such a workload and the cluster is stuck with its old pods, so what the
// API accepts must not render one.
func requireWellFormed(t *testing.T, workload string, spec *corev1.PodSpec) {
	t.Helper()
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		require.False(t, volumes[v.Name], "%s: duplicate volume %q", workload, v.Name)
		volumes[v.Name] = true
		require.Equal(t, 1, setFields(v.VolumeSource), "%s: volume %q must have exactly one source", workload, v.Name)
	}
	names := map[string]bool{}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			where := workload + "/" + c.Name
			require.False(t, names[c.Name], "%s: duplicate container name", where)
			names[c.Name] = true
			require.Empty(t, validation.IsImageReference(c.Image), "%s: image %q", where, c.Image)
			for _, m := range c.VolumeMounts {
				require.True(t, volumes[m.Name], "%s: volumeMount %s names no volume %q", where, m.MountPath, m.Name)
			}
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
			}{{"startupProbe", c.StartupProbe}, {"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}} {
				if p.probe != nil {
					require.Equal(t, 1, setFields(p.probe.ProbeHandler), "%s: %s must have exactly one handler", where, p.name)
				}
			}
			for _, e := range c.Env {
				require.False(t, e.Value != "" && e.ValueFrom != nil, "%s: env %s has both value and valueFrom", where, e.Name)
			}
		}
	}
}

var ptrTrue, ptrFalse = func() (*bool, *bool) { t, f := true, false; return &t, &f }()

func requireNotRoot(t *testing.T, what string, id *int64) {
	t.Helper()
	if id != nil {
		require.NotZero(t, *id, what)
	}
}

// requireCapnOwned checks got, the component's merged template, against
// want, the one capn renders without a template: capn's container, flags,
// env, labels and annotations survive, and nothing outside the allow-list
// (placement, identity, host access, pod-level security) differs.
func requireCapnOwned(t *testing.T, component string, want, got *corev1.PodTemplateSpec) {
	t.Helper()
	for k, v := range want.Labels {
		require.Equal(t, v, got.Labels[k], "label %s", k)
	}
	for k, v := range want.Annotations {
		require.Equal(t, v, got.Annotations[k], "annotation %s", k)
	}

	wantC, gotC := container(want, component), container(got, component)
	require.NotNil(t, gotC, "the %s container is gone", component)
	require.Equal(t, wantC.Args, gotC.Args, "the template changed %s's flags", component)
	require.Equal(t, wantC.Command, gotC.Command, "the template changed %s's command", component)
	gotEnv := map[string]corev1.EnvVar{}
	for _, e := range gotC.Env {
		gotEnv[e.Name] = e
	}
	// Flags capn owns expand these, e.g. --advertise-address=$(CAPN_POD_IP).
	for _, e := range wantC.Env {
		if tunableEnv[e.Name] {
			continue // the template may tune them, as spec.env may; requireWellFormed checks the result
		}
		require.Equal(t, e, gotEnv[e.Name], "the template changed capn's env %s on %s", e.Name, component)
	}

	require.Equal(t, outsideAllowList(&want.Spec), outsideAllowList(&got.Spec), "the template changed a pod field outside the allow-list")

	base := map[string]bool{}
	for _, v := range want.Spec.Volumes {
		base[v.Name] = true
	}
	for _, v := range got.Spec.Volumes {
		if base[v.Name] {
			continue
		}
		vs := v.VolumeSource
		switch {
		case vs.EmptyDir != nil:
			require.Contains(t, []corev1.StorageMedium{corev1.StorageMediumDefault, corev1.StorageMediumMemory}, vs.EmptyDir.Medium, "volume %s", v.Name)
		case vs.DownwardAPI != nil, vs.Image != nil:
		case vs.Projected != nil:
			for _, s := range vs.Projected.Sources {
				require.Equal(t, corev1.VolumeProjection{DownwardAPI: s.DownwardAPI}, s, "volume %s: projected from more than the downward API", v.Name)
			}
		default:
			require.Fail(t, "volume of a kind the allow-list refuses", "%s: %+v", v.Name, vs)
		}
	}
}

func container(tpl *corev1.PodTemplateSpec, name string) *corev1.Container {
	for i := range tpl.Spec.Containers {
		if tpl.Spec.Containers[i].Name == name {
			return &tpl.Spec.Containers[i]
		}
	}
	return nil
}

// outsideAllowList is spec without what validation's allow-list lets a
// template set, so the rest can be compared whole: a field Kubernetes adds
// to PodSpec later is covered without a change here.
func outsideAllowList(spec *corev1.PodSpec) *corev1.PodSpec {
	s := spec.DeepCopy()
	s.Containers, s.InitContainers, s.Volumes, s.TerminationGracePeriodSeconds = nil, nil, nil, nil
	if psc := s.SecurityContext; psc != nil {
		psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot, psc.FSGroup, psc.SupplementalGroups = nil, nil, nil, nil, nil
	}
	return s
}

// setFields counts the fields of v that are set, by its JSON.
func setFields(v any) int {
	raw, _ := json.Marshal(v)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return len(m)
}

func mustJSON(t *testing.T, objs []Object) []byte {
	t.Helper()
	b, err := json.Marshal(objs)
	require.NoError(t, err)
	return b
}
