package plugin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func TestStatusTable(t *testing.T) {
	nc := demo()
	nc.Status = v1alpha1.NestedClusterStatus{
		Phase:     v1alpha1.PhaseReady,
		Endpoint:  "https://demo.default.svc:6443",
		APIServer: v1alpha1.ComponentStatus{Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, Version: "v1.36.3", Image: "capn/kube-apiserver:v1.36.3"},
		Etcd:      v1alpha1.ComponentStatus{ReadyReplicas: 3, UpdatedReplicas: 3, Version: "3.6.0", Image: "capn/etcd:3.6.0"},
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllAvailable", Message: "all components available"},
		},
	}
	out, err := run(t, newFake(nc), "status", "demo")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "COMPONENT DESIRED READY UPDATED VERSION IMAGE" {
		t.Fatalf("header %q", lines[0])
	}
	for i, want := range []string{
		"etcd 3 3 3 3.6.0 capn/etcd:3.6.0",
		"kube-apiserver 1 1 1 v1.36.3 capn/kube-apiserver:v1.36.3",
		"kube-controller-manager 1 0 0 - -",
		"kube-scheduler 1 0 0 - -",
	} {
		if got := strings.Join(strings.Fields(lines[i+1]), " "); got != want {
			t.Errorf("row %d = %q, want %q", i+1, got, want)
		}
	}
	for _, want := range []string{"Phase:     Ready", "Endpoint:  https://demo.default.svc:6443", "  Ready=True (AllAvailable): all components available"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestStatusExternalEtcdAndErrors(t *testing.T) {
	nc := demo()
	nc.Spec.Etcd = v1alpha1.EtcdSpec{External: &v1alpha1.ExternalEtcd{Endpoints: []string{"https://etcd:2379"}}}
	out, err := run(t, newFake(nc), "status", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if row := strings.Split(out, "\n")[1]; strings.Join(strings.Fields(row), " ") != "etcd external - - - -" {
		t.Fatalf("etcd row %q", row)
	}
	if !strings.Contains(out, "Conditions: <none>") {
		t.Fatalf("no conditions line:\n%s", out)
	}
	if out, err := run(t, newFake(nc), "status", "demo", "-o", "name"); err != nil || out != "nestedcluster.capn.dev/demo\n" {
		t.Fatalf("-o name: %q %v", out, err)
	}
	if _, err := run(t, newFake(), "status", "nope"); err == nil || err.Error() != `nestedclusters.capn.dev "nope" not found` {
		t.Fatalf("err = %v", err)
	}
}

func TestStatusUpgradeSteps(t *testing.T) {
	nc := rolling(oldV, newV, v1alpha1.ComponentControllerManager, -1,
		step(v1alpha1.ComponentAPIServer, newV, 0, 41), step(v1alpha1.ComponentControllerManager, newV, 41, -1))
	nc.Status.Conditions = []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ComponentsNotReady"},
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "UpgradingKubeControllerManager", Message: "kube-controller-manager: rolling out v1.37.2"},
		{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "KubeControllerManagerPodsNotReady", Message: "pod kcm-1: CrashLoopBackOff"},
	}
	out, err := run(t, newFake(nc), "status", "demo")
	if err != nil {
		t.Fatal(err)
	}
	// The upgrade section follows Endpoint; compare with runs of blanks squeezed.
	got := squeeze(out[strings.Index(out, "Upgrade:"):])
	want := squeeze(`Upgrade: v1.36.3 -> v1.37.2 (rolling kube-controller-manager)
  Component: kube-controller-manager
  Started: 2026-01-02T10:00:00Z
  Finished: -
  Progressing: True (UpgradingKubeControllerManager): kube-controller-manager: rolling out v1.37.2
  Degraded: True (KubeControllerManagerPodsNotReady): pod kcm-1: CrashLoopBackOff
  STEP COMPONENT VERSION STARTED FINISHED DURATION
  1 kube-apiserver v1.37.2 2026-01-02T10:00:00Z 2026-01-02T10:00:41Z 41s
  2 kube-controller-manager v1.37.2 2026-01-02T10:00:41Z - in progress
Conditions:
  Ready=False (ComponentsNotReady)
`)
	if got != want {
		t.Fatalf("upgrade section:\n%s\nwant:\n%s", got, want)
	}

	// A finished rollback: the abandoned forward step never finished.
	back := rolling(newV, oldV, "", 100, step(v1alpha1.ComponentAPIServer, newV, 0, 41), step(v1alpha1.ComponentControllerManager, newV, 41, -1),
		step(v1alpha1.ComponentControllerManager, oldV, 50, 70), step(v1alpha1.ComponentAPIServer, oldV, 70, 100))
	out, err = run(t, newFake(back), "status", "demo")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Upgrade: v1.37.2 -> v1.36.3 (rollback, finished)",
		"Component: -",
		"Finished: 2026-01-02T10:01:40Z (took 1m40s)",
		"2 kube-controller-manager v1.37.2 2026-01-02T10:00:41Z - interrupted",
		"4 kube-apiserver v1.36.3 2026-01-02T10:01:10Z 2026-01-02T10:01:40Z 30s",
	} {
		if !strings.Contains(squeeze(out), "\n"+want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Without status.upgrade there is no upgrade section.
	if out, _ := run(t, newFake(demo()), "status", "demo"); strings.Contains(out, "Upgrade:") || strings.Contains(out, "STEP") {
		t.Errorf("upgrade section without status.upgrade:\n%s", out)
	}
}

// squeeze trims each line and collapses its runs of blanks to one space.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
