package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/provisioner"
)

const server = "https://10.0.0.10:6443"

func TestKubeconfigParses(t *testing.T) {
	d := base(t)
	ca := caOf(t, d, provisioner.SecretCA)
	kp, err := Issue(ca, LeafSpec{CommonName: "system:kube-scheduler", Usage: UsageClient}, now)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := Kubeconfig(server, ca.CertPEM, "system:kube-scheduler", kp)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatalf("clientcmd: %v", err)
	}
	if rc.Host != server || !bytes.Equal(rc.CAData, ca.CertPEM) || !bytes.Equal(rc.CertData, kp.CertPEM) || !bytes.Equal(rc.KeyData, kp.KeyPEM) {
		t.Errorf("REST config host=%q, CA/cert/key match=%v/%v/%v", rc.Host,
			bytes.Equal(rc.CAData, ca.CertPEM), bytes.Equal(rc.CertData, kp.CertPEM), bytes.Equal(rc.KeyData, kp.KeyPEM))
	}
	// The component kubeconfigs Reconcile writes parse too and point at
	// provisioner.APIServerURL.
	for _, s := range []string{provisioner.SecretControllerManagerKC, provisioner.SecretSchedulerKC} {
		rc, err := clientcmd.RESTConfigFromKubeConfig(d[s][provisioner.SecretKeyKubeconfig])
		if err != nil || rc.Host != inputs().APIServerURL {
			t.Errorf("%s: host %q, err %v; want %q", s, rc.Host, err, inputs().APIServerURL)
		}
	}
	if _, err := Kubeconfig("", ca.CertPEM, "u", kp); err == nil {
		t.Error("empty server accepted")
	}
}

func TestTenantKubeconfig(t *testing.T) {
	d := base(t)
	ca := caOf(t, d, provisioner.SecretCA)
	groups := []string{"team-a:admins", "system:authenticated"}
	for _, tc := range []struct{ ttl, want time.Duration }{
		{0, DefaultTenantKubeconfigTTL},
		{-time.Minute, DefaultTenantKubeconfigTTL},
		{2 * time.Hour, 2 * time.Hour},
		{MaxTenantKubeconfigTTL, MaxTenantKubeconfigTTL},
		{30 * 24 * time.Hour, MaxTenantKubeconfigTTL},
	} {
		kc, err := TenantKubeconfig(server, ca, "alice", groups, tc.ttl, now)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.Load(kc)
		if err != nil {
			t.Fatalf("clientcmd: %v", err)
		}
		kp := leafOf(t, Data{"kc": {provisioner.SecretKeyKubeconfig: kc}}, "kc")
		c := kp.Cert
		if got := c.NotAfter.Sub(now); got != tc.want {
			t.Errorf("ttl %s: valid for %s, want %s", tc.ttl, got, tc.want)
		}
		if c.Subject.CommonName != "alice" || !slices.Equal(c.Subject.Organization, groups) {
			t.Errorf("subject CN=%q O=%v", c.Subject.CommonName, c.Subject.Organization)
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("client cert does not verify: %v", err)
		}

		// No CA key, of any of the cluster's CAs, anywhere in it: not as a
		// PEM block in any embedded field, not raw, not base64'd.
		var embedded []byte
		for _, a := range cfg.AuthInfos {
			embedded = append(append(embedded, a.ClientKeyData...), a.ClientCertificateData...)
		}
		for _, c := range cfg.Clusters {
			embedded = append(embedded, c.CertificateAuthorityData...)
			if !bytes.Equal(c.CertificateAuthorityData, ca.CertPEM) {
				t.Error("embedded CA is not the cluster CA certificate")
			}
		}
		keys := privateKeysIn(t, embedded)
		if len(keys) != 1 || !samePublic(keys[0], c.PublicKey) {
			t.Errorf("want exactly the client's own private key, found %d keys", len(keys))
		}
		for _, s := range []string{provisioner.SecretCA, provisioner.SecretEtcdCA, provisioner.SecretFrontProxyCA} {
			caKP := caOf(t, d, s)
			for _, k := range keys {
				if samePublic(k, caKP.Cert.PublicKey) {
					t.Errorf("tenant kubeconfig holds the %s private key", s)
				}
			}
			b64 := []byte(base64.StdEncoding.EncodeToString(caKP.KeyPEM))
			if bytes.Contains(kc, caKP.KeyPEM) || bytes.Contains(kc, b64) || bytes.Contains(embedded, caKP.KeyPEM) {
				t.Errorf("tenant kubeconfig contains the %s key bytes", s)
			}
		}
	}
	// Clamped by the CA's own expiry too.
	late := ca.Cert.NotAfter.Add(-time.Minute)
	kc, err := TenantKubeconfig(server, ca, "alice", nil, time.Hour, late)
	if err != nil {
		t.Fatal(err)
	}
	if c := leafOf(t, Data{"kc": {provisioner.SecretKeyKubeconfig: kc}}, "kc").Cert; c.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("tenant cert outlives the CA: %s", c.NotAfter)
	}
	for name, err := range map[string]error{
		"no user": second(TenantKubeconfig(server, ca, "", nil, 0, now)),
		"no CA":   second(TenantKubeconfig(server, nil, "alice", nil, 0, now)),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func second[T any](_ T, err error) error { return err }
