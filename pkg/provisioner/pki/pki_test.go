package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/keyutil"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

func TestGenerateCAs(t *testing.T) {
	cas, err := GenerateCAs(now, "team-a/demo")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ca := range []*CA{cas.Cluster, cas.Etcd, cas.FrontProxy} {
		c := ca.Cert
		if !c.IsCA || !c.MaxPathLenZero || c.KeyUsage&x509.KeyUsageCertSign == 0 {
			t.Errorf("%s: IsCA=%v MaxPathLenZero=%v KeyUsage=%v", c.Subject.CommonName, c.IsCA, c.MaxPathLenZero, c.KeyUsage)
		}
		if err := c.CheckSignatureFrom(c); err != nil {
			t.Errorf("%s not self-signed: %v", c.Subject.CommonName, err)
		}
		if !c.NotAfter.Equal(now.Add(CAValidity)) || c.NotBefore.After(now) {
			t.Errorf("%s valid %s..%s, want ..%s", c.Subject.CommonName, c.NotBefore, c.NotAfter, now.Add(CAValidity))
		}
		if k, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
			t.Errorf("%s key %T, want ECDSA P-256", c.Subject.CommonName, c.PublicKey)
		}
		if !slices.Equal(c.Subject.OrganizationalUnit, []string{"team-a/demo"}) {
			t.Errorf("%s OU %v", c.Subject.CommonName, c.Subject.OrganizationalUnit)
		}
		if seen[string(ca.KeyPEM)] {
			t.Errorf("%s reuses a key", c.Subject.CommonName)
		}
		seen[string(ca.KeyPEM)] = true
	}
	sa := cas.ServiceAccount
	if k, ok := sa.Key.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("service-account key %T, want ECDSA P-256", sa.Key)
	}
	pubs, err := keyutil.ParsePublicKeysPEM(sa.PublicPEM)
	if err != nil || len(pubs) != 1 || !samePublic(sa.Key.Public(), pubs[0]) {
		t.Errorf("sa.pub does not hold sa.key's public key: %v", err)
	}
}

func TestIssueValidityAndSerials(t *testing.T) {
	ca := caOf(t, base(t), provisioner.SecretCA)
	spec := LeafSpec{CommonName: "x", Usage: UsageClient}
	a, err := Issue(ca, spec, now)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Cert.NotAfter.Equal(now.Add(DefaultLeafValidity)) || !a.Cert.NotBefore.Equal(now.Add(-backdate)) {
		t.Errorf("default validity %s..%s", a.Cert.NotBefore, a.Cert.NotAfter)
	}
	spec.Validity = 90 * 24 * time.Hour
	b, err := Issue(ca, spec, now)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Cert.NotAfter.Equal(now.Add(spec.Validity)) {
		t.Errorf("90d validity ends %s", b.Cert.NotAfter)
	}
	if a.Cert.SerialNumber.Cmp(b.Cert.SerialNumber) == 0 || a.Cert.SerialNumber.Sign() <= 0 || len(a.Cert.SerialNumber.Bytes()) > 20 {
		t.Errorf("serials %v, %v: want distinct, positive, at most 20 octets", a.Cert.SerialNumber, b.Cert.SerialNumber)
	}
	// Never outlasts the CA, never starts before it.
	late := ca.Cert.NotAfter.Add(-time.Hour)
	c, err := Issue(ca, LeafSpec{CommonName: "x"}, late)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("leaf ends %s after its CA %s", c.Cert.NotAfter, ca.Cert.NotAfter)
	}
	if d, _ := Issue(ca, LeafSpec{CommonName: "x"}, ca.Cert.NotBefore); d.Cert.NotBefore.Before(ca.Cert.NotBefore) {
		t.Errorf("leaf starts %s before its CA %s", d.Cert.NotBefore, ca.Cert.NotBefore)
	}
	for name, tc := range map[string]struct {
		ca   *CA
		spec LeafSpec
		at   time.Time
	}{
		"no CA":      {nil, LeafSpec{CommonName: "x"}, now},
		"no CN":      {ca, LeafSpec{}, now},
		"bad IP":     {ca, LeafSpec{CommonName: "x", IPAddresses: []string{"10.0.0.300"}}, now},
		"CA expired": {ca, LeafSpec{CommonName: "x"}, ca.Cert.NotAfter.Add(time.Second)},
	} {
		if _, err := Issue(tc.ca, tc.spec, tc.at); err == nil {
			t.Errorf("%s: Issue succeeded, want error", name)
		}
	}
}

