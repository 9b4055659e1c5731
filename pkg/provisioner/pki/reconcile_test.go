package pki

import (
	"crypto/rand"
	"crypto/rsa"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

func TestReconcileFromNothingWritesEverything(t *testing.T) {
	d, changed := reconcile(t, nil, inputs(), now)
	if want := slices.Sorted(maps.Keys(d)); !slices.Equal(changed, want) || len(want) != 14 {
		t.Errorf("changed %v, want all of %v", changed, want)
	}
}

func TestReconcileIdempotent(t *testing.T) {
	first := base(t)
	second, changed := reconcile(t, first, inputs(), now)
	if len(changed) != 0 || !reflect.DeepEqual(first, second) {
		t.Fatalf("second run changed %v", changed)
	}
	// A month later, still outside the renewal window: still no writes.
	third, changed := reconcile(t, second, inputs(), now.Add(30*24*time.Hour))
	if len(changed) != 0 || !reflect.DeepEqual(first, third) || CertsHash(first) != CertsHash(third) {
		t.Fatalf("third run changed %v", changed)
	}
}

// only asserts that exactly the named Secrets changed, and that everything
// else kept its bytes.
func only(t *testing.T, before, after Data, changed []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(changed, want) {
		t.Errorf("changed %v, want %v", changed, want)
	}
	for name := range before {
		if same := reflect.DeepEqual(before[name], after[name]); same == slices.Contains(want, name) {
			t.Errorf("Secret %s: unchanged=%v, want %v", name, same, !slices.Contains(want, name))
		}
	}
}

func TestReconcileRenewsExpiringLeaves(t *testing.T) {
	d := base(t)
	notAfter := leafOf(t, d, provisioner.SecretAPIServerServing).Cert.NotAfter
	// Just inside the window: every leaf (all issued together) renews;
	// CAs and the service-account key never do.
	at := notAfter.Add(-threshold + time.Minute)
	after, changed := reconcile(t, d, inputs(), at)
	var leaves []string
	for _, l := range leafSet(inputs()) {
		leaves = append(leaves, l.secret)
	}
	only(t, d, after, changed, leaves...)
	if got := leafOf(t, after, provisioner.SecretAPIServerServing).Cert.NotAfter; !got.Equal(at.Add(DefaultLeafValidity)) {
		t.Errorf("renewed leaf ends %s, want %s", got, at.Add(DefaultLeafValidity))
	}
	// Just outside it: nothing.
	if _, changed := reconcile(t, d, inputs(), notAfter.Add(-threshold-time.Minute)); len(changed) != 0 {
		t.Errorf("outside the window changed %v", changed)
	}
}

func TestReconcileRenewsOnlyTheExpiringLeaf(t *testing.T) {
	d := base(t)
	short, err := Issue(caOf(t, d, provisioner.SecretFrontProxyCA),
		LeafSpec{CommonName: provisioner.FrontProxyClientCommonName, Usage: UsageClient, Validity: 10 * 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	d[provisioner.SecretFrontProxyClient] = tlsData(short)
	after, changed := reconcile(t, d, inputs(), now)
	only(t, d, after, changed, provisioner.SecretFrontProxyClient)
}

func TestReconcileSANChangeReissuesOnlyThatLeaf(t *testing.T) {
	for _, san := range []string{"api.example.com", "203.0.113.7"} { // DNS, then IP
		d := base(t)
		in := inputs(func(nc *v1alpha1.NestedCluster) { nc.Spec.APIServer.CertSANs = []string{san} })
		after, changed := reconcile(t, d, in, now)
		only(t, d, after, changed, provisioner.SecretAPIServerServing)
		c := leafOf(t, after, provisioner.SecretAPIServerServing).Cert
		if !slices.Contains(append(c.DNSNames, ipStrings(c.IPAddresses)...), san) {
			t.Errorf("reissued SANs %v %v lack %s", c.DNSNames, c.IPAddresses, san)
		}
		// Reordered SANs are the same set: no reissue.
		in.APIServerSANs.DNSNames = slices.Clone(in.APIServerSANs.DNSNames)
		slices.Reverse(in.APIServerSANs.DNSNames)
		if _, changed := reconcile(t, after, in, now); len(changed) != 0 {
			t.Errorf("reordered SANs changed %v", changed)
		}
	}
}

// The management Service's IP becoming known changes the apiserver's SANs
// and the URL in the component kubeconfigs, and nothing else.
func TestReconcileServiceIPChange(t *testing.T) {
	d := base(t)
	in := inputs()
	in.APIServerURL = "https://10.0.0.99:6443"
	in.APIServerSANs.IPAddresses = append(slices.Clone(in.APIServerSANs.IPAddresses), "10.0.0.99")
	after, changed := reconcile(t, d, in, now)
	only(t, d, after, changed, provisioner.SecretAPIServerServing, provisioner.SecretControllerManagerKC, provisioner.SecretSchedulerKC)
}

func TestReconcileReissuesLeafOfAnotherIssuer(t *testing.T) {
	d := base(t)
	foreign, err := GenerateCAs(now, "someone/else")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := Issue(foreign.FrontProxy, LeafSpec{CommonName: provisioner.FrontProxyClientCommonName, Usage: UsageClient}, now)
	if err != nil {
		t.Fatal(err)
	}
	d[provisioner.SecretFrontProxyClient] = tlsData(kp)
	after, changed := reconcile(t, d, inputs(), now)
	only(t, d, after, changed, provisioner.SecretFrontProxyClient)

	// A replaced CA (say, restored from a backup) is kept as it now is and
	// every leaf it signs is reissued under it.
	d = clone(after)
	d[provisioner.SecretEtcdCA] = tlsData(&foreign.Etcd.KeyPair)
	after, changed = reconcile(t, d, inputs(), now)
	only(t, d, after, changed, provisioner.SecretEtcdServer, provisioner.SecretEtcdPeer, provisioner.SecretAPIServerEtcdClient)
	if !reflect.DeepEqual(after[provisioner.SecretEtcdCA], tlsData(&foreign.Etcd.KeyPair)) {
		t.Error("the existing etcd CA was not kept")
	}
}

func TestReconcileNeverRegeneratesCAs(t *testing.T) {
	for _, tc := range []struct{ secret, key string }{
		{provisioner.SecretCA, "tls.key"},
		{provisioner.SecretFrontProxyCA, "tls.crt"},
		{provisioner.SecretServiceAccount, provisioner.SecretKeySAPrivate},
	} {
		d := base(t)
		d[tc.secret] = maps.Clone(d[tc.secret])
		d[tc.secret][tc.key] = []byte("garbage")
		if _, _, err := Reconcile(d, inputs(), now, threshold); err == nil {
			t.Errorf("corrupt %s/%s: Reconcile succeeded, want an error rather than a new CA", tc.secret, tc.key)
		}
	}
	// A leaf's certificate as a CA is not a CA.
	d := base(t)
	d[provisioner.SecretCA] = d[provisioner.SecretAPIServerServing]
	if _, _, err := Reconcile(d, inputs(), now, threshold); err == nil {
		t.Error("leaf in the CA Secret: Reconcile succeeded")
	}
	// A missing sa.pub is derived from sa.key, which stays.
	d = base(t)
	d[provisioner.SecretServiceAccount] = map[string][]byte{provisioner.SecretKeySAPrivate: d[provisioner.SecretServiceAccount][provisioner.SecretKeySAPrivate]}
	after, changed := reconcile(t, d, inputs(), now)
	only(t, d, after, changed, provisioner.SecretServiceAccount)
	if !reflect.DeepEqual(after[provisioner.SecretServiceAccount], base(t)[provisioner.SecretServiceAccount]) {
		t.Error("sa.pub was not restored from sa.key")
	}
}

// Clusters created before the service-account key became ECDSA keep their
// RSA key: a new key would invalidate every token the tenant holds.
func TestReconcileKeepsAnRSAServiceAccountKey(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	sa, err := serviceAccountKeyFrom(key)
	require.NoError(t, err)
	d := base(t)
	d[provisioner.SecretServiceAccount] = map[string][]byte{
		provisioner.SecretKeySAPrivate: sa.PrivatePEM, provisioner.SecretKeySAPublic: sa.PublicPEM,
	}
	after, changed := reconcile(t, d, inputs(), now)
	assert.Empty(t, changed)
	assert.Equal(t, sa.PrivatePEM, after[provisioner.SecretServiceAccount][provisioner.SecretKeySAPrivate])
}

// A CA expiring within the threshold caps its leaves at its own expiry;
// they must not be reissued on every resync.
func TestReconcileNoChurnNearCAExpiry(t *testing.T) {
	d := base(t)
	at := caOf(t, d, provisioner.SecretCA).Cert.NotAfter.Add(-10 * 24 * time.Hour)
	after, changed := reconcile(t, d, inputs(), at)
	if len(changed) == 0 {
		t.Fatal("nothing renewed 10 days before CA expiry")
	}
	if _, changed := reconcile(t, after, inputs(), at.Add(time.Hour)); len(changed) != 0 {
		t.Errorf("second resync changed %v", changed)
	}
}

func TestReconcileIgnoresForeignKeysAndDoesNotAlias(t *testing.T) {
	d := base(t)
	d[provisioner.SecretAPIServerServing] = maps.Clone(d[provisioner.SecretAPIServerServing])
	d[provisioner.SecretAPIServerServing]["ca.crt"] = []byte("added by someone")
	after, changed := reconcile(t, d, inputs(), now)
	if len(changed) != 0 || after[provisioner.SecretAPIServerServing]["ca.crt"] != nil {
		t.Errorf("foreign key: changed %v, returned %q", changed, after[provisioner.SecretAPIServerServing]["ca.crt"])
	}
	after[provisioner.SecretCA]["tls.crt"][0] ^= 0xff
	if d[provisioner.SecretCA]["tls.crt"][0] == after[provisioner.SecretCA]["tls.crt"][0] {
		t.Error("Reconcile's output aliases its input")
	}
}

func TestReconcileRejectsThresholdBeyondValidity(t *testing.T) {
	in := inputs()
	in.LeafValidity = 7 * 24 * time.Hour
	if _, _, err := Reconcile(base(t), in, now, in.LeafValidity); err == nil {
		t.Error("threshold == validity accepted: every resync would reissue")
	}
}

func TestNeedsRenewal(t *testing.T) {
	c := leafOf(t, base(t), provisioner.SecretAPIServerServing).Cert
	pemBytes := base(t)[provisioner.SecretAPIServerServing]["tls.crt"]
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{now, false},
		{c.NotAfter.Add(-threshold - time.Second), false},
		{c.NotAfter.Add(-threshold), true},
		{c.NotAfter.Add(time.Hour), true},
	} {
		if got, err := NeedsRenewal(pemBytes, tc.at, threshold); err != nil || got != tc.want {
			t.Errorf("at %s: %v, %v; want %v", tc.at, got, err, tc.want)
		}
	}
	if _, err := NeedsRenewal([]byte("nope"), now, threshold); err == nil {
		t.Error("garbage parsed")
	}
}

func TestCertsHash(t *testing.T) {
	d := base(t)
	h := CertsHash(d)
	for range 5 { // map order varies between iterations
		if CertsHash(clone(d)) != h {
			t.Fatal("hash unstable")
		}
	}
	renewed, _ := reconcile(t, d, inputs(), leafOf(t, d, provisioner.SecretEtcdPeer).Cert.NotAfter.Add(-time.Hour))
	if CertsHash(renewed) == h {
		t.Error("hash unchanged after renewal")
	}
	if CertsHash(Data{"a": {"bc": nil}}) == CertsHash(Data{"ab": {"c": nil}}) ||
		CertsHash(Data{"a": {"b": []byte("c")}}) == CertsHash(Data{"a": {"bc": nil}}) {
		t.Error("different data hash alike")
	}
}
