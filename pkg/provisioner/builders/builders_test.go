package builders

import (
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// cluster is a defaulted NestedCluster, as the API server stores it.
func cluster(mutate ...func(*v1alpha1.NestedCluster)) *v1alpha1.NestedCluster {
	nc := &v1alpha1.NestedCluster{}
	nc.Name, nc.Namespace = "demo", "team-a"
	nc.Spec = v1alpha1.NestedClusterSpec{
		Version:        "v1.37.2",
		ClusterNetwork: v1alpha1.ClusterNetwork{ServiceCIDR: "10.96.0.0/12", PodCIDR: "10.244.0.0/16", DNSDomain: "cluster.local"},
		Etcd:           v1alpha1.EtcdSpec{Managed: &v1alpha1.ManagedEtcd{Replicas: ptr.To[int32](1), Storage: v1alpha1.EtcdStorage{Type: v1alpha1.EtcdStorageEmptyDir}}},
		APIServer: v1alpha1.APIServerSpec{
			ComponentSpec: v1alpha1.ComponentSpec{Replicas: ptr.To[int32](1)},
			Service:       v1alpha1.APIServerService{Type: corev1.ServiceTypeClusterIP, Port: 6443},
		},
		ControllerManager: v1alpha1.ComponentSpec{Replicas: ptr.To[int32](1)},
		Scheduler:         v1alpha1.ComponentSpec{Replicas: ptr.To[int32](1)},
	}
	for _, m := range mutate {
		m(nc)
	}
	return nc
}

func build(t *testing.T, nc *v1alpha1.NestedCluster) []Object {
	t.Helper()
	objs, err := All(nc, Params{})
	if err != nil {
		t.Fatalf("All: %v", err)
	}
	return objs
}

func find[T Object](objs []Object, name string) T {
	var zero T
	for _, o := range objs {
		if t, ok := o.(T); ok && o.GetName() == name {
			return t
		}
	}
	return zero
}

func pdbs(objs []Object) map[string]*policyv1.PodDisruptionBudget {
	out := map[string]*policyv1.PodDisruptionBudget{}
	for _, o := range objs {
		if p, ok := o.(*policyv1.PodDisruptionBudget); ok {
			out[p.Name] = p
		}
	}
	return out
}

func TestPDBOnlyWithMoreThanOneReplica(t *testing.T) {
	if got := pdbs(build(t, cluster())); len(got) != 0 {
		t.Errorf("one replica each: got PDBs %v, want none", slices.Sorted(maps.Keys(got)))
	}
	got := pdbs(build(t, cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.APIServer.Replicas = ptr.To[int32](3)
		nc.Spec.ControllerManager.Replicas = ptr.To[int32](2)
		nc.Spec.Etcd.Managed.Replicas = ptr.To[int32](3)
	})))
	want := map[string]int{provisioner.APIServerName: 2, provisioner.ControllerManagerName: 1, provisioner.EtcdName: 2}
	if len(got) != len(want) {
		t.Errorf("got %d PDBs, want %v", len(got), want)
	}
	for name, min := range want {
		p := got[name]
		if p == nil || p.Spec.MinAvailable.IntValue() != min {
			t.Errorf("PDB %s = %+v, want minAvailable %d", name, p, min)
		}
	}
}

func TestLeaderElectionAlwaysOn(t *testing.T) {
	for _, replicas := range []int32{1, 2, 3} {
		objs := build(t, cluster(func(nc *v1alpha1.NestedCluster) {
			nc.Spec.ControllerManager.Replicas = ptr.To(replicas)
			nc.Spec.Scheduler.Replicas = ptr.To(replicas)
		}))
		for _, name := range []string{provisioner.ControllerManagerName, provisioner.SchedulerName} {
			d := find[*appsv1.Deployment](objs, name)
			wantStrategy := appsv1.RecreateDeploymentStrategyType
			if replicas > 1 {
				wantStrategy = appsv1.RollingUpdateDeploymentStrategyType
			}
			if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--leader-elect=true") {
				t.Errorf("%s with %d replicas: args %v lack --leader-elect=true", name, replicas, args)
			}
			if d.Spec.Strategy.Type != wantStrategy {
				t.Errorf("%s with %d replicas: strategy %s, want %s", name, replicas, d.Spec.Strategy.Type, wantStrategy)
			}
		}
	}
}

func TestOwnedAndRefusedFlagsAreRejected(t *testing.T) {
	cases := []struct {
		name string
		set  func(*v1alpha1.NestedCluster)
		want string
	}{
		{"apiserver owned", func(nc *v1alpha1.NestedCluster) {
			nc.Spec.APIServer.ExtraArgs = map[string]string{"etcd-servers": "http://evil:2379"}
		}, "managed by capn"},
		{"apiserver owned prefix", func(nc *v1alpha1.NestedCluster) {
			nc.Spec.APIServer.ExtraArgs = map[string]string{"service-account-issuer": "https://x"}
		}, "managed by capn"},
		{"apiserver refused", func(nc *v1alpha1.NestedCluster) {
			nc.Spec.APIServer.ExtraArgs = map[string]string{"authentication-config": "/tmp/a.yaml"}
		}, "anonymous access"},
		{"kcm owned", func(nc *v1alpha1.NestedCluster) {
			nc.Spec.ControllerManager.ExtraArgs = map[string]string{"leader-elect": "true"}
		}, "managed by capn"},
		{"scheduler ignored with config", func(nc *v1alpha1.NestedCluster) {
			nc.Spec.Scheduler.ExtraArgs = map[string]string{"kube-api-qps": "100"}
		}, "--config"},
		{"env collision", func(nc *v1alpha1.NestedCluster) {
			nc.Spec.Scheduler.Env = []corev1.EnvVar{{Name: "CAPN_POD_IP", Value: "1.2.3.4"}}
		}, "set by capn"},
		{"podTemplate args", func(nc *v1alpha1.NestedCluster) {
			nc.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "kube-apiserver", Args: []string{"--anonymous-auth=true"}},
			}}}
		}, "extraArgs"},
		{"unsupported version", func(nc *v1alpha1.NestedCluster) { nc.Spec.Version = "v1.35.0" }, "not supported"},
		{"not defaulted", func(nc *v1alpha1.NestedCluster) { nc.Spec.Scheduler.Replicas = nil }, "defaulted"},
	}
	for _, tc := range cases {
		_, err := All(cluster(tc.set), Params{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// A flag nobody owns goes through, and can override a generated default.
	objs := build(t, cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.APIServer.ExtraArgs = map[string]string{"v": "4", "profiling": "true"}
	}))
	args := find[*appsv1.Deployment](objs, provisioner.APIServerName).Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--v=4") || !slices.Contains(args, "--profiling=true") || slices.Contains(args, "--profiling=false") {
		t.Errorf("extraArgs not applied: %v", args)
	}
}

