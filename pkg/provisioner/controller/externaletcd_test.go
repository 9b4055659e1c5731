package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

func externalCluster() *v1alpha1.NestedCluster {
	return testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Etcd.Managed = nil
		nc.Spec.Etcd.External = &v1alpha1.ExternalEtcd{
			Endpoints:       []string{"https://10.96.0.50:2379"},
			CASecretRef:     v1alpha1.SecretReference{Name: "etcd-ca"},
			ClientSecretRef: v1alpha1.SecretReference{Name: "etcd-client"},
		}
	})
}

func userSecret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestExternalEtcdSecretsAreCopied(t *testing.T) {
	f := newFixture(t, externalCluster(),
		userSecret("etcd-ca", map[string]string{"ca.crt": "CA1", "unrelated": "x"}),
		userSecret("etcd-client", map[string]string{"tls.crt": "CERT1", "tls.key": "KEY1"}))
	f.sync()
	ctx, ns := context.Background(), managementNamespace(f.nc)
	get := func(name string) *corev1.Secret {
		s, err := f.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("copy %s: %v", name, err)
		}
		return s
	}
	if ca := get(provisioner.SecretExternalEtcdCA); string(ca.Data["ca.crt"]) != "CA1" || len(ca.Data) != 1 {
		t.Errorf("CA copy %v: want ca.crt only", ca.Data)
	}
	if c := get(provisioner.SecretExternalEtcdClient); string(c.Data["tls.crt"]) != "CERT1" || string(c.Data["tls.key"]) != "KEY1" {
		t.Errorf("client copy %v", c.Data)
	}
	if _, err := f.kube.AppsV1().StatefulSets(ns).Get(ctx, provisioner.EtcdName, metav1.GetOptions{}); err == nil {
		t.Error("an etcd StatefulSet was deployed for an external etcd")
	}
	hash := func() string {
		d, err := f.kube.AppsV1().Deployments(ns).Get(ctx, provisioner.APIServerName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations[provisioner.CertsHashAnnotation]
	}
	before := hash()

	f.mgmt.reset()
	f.sync()
	if len(f.mgmt.writes) != 0 {
		t.Errorf("resync wrote %v", f.mgmt.writes)
	}

	// The user rotates the client certificate: one copy is updated and the
	// apiserver rolls.
	if _, err := f.kube.CoreV1().Secrets("team-a").Update(ctx, userSecret("etcd-client", map[string]string{"tls.crt": "CERT2", "tls.key": "KEY2"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mgmt.reset()
	f.sync()
	if c := get(provisioner.SecretExternalEtcdClient); string(c.Data["tls.crt"]) != "CERT2" {
		t.Errorf("rotated client certificate not copied: %v", c.Data)
	}
	if hash() == before {
		t.Error("certs-hash unchanged after the external client certificate rotated: the apiserver would keep the old one")
	}
}

func TestExternalEtcdMissingSecret(t *testing.T) {
	f := newFixture(t, externalCluster(), userSecret("etcd-ca", map[string]string{"ca.crt": "CA1"}),
		userSecret("etcd-client", map[string]string{"tls.crt": "CERT1"}))
	_, err := f.c.sync(context.Background(), "team-a/demo")
	if err == nil || !strings.Contains(err.Error(), `Secret team-a/etcd-client has no key "tls.key"`) {
		t.Fatalf("sync error %v, want the missing key named", err)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "ExternalEtcdFailed") {
		t.Errorf("no ExternalEtcdFailed warning in:\n%s", ev)
	}
}
