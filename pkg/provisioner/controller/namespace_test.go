package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaceEnsured(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ns, err := f.kube.CoreV1().Namespaces().Get(context.Background(), managementNamespace(f.nc), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"capn.dev/cluster": "demo", "capn.dev/cluster-namespace": "team-a",
		"app.kubernetes.io/managed-by": "capn", "pod-security.kubernetes.io/enforce": "baseline",
	} {
		if ns.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, ns.Labels[k], v)
		}
	}
	if ns.Annotations[SpecHashAnnotation] == "" {
		t.Error("no spec hash annotation")
	}
}

func TestNamespaceLabelsRestored(t *testing.T) {
	// A namespace someone made by hand (no hash) is brought to capn's form.
	hand := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: managementNamespace(testCluster())}}
	f := newFixture(t, testCluster(), hand)
	f.sync()
	ns, err := f.kube.CoreV1().Namespaces().Get(context.Background(), hand.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["capn.dev/cluster"] != "demo" {
		t.Errorf("owner labels not applied: %v", ns.Labels)
	}
}

func TestNamespaceTerminatingFails(t *testing.T) {
	nc := testCluster()
	f := newFixture(t, nc)
	f.sync()
	ctx := context.Background()
	ns, _ := f.kube.CoreV1().Namespaces().Get(ctx, managementNamespace(nc), metav1.GetOptions{})
	ns.DeletionTimestamp = &metav1.Time{Time: testNow}
	ns.Finalizers = []string{"kubernetes"}
	if _, err := f.kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.sync(ctx, "team-a/demo"); err == nil {
		t.Error("sync into a terminating namespace: want an error")
	}
}