func TestPodTemplateMergeKeepsGeneratedContainer(t *testing.T) {
	nc := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{}
		tpl := nc.Spec.APIServer.PodTemplate
		tpl.Labels = map[string]string{"extra": "yes", v1alpha1.ComponentLabel: "hijacked"}
		tpl.Annotations = map[string]string{provisioner.VersionAnnotation: "v9.9.9"}
		tpl.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		tpl.Spec.Containers = []corev1.Container{
			{Name: "kube-apiserver", Env: []corev1.EnvVar{{Name: "EXTRA", Value: "1"}}},
			{Name: "sidecar", Image: "example.com/sidecar:1"},
		}
		tpl.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})
	plain := find[*appsv1.Deployment](build(t, cluster()), provisioner.APIServerName).Spec.Template
	got := find[*appsv1.Deployment](build(t, nc), provisioner.APIServerName).Spec.Template

	if n := len(got.Spec.Containers); n != 2 {
		t.Fatalf("got %d containers, want the generated one and the sidecar", n)
	}
	c := got.Spec.Containers[0]
	if c.Name != "kube-apiserver" || c.Image != plain.Spec.Containers[0].Image ||
		!slices.Equal(c.Args, plain.Spec.Containers[0].Args) || len(c.VolumeMounts) != len(plain.Spec.Containers[0].VolumeMounts) ||
		c.ReadinessProbe == nil || c.SecurityContext == nil {
		t.Errorf("generated container lost fields in the merge: %+v", c)
	}
	envNames := []string{}
	for _, e := range c.Env {
		envNames = append(envNames, e.Name)
	}
	for _, want := range []string{"EXTRA", "CAPN_POD_IP", "CAPN_POD_NAME"} {
		if !slices.Contains(envNames, want) {
			t.Errorf("env %v lacks %s", envNames, want)
		}
	}
	if got.Spec.Containers[1].Name != "sidecar" || len(got.Spec.Volumes) != len(plain.Spec.Volumes)+1 {
		t.Errorf("user additions missing: %+v", got.Spec)
	}
	// Validation refuses template placement; were one to get through, the
	// provider's Placement (here none) still replaces it.
	if len(got.Spec.Tolerations) != 0 {
		t.Errorf("tolerations %v: placement is the provider's", got.Spec.Tolerations)
	}
	if got.Labels["extra"] != "yes" || got.Labels[v1alpha1.ComponentLabel] != "kube-apiserver" {
		t.Errorf("labels = %v: want the user's added and capn's kept", got.Labels)
	}
	if got.Annotations[provisioner.VersionAnnotation] != "v1.37.2" {
		t.Errorf("annotations = %v: capn's version annotation must win", got.Annotations)
	}
	if got.Spec.SecurityContext == nil || !ptr.Deref(got.Spec.SecurityContext.RunAsNonRoot, false) || ptr.Deref(got.Spec.AutomountServiceAccountToken, true) {
		t.Errorf("pod security settings lost: %+v", got.Spec)
	}
}

func TestAPIServerPodsMatchScaleSelector(t *testing.T) {
	objs := build(t, cluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.APIServer.Replicas = ptr.To[int32](4) }))
	d := find[*appsv1.Deployment](objs, provisioner.APIServerName)
	sel := labels.Set(v1alpha1.ComponentSelector("demo", v1alpha1.ComponentAPIServer)).AsSelector()
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("pod labels %v do not match the /scale selector %s", d.Spec.Template.Labels, sel)
	}
	if !labels.Equals(d.Spec.Selector.MatchLabels, labels.Set(v1alpha1.ComponentSelector("demo", v1alpha1.ComponentAPIServer))) {
		t.Errorf("Deployment selector %v, want the /scale selector %s", d.Spec.Selector.MatchLabels, sel)
	}
	if *d.Spec.Replicas != 4 || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 || d.Spec.Strategy.RollingUpdate.MaxSurge.IntValue() != 1 {
		t.Errorf("replicas/strategy = %d/%+v", *d.Spec.Replicas, d.Spec.Strategy)
	}
	ns := provisioner.ManagementNamespace(cluster())
	for _, o := range objs {
		if _, isNS := o.(*corev1.Namespace); !isNS && o.GetNamespace() != ns {
			t.Errorf("%T %s in namespace %q, want %q", o, o.GetName(), o.GetNamespace(), ns)
		}
		if o.GetLabels()[v1alpha1.ClusterLabel] != "demo" || o.GetLabels()[provisioner.ManagedByLabel] != "capn" {
			t.Errorf("%T %s labels %v lack capn's", o, o.GetName(), o.GetLabels())
		}
	}
}
