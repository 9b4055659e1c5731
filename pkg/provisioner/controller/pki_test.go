package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

func secretNames(t *testing.T, f *fixture) map[string]*corev1.Secret {
	t.Helper()
	l, err := f.kube.CoreV1().Secrets(managementNamespace(f.nc)).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Secret{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out
}

func TestPKIIssuedOnceAndKept(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	got := secretNames(t, f)
	for _, name := range []string{provisioner.SecretCA, provisioner.SecretEtcdCA, provisioner.SecretAPIServerServing,
		provisioner.SecretServiceAccount, provisioner.SecretControllerManagerKC, provisioner.SecretEtcdServer} {
		s, ok := got[name]
		if !ok {
			t.Errorf("secret %s not created", name)
			continue
		}
		if s.Labels[v1alpha1.ClusterLabel] != "demo" {
			t.Errorf("secret %s lacks owner labels: %v", name, s.Labels)
		}
	}
	caBefore := got[provisioner.SecretCA].Data["tls.crt"]

	f.mgmt.reset()
	f.sync()
	for _, w := range f.mgmt.writes {
		if strings.Contains(w, "Secret/") {
			t.Errorf("unchanged PKI rewritten: %s", w)
		}
	}
	if !slices.Equal(secretNames(t, f)[provisioner.SecretCA].Data["tls.crt"], caBefore) {
		t.Error("CA changed on resync")
	}
}

func TestPKIRenewsNearExpiry(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	// Eleven months on, leaves are within the renewal threshold; CAs live
	// longer and must be kept.
	f.c.now = func() time.Time { return testNow.Add(340 * 24 * time.Hour) }
	f.mgmt.reset()
	f.sync()
	var updated []string
	for _, w := range f.mgmt.writes {
		if strings.HasPrefix(w, "apply Secret/") {
			updated = append(updated, strings.TrimPrefix(w, "apply Secret/"))
		}
	}
	if !slices.Contains(updated, provisioner.SecretAPIServerServing) {
		t.Errorf("serving certificate not renewed; updated %v", updated)
	}
	if slices.Contains(updated, provisioner.SecretCA) {
		t.Error("CA rewritten on leaf renewal")
	}
	// New certificates roll the pods that read them (CertsHash changed).
	if !slices.ContainsFunc(f.mgmt.writes, func(w string) bool { return w == "apply Deployment/"+provisioner.APIServerName }) {
		t.Errorf("kube-apiserver not rolled after renewal: %v", f.mgmt.writes)
	}
}

func TestPKIUsesServiceClusterIP(t *testing.T) {
	// The fake allocates no ClusterIPs; a Service that exists keeps its IP
	// through the apply, as the real server's would.
	nc := testCluster()
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: provisioner.APIServerName, Namespace: managementNamespace(nc)},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.0.0.10"},
	}
	f := newFixture(t, nc, svc)
	f.sync()
	kc := string(secretNames(t, f)[provisioner.SecretControllerManagerKC].Data[provisioner.SecretKeyKubeconfig])
	if !strings.Contains(kc, "https://10.0.0.10:") {
		t.Errorf("kcm kubeconfig does not use the Service ClusterIP:\n%s", kc)
	}
}
