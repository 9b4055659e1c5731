package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// now is the fake clock every test starts from.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const threshold = DefaultRenewalThreshold

// cluster is a defaulted NestedCluster, as in the builders' tests.
func cluster(mutate ...func(*v1alpha1.NestedCluster)) *v1alpha1.NestedCluster {
	nc := &v1alpha1.NestedCluster{}
	nc.Name, nc.Namespace = "demo", "team-a"
	nc.Spec = v1alpha1.NestedClusterSpec{
		Version:        "v1.37.2",
		ClusterNetwork: v1alpha1.ClusterNetwork{ServiceCIDR: "10.96.0.0/12", PodCIDR: "10.244.0.0/16", DNSDomain: "cluster.local"},
		Etcd:           v1alpha1.EtcdSpec{Managed: &v1alpha1.ManagedEtcd{Replicas: ptr.To[int32](3)}},
		APIServer: v1alpha1.APIServerSpec{
			ComponentSpec: v1alpha1.ComponentSpec{Replicas: ptr.To[int32](1)},
			Service:       v1alpha1.APIServerService{Type: corev1.ServiceTypeClusterIP, Port: 6443},
		},
	}
	for _, m := range mutate {
		m(nc)
	}
	return nc
}

var addrs = provisioner.Addresses{APIServerServiceIP: "10.0.0.10", EtcdServiceIP: "10.0.0.11"}

func inputs(mutate ...func(*v1alpha1.NestedCluster)) Inputs {
	return InputsFor(cluster(mutate...), addrs)
}

// baseline is one reconciled-from-nothing set, shared because RSA key
// generation makes each fresh set cost tens of milliseconds.
var baseline = sync.OnceValues(func() (Data, error) {
	d, _, err := Reconcile(nil, inputs(), now, threshold)
	return d, err
})

func base(t testing.TB) Data {
	t.Helper()
	d, err := baseline()
	if err != nil {
		t.Fatalf("baseline: %v", err)
	}
	return clone(d)
}

func clone(d Data) Data {
	out := Data{}
	for k, v := range d {
		out[k] = maps.Clone(v)
	}
	return out
}

func reconcile(t testing.TB, existing Data, in Inputs, at time.Time) (Data, []string) {
	t.Helper()
	d, changed, err := Reconcile(existing, in, at, threshold)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return d, changed
}

func caOf(t testing.TB, d Data, secret string) *CA {
	t.Helper()
	ca, err := ParseCA(d[secret][corev1.TLSCertKey], d[secret][corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("CA %s: %v", secret, err)
	}
	return ca
}

// leafOf reads a leaf Secret's key pair, from tls.crt/tls.key or from the
// client credentials of a kubeconfig.
func leafOf(t testing.TB, d Data, secret string) *KeyPair {
	t.Helper()
	s := d[secret]
	if kc, ok := s[provisioner.SecretKeyKubeconfig]; ok {
		cfg, err := clientcmd.Load(kc)
		if err != nil {
			t.Fatalf("%s: %v", secret, err)
		}
		auth := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
		s = map[string][]byte{corev1.TLSCertKey: auth.ClientCertificateData, corev1.TLSPrivateKeyKey: auth.ClientKeyData}
	}
	kp, err := ParseKeyPair(s[corev1.TLSCertKey], s[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("%s: %v", secret, err)
	}
	return kp
}

// privateKeysIn returns the public halves of every PEM private key in b.
func privateKeysIn(t testing.TB, b []byte) []crypto.PublicKey {
	t.Helper()
	var out []crypto.PublicKey
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return out
		}
		if !strings.Contains(block.Type, "PRIVATE KEY") {
			continue
		}
		k, err := parseAnyPrivateKey(block)
		if err != nil {
			t.Fatalf("unparseable %s block: %v", block.Type, err)
		}
		out = append(out, k.Public())
	}
}

func parseAnyPrivateKey(block *pem.Block) (crypto.Signer, error) {
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	return k.(crypto.Signer), nil
}

func samePublic(a, b crypto.PublicKey) bool {
	return a.(interface{ Equal(crypto.PublicKey) bool }).Equal(b)
}
