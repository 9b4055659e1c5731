package access

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/pki"
)

func TestIssue(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	nc := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "demo", UID: "6f1c2b9e-3d4a-4e5f-8a7b-0c1d2e3f4a5b"}}
	nc.Spec.APIServer.Service.Port = 6443
	ns := provisioner.ManagementNamespace(nc)
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: provisioner.OwnerLabels(nc)}}
	cas, err := pki.GenerateCAs(now, "team-a/demo")
	if err != nil {
		t.Fatal(err)
	}
	caSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.SecretCA},
		Data: map[string][]byte{corev1.TLSCertKey: cas.Cluster.CertPEM, corev1.TLSPrivateKeyKey: cas.Cluster.KeyPEM}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.APIServerName},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.42"}}

	for _, objs := range [][]string{{}, {"ca"}, {"svc"}} {
		c := fake.NewClientset(nsObj)
		for _, o := range objs {
			if o == "ca" {
				_, _ = c.CoreV1().Secrets(ns).Create(context.Background(), caSecret, metav1.CreateOptions{})
			} else {
				_, _ = c.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
			}
		}
		_, _, err := (&Issuer{Management: c}).Issue(context.Background(), nc, "alice", time.Hour)
		if !errors.Is(err, ErrNotProvisioned) {
			t.Errorf("with only %v: got %v, want ErrNotProvisioned", objs, err)
		}
	}

	c := fake.NewClientset(nsObj, caSecret, svc)
	data, expires, err := (&Issuer{Management: c, Now: func() time.Time { return now }}).Issue(context.Background(), nc, "alice", 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !expires.Equal(now.Add(2 * time.Hour)) {
		t.Errorf("expires %s, want %s", expires, now.Add(2*time.Hour))
	}
	if strings.Contains(string(data), string(cas.Cluster.KeyPEM)) {
		t.Fatal("the kubeconfig embeds the CA key")
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if got := cfg.Clusters[ctx.Cluster].Server; got != "https://10.96.0.42:6443" {
		t.Errorf("server %q, want the Service's ClusterIP", got)
	}
	block, _ := pem.Decode(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "alice" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != TenantAdminsGroup {
		t.Errorf("subject %v, want CN=alice O=%s only", cert.Subject, TenantAdminsGroup)
	}
	if !cert.NotAfter.Equal(now.Add(2 * time.Hour)) {
		t.Errorf("NotAfter %s, want %s", cert.NotAfter, now.Add(2*time.Hour))
	}
	if err := cert.CheckSignatureFrom(cas.Cluster.Cert); err != nil {
		t.Errorf("not signed by the tenant CA: %v", err)
	}

	// A cluster created with the per-component layout has its CA only in
	// the roots Secret (the one above predates it).
	roots := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.SecretPKIRoots},
		Data: map[string][]byte{provisioner.RootKeyCACert: cas.Cluster.CertPEM, provisioner.RootKeyCAKey: cas.Cluster.KeyPEM}}
	data, _, err = (&Issuer{Management: fake.NewClientset(nsObj, roots, svc), Now: func() time.Time { return now }}).Issue(context.Background(), nc, "alice", time.Hour)
	require.NoError(t, err)
	cfg, err = clientcmd.Load(data)
	require.NoError(t, err)
	block, _ = pem.Decode(cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientCertificateData)
	cert, err = x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.NoError(t, cert.CheckSignatureFrom(cas.Cluster.Cert), "issued from the roots Secret")
}

// The finding: a cluster whose namespace name maps to one that another
// cluster owns must never be signed for with that cluster's CA.
func TestIssueRefusesAnotherOwnersNamespace(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	victim := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod", UID: "11111111-1111-4111-8111-111111111111"}}
	attacker := victim.DeepCopy()
	attacker.UID = "22222222-2222-4222-8222-222222222222"
	cas, err := pki.GenerateCAs(now, "team-a/prod")
	require.NoError(t, err)
	for name, nsName := range map[string]string{
		// The old scheme's collision: the attacker's legacy name is the
		// victim's namespace (here: same namespace and name).
		"legacy name": provisioner.LegacyNamespace(victim),
		// A namespace at the attacker's own UID name that is not its.
		"uid name": provisioner.ManagementNamespace(attacker),
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset(
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName, Labels: provisioner.OwnerLabels(victim)}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: provisioner.SecretCA},
					Data: map[string][]byte{corev1.TLSCertKey: cas.Cluster.CertPEM, corev1.TLSPrivateKeyKey: cas.Cluster.KeyPEM}},
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: provisioner.APIServerName},
					Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.42"}})
			data, _, err := (&Issuer{Management: c}).Issue(context.Background(), attacker, "mallory", time.Hour)
			require.Error(t, err)
			assert.Nil(t, data)
			if name == "uid name" {
				assert.ErrorIs(t, err, provisioner.ErrNotOwned)
			} else {
				assert.ErrorIs(t, err, ErrNotProvisioned, "the legacy namespace is the victim's; the attacker has none")
			}
		})
	}
}

func TestLoadBalancerAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  corev1.Service
		want string
	}{
		{"ClusterIP", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}, ""},
		{"pending", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}, ""},
		{"IP", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.7", Hostname: "lb.example.com"}}}}}, "203.0.113.7"},
		{"hostname", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}}}}, "lb.example.com"},
	} {
		if got := LoadBalancerAddress(&tc.svc); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