// TestLeavesVerify: each leaf chains to the right CA for its usage only.
func TestLeavesVerify(t *testing.T) {
	d := base(t)
	server, client := x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth
	for _, tc := range []struct {
		secret, ca, cn string
		org            []string
		ok, notOK      []x509.ExtKeyUsage
	}{
		{provisioner.SecretAPIServerServing, provisioner.SecretCA, "kube-apiserver", nil, []x509.ExtKeyUsage{server}, []x509.ExtKeyUsage{client}},
		{provisioner.SecretAPIServerKubeletClient, provisioner.SecretCA, "kube-apiserver-kubelet-client", nil, []x509.ExtKeyUsage{client}, []x509.ExtKeyUsage{server}},
		{provisioner.SecretFrontProxyClient, provisioner.SecretFrontProxyCA, provisioner.FrontProxyClientCommonName, nil, []x509.ExtKeyUsage{client}, []x509.ExtKeyUsage{server}},
		{provisioner.SecretControllerManagerKC, provisioner.SecretCA, "system:kube-controller-manager", nil, []x509.ExtKeyUsage{client}, []x509.ExtKeyUsage{server}},
		{provisioner.SecretSchedulerKC, provisioner.SecretCA, "system:kube-scheduler", nil, []x509.ExtKeyUsage{client}, []x509.ExtKeyUsage{server}},
		{provisioner.SecretControllerManagerServing, provisioner.SecretCA, "kube-controller-manager", nil, []x509.ExtKeyUsage{server}, []x509.ExtKeyUsage{client}},
		{provisioner.SecretSchedulerServing, provisioner.SecretCA, "kube-scheduler", nil, []x509.ExtKeyUsage{server}, []x509.ExtKeyUsage{client}},
		{provisioner.SecretAPIServerEtcdClient, provisioner.SecretEtcdCA, "kube-apiserver-etcd-client", nil, []x509.ExtKeyUsage{client}, []x509.ExtKeyUsage{server}},
		{provisioner.SecretEtcdServer, provisioner.SecretEtcdCA, "etcd", nil, []x509.ExtKeyUsage{server, client}, nil},
		{provisioner.SecretEtcdPeer, provisioner.SecretEtcdCA, "etcd-peer", nil, []x509.ExtKeyUsage{server, client}, nil},
	} {
		c := leafOf(t, d, tc.secret).Cert
		if c.Subject.CommonName != tc.cn || !slices.Equal(c.Subject.Organization, tc.org) {
			t.Errorf("%s: subject CN=%q O=%v, want CN=%q O=%v", tc.secret, c.Subject.CommonName, c.Subject.Organization, tc.cn, tc.org)
		}
		if c.IsCA {
			t.Errorf("%s is a CA", tc.secret)
		}
		verify := func(ca string, u x509.ExtKeyUsage) error {
			roots := x509.NewCertPool()
			roots.AddCert(caOf(t, d, ca).Cert)
			_, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{u}})
			return err
		}
		for _, u := range tc.ok {
			if err := verify(tc.ca, u); err != nil {
				t.Errorf("%s for usage %v: %v", tc.secret, u, err)
			}
		}
		for _, u := range tc.notOK {
			if verify(tc.ca, u) == nil {
				t.Errorf("%s verifies for usage %v, want refused", tc.secret, u)
			}
		}
		for _, other := range []string{provisioner.SecretCA, provisioner.SecretEtcdCA, provisioner.SecretFrontProxyCA} {
			if other != tc.ca && verify(other, tc.ok[0]) == nil {
				t.Errorf("%s verifies against %s too", tc.secret, other)
			}
		}
	}
}

