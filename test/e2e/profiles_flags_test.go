//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/install"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/profiles"
	"capn.dev/capn/pkg/versions"
)

// profileComponents are the tenant components whose flags capn renders per
// Kubernetes minor. Their pinned binaries live in the version-keyed cache
// hack/build-tools.sh fills: $CAPN_RELEASE_BINS/<release>/<component>.
var profileComponents = []string{
	v1alpha1.ComponentAPIServer,
	v1alpha1.ComponentControllerManager,
	v1alpha1.ComponentScheduler,
}

// TestProfileFlags proves, for every minor in versions.Supported, that the
// real binary of that release accepts the command line capn renders for it.
//
// `<binary> <rendered args> --help` is a cheap, exact check: cobra parses
// every flag before it honours --help, so an unknown flag or a value of the
// wrong type (int, bool, IP, duration, ...) fails, while --help stops before
// anything is opened, bound or dialled. Semantic checks that run later
// (files exist, mode names are known, ...) are not covered by it; the
// controls below prove both failure modes do fail. Flags must also be listed
// by --help: pflag hides deprecated and hidden flags there.
//
// The scheduler's config file is checked too: --write-config-to makes
// kube-scheduler strictly decode and validate its --config, build the
// scheduler and exit, without contacting the apiserver. kube-apiserver's
// authentication-config is only read deep in server start-up (after certs,
// keys and storage are set up), so it is not checked here.
func TestProfileFlags(t *testing.T) {
	example := exampleCluster(t)
	variants := []struct {
		name   string
		mutate func(*v1alpha1.NestedCluster)
	}{
		{"example", func(*v1alpha1.NestedCluster) {}},
		// Replicas change what is rendered (leader election, PDBs); the
		// flags must hold either way.
		{"ha", func(nc *v1alpha1.NestedCluster) {
			nc.Spec.APIServer.Replicas = ptr.To[int32](3)
			nc.Spec.ControllerManager.Replicas = ptr.To[int32](3)
			nc.Spec.Scheduler.Replicas = ptr.To[int32](3)
		}},
	}
	binRoot := env(t, "CAPN_RELEASE_BINS")
	for _, m := range versions.Supported {
		t.Run(m.Default, func(t *testing.T) {
			bins := map[string]string{}
			for _, c := range profileComponents {
				bins[c] = filepath.Join(binRoot, m.Default, c)
				checkBinaryVersion(t, c, bins[c], m.Default)
			}
			for _, v := range variants {
				t.Run(v.name, func(t *testing.T) {
					ext := example.DeepCopy()
					ext.Spec.Version = m.Default
					v.mutate(ext)
					nc := asServed(t, ext)
					objs, err := builders.All(nc, builders.Params{})
					if err != nil {
						t.Fatalf("builders.All: %v", err)
					}
					for _, c := range profileComponents {
						t.Run(c, func(t *testing.T) {
							ctr := componentContainer(t, objs, c)
							if want := []string{c}; !slices.Equal(ctr.Command, want) {
								t.Fatalf("command %q, want %q", ctr.Command, want)
							}
							args := expandEnvRefs(t, ctr)
							checkFlagsAccepted(t, bins[c], args)
						})
					}
					t.Run("kube-scheduler config", func(t *testing.T) {
						checkSchedulerConfig(t, bins[v1alpha1.ComponentScheduler], objs)
					})
				})
			}
		})
	}
}

