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