func TestSANsExact(t *testing.T) {
	nc := cluster()
	d := base(t)
	none := provisioner.SANs{}
	for secret, want := range map[string]provisioner.SANs{
		provisioner.SecretAPIServerServing:         provisioner.APIServerSANs(nc, addrs),
		provisioner.SecretEtcdServer:               provisioner.EtcdServerSANs(nc, addrs),
		provisioner.SecretEtcdPeer:                 provisioner.EtcdPeerSANs(nc, provisioner.Addresses{}),
		provisioner.SecretControllerManagerServing: {DNSNames: []string{"localhost", "kube-controller-manager"}, IPAddresses: []string{"127.0.0.1"}},
		provisioner.SecretSchedulerServing:         {DNSNames: []string{"localhost", "kube-scheduler"}, IPAddresses: []string{"127.0.0.1"}},
		provisioner.SecretAPIServerKubeletClient:   none,
		provisioner.SecretFrontProxyClient:         none,
		provisioner.SecretAPIServerEtcdClient:      none,
		provisioner.SecretControllerManagerKC:      none,
	} {
		c := leafOf(t, d, secret).Cert
		if !slices.Equal(c.DNSNames, want.DNSNames) || !slices.Equal(ipStrings(c.IPAddresses), want.IPAddresses) {
			t.Errorf("%s SANs DNS=%v IP=%v, want DNS=%v IP=%v", secret, c.DNSNames, c.IPAddresses, want.DNSNames, want.IPAddresses)
		}
	}
	// The SANs are provisioner's (a spot check that those are not empty).
	if c := leafOf(t, d, provisioner.SecretAPIServerServing).Cert; !slices.Contains(c.DNSNames, "kubernetes.default.svc.cluster.local") ||
		!slices.Contains(ipStrings(c.IPAddresses), "10.96.0.1") || !slices.Contains(ipStrings(c.IPAddresses), "10.0.0.10") {
		t.Errorf("apiserver SANs miss tenant or management names: %v %v", c.DNSNames, c.IPAddresses)
	}
}

// TestSecretLayout: the Secrets and keys naming.go documents, and CA keys
// nowhere but in CA Secrets.
func TestSecretLayout(t *testing.T) {
	tls, kc := []string{"tls.crt", "tls.key"}, []string{"kubeconfig"}
	want := map[string][]string{
		provisioner.SecretCA: tls, provisioner.SecretEtcdCA: tls, provisioner.SecretFrontProxyCA: tls,
		provisioner.SecretServiceAccount:         {"sa.key", "sa.pub"},
		provisioner.SecretAPIServerServing:       tls,
		provisioner.SecretAPIServerEtcdClient:    tls,
		provisioner.SecretAPIServerKubeletClient: tls, provisioner.SecretFrontProxyClient: tls,
		provisioner.SecretEtcdServer: tls, provisioner.SecretEtcdPeer: tls,
		provisioner.SecretControllerManagerKC: kc, provisioner.SecretSchedulerKC: kc,
		provisioner.SecretControllerManagerServing: tls, provisioner.SecretSchedulerServing: tls,
	}
	d := base(t)
	check := func(name string, d Data, want map[string][]string) {
		if got := slices.Sorted(maps.Keys(d)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
			t.Errorf("%s: Secrets %v, want %v", name, got, slices.Sorted(maps.Keys(want)))
		}
		for s, keys := range want {
			if got := slices.Sorted(maps.Keys(d[s])); !slices.Equal(got, keys) {
				t.Errorf("%s: Secret %s keys %v, want %v", name, s, got, keys)
			}
		}
	}
	check("managed etcd", d, want)

	cas := []*CA{caOf(t, d, provisioner.SecretCA), caOf(t, d, provisioner.SecretEtcdCA), caOf(t, d, provisioner.SecretFrontProxyCA)}
	for s, keys := range d {
		if strings.HasSuffix(s, "ca") {
			continue
		}
		for k, v := range keys {
			for _, pub := range privateKeysIn(t, decoded(t, k, v)) {
				for _, ca := range cas {
					if samePublic(pub, ca.Cert.PublicKey) {
						t.Errorf("Secret %s key %s holds the %s private key", s, k, ca.Cert.Subject.CommonName)
					}
				}
			}
		}
	}

	ext := inputs(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Etcd = v1alpha1.EtcdSpec{External: &v1alpha1.ExternalEtcd{Endpoints: []string{"https://etcd.example:2379"}}}
	})
	all, err := GenerateCAs(now, ext.ClusterName)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Secrets(all, ext, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{provisioner.SecretEtcdCA, provisioner.SecretEtcdServer, provisioner.SecretEtcdPeer, provisioner.SecretAPIServerEtcdClient} {
		delete(want, s)
	}
	check("external etcd", got, want)
}

// decoded returns a Secret value with a kubeconfig's base64-embedded key
// decoded, so privateKeysIn sees it.
func decoded(t *testing.T, key string, v []byte) []byte {
	if key != provisioner.SecretKeyKubeconfig {
		return v
	}
	return leafOf(t, Data{"kc": {key: v}}, "kc").KeyPEM
}