// exampleCluster decodes the example NestedCluster (the served version).
func exampleCluster(t *testing.T) *v1alpha1.NestedCluster {
	t.Helper()
	data, err := os.ReadFile(repoFile(t, "artifacts/examples/nestedcluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nc := &v1alpha1.NestedCluster{}
	if _, _, err := serializer.NewCodecFactory(profileScheme).UniversalDeserializer().Decode(data, nil, nc); err != nil {
		t.Fatalf("decoding the example: %v", err)
	}
	if nc.Namespace == "" {
		nc.Namespace = "default"
	}
	return nc
}

var profileScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// asServed defaults and validates a copy of in like the API server does on
// create, and returns it as the provisioner reads it.
func asServed(t *testing.T, in *v1alpha1.NestedCluster) *v1alpha1.NestedCluster {
	t.Helper()
	v := in.DeepCopy()
	profileScheme.Default(v)
	internal := &capn.NestedCluster{}
	if err := profileScheme.Convert(v, internal, nil); err != nil {
		t.Fatal(err)
	}
	if errs := validation.ValidateNestedCluster(internal); len(errs) > 0 {
		t.Fatalf("the NestedCluster is invalid: %v", errs.ToAggregate())
	}
	return v
}

// checkBinaryVersion guards against the env vars pointing at the wrong
// release, which would make the whole test meaningless.
func checkBinaryVersion(t *testing.T, envName, bin, want string) {
	t.Helper()
	out, err := runBinary(t, bin, "--version")
	if err != nil {
		t.Fatalf("%s=%s --version: %v\n%s", envName, bin, err, out)
	}
	if got := strings.TrimSpace(out); got != "Kubernetes "+want {
		t.Fatalf("%s=%s reports %q, want Kubernetes %s", envName, bin, got, want)
	}
}

func componentContainer(t *testing.T, objs []builders.Object, component string) corev1.Container {
	t.Helper()
	for _, o := range objs {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == component {
				return c
			}
		}
	}
	t.Fatalf("no Deployment has a %s container", component)
	return corev1.Container{}
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandEnvRefs resolves $(VAR) in the args as the kubelet would, with
// made-up downward-API values, and fails on a reference it cannot resolve.
func expandEnvRefs(t *testing.T, c corev1.Container) []string {
	t.Helper()
	vals := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vals[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			vals[e.Name] = "10.244.0.10"
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			vals[e.Name] = c.Name + "-0"
		}
	}
	out := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		x := envRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := vals[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
		if strings.Contains(x, "$(") {
			t.Errorf("arg %q has an unresolvable variable reference", a)
		}
		out = append(out, x)
	}
	return out
}

// checkFlagsAccepted runs bin with args and --help, and the two controls.
func checkFlagsAccepted(t *testing.T, bin string, args []string) {
	t.Helper()
	out, err := runBinary(t, bin, append(args[:len(args):len(args)], "--help")...)
	if err != nil {
		t.Fatalf("%s refuses capn's flags: %v\n%s\nargs: %q", filepath.Base(bin), err, lastLines(out, 5), args)
	}
	if !strings.Contains(out, "Usage:") {
		t.Fatalf("--help printed no usage:\n%s", lastLines(out, 10))
	}
	if strings.Contains(out, "has been deprecated") {
		t.Errorf("deprecated flag in capn's args:\n%s", out)
	}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		listed := regexp.MustCompile(`(?m)^\s*(?:-\w, )?--` + regexp.QuoteMeta(name) + `(?:\s|$)`)
		if !listed.MatchString(out) {
			t.Errorf("--%s is accepted but not listed by --help (deprecated or hidden)", name)
		}
	}

	// Controls: the same command line must fail on an unknown flag and on a
	// value of the wrong type, or the check above proves nothing.
	for _, bad := range []struct{ arg, want string }{
		{"--capn-no-such-flag=1", "unknown flag: --capn-no-such-flag"},
		{"--secure-port=not-a-port", `invalid argument "not-a-port" for "--secure-port"`},
	} {
		out, err := runBinary(t, bin, append(args[:len(args):len(args)], bad.arg, "--help")...)
		if err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("with %s: err=%v, want a failure with %q; output:\n%s", bad.arg, err, bad.want, lastLines(out, 5))
		}
	}
}

// checkSchedulerConfig runs kube-scheduler on its rendered args and config
// file, with the mounted directories redirected to a temp dir, serving off
// (--secure-port=0) and --write-config-to, so that it strictly decodes and
// validates the config, builds the scheduler and exits 0 without dialling.
func checkSchedulerConfig(t *testing.T, bin string, objs []builders.Object) {
	t.Helper()
	ctr := componentContainer(t, objs, v1alpha1.ComponentScheduler)
	var config string
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == provisioner.SchedulerConfigName {
			config = cm.Data[profiles.FileSchedulerConfig]
		}
	}
	if config == "" {
		t.Fatalf("no ConfigMap %s with %s", provisioner.SchedulerConfigName, profiles.FileSchedulerConfig)
	}

	dir := t.TempDir()
	pkiDir, configDir := filepath.Join(dir, "pki"), filepath.Join(dir, "config")
	redirect := strings.NewReplacer(profiles.PKIDir+"/", pkiDir+"/", profiles.ConfigDir+"/", configDir+"/")
	for _, d := range []string{pkiDir, configDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A kubeconfig nothing ever dials: port 1 on loopback.
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: unused}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	write := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(pkiDir, profiles.FileKubeconfig), kubeconfig)

	args := expandEnvRefs(t, ctr)
	for i, a := range args {
		args[i] = redirect.Replace(a)
	}
	run := func(config string) (string, error) {
		write(filepath.Join(configDir, profiles.FileSchedulerConfig), redirect.Replace(config))
		out := filepath.Join(dir, "written.yaml")
		return runBinary(t, bin, append(args[:len(args):len(args)],
			"--bind-address=127.0.0.1", "--secure-port=0", "--write-config-to="+out)...)
	}
	if out, err := run(config); err != nil {
		t.Fatalf("kube-scheduler refuses capn's config: %v\n%s\nconfig:\n%s", err, lastLines(out, 5), config)
	}
	written, err := os.ReadFile(filepath.Join(dir, "written.yaml"))
	if err != nil || !strings.Contains(string(written), "kind: KubeSchedulerConfiguration") {
		t.Fatalf("kube-scheduler did not write its config (%v):\n%s", err, written)
	}
	// Control: decoding is strict, so an unknown field must fail.
	if out, err := run(config + "capnNoSuchField: true\n"); err == nil || !strings.Contains(out, "unknown field") || !strings.Contains(out, "capnNoSuchField") {
		t.Errorf("an unknown config field did not fail: err=%v\n%s", err, lastLines(out, 5))
	}
}

// runBinary runs bin with a bounded time and an environment of its own, and
// returns its stdout and stderr together.
func runBinary(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
