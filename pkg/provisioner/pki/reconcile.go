package pki

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"capn.dev/capn/pkg/provisioner"
)

// DefaultRenewalThreshold renews a one-year leaf a month before expiry:
// room for a controller outage without pods ever holding an expired cert.
const DefaultRenewalThreshold = 30 * 24 * time.Hour

// NeedsRenewal reports whether the first certificate in certPEM expires
// within threshold of now.
func NeedsRenewal(certPEM []byte, now time.Time, threshold time.Duration) (bool, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return false, err
	}
	return !now.Add(threshold).Before(certs[0].NotAfter), nil
}

// Reconcile returns the desired PKI Secret data given the existing data,
// and the names of the Secrets whose data differs (the only ones to write).
// Existing CAs and service-account key are kept as they are and never
// regenerated: every client trusts them, so replacing one would break the
// cluster; an unreadable one is an error for a human. Missing ones are
// generated. A leaf is kept byte for byte unless it is missing or
// unreadable, expires within threshold, was not signed by its CA's current
// key, or no longer matches its spec (subject, SANs, usages, kubeconfig
// server). Unchanged inputs therefore give identical output and no writes.
// Keys of existing Secrets that capn does not own are neither returned nor
// reported as changes.
func Reconcile(existing Data, in Inputs, now time.Time, threshold time.Duration) (Data, []string, error) {
	// A threshold as long as the validity would reissue every leaf on
	// every resync, rolling the control plane forever.
	if threshold < 0 || threshold >= in.validity() {
		return nil, nil, fmt.Errorf("renewal threshold %s must be in [0, leaf validity %s)", threshold, in.validity())
	}
	cas, err := loadCAs(existing, in, now)
	if err != nil {
		return nil, nil, err
	}
	out := cas.data(in.ManagedEtcd || cas.Etcd != nil)
	for _, l := range leafSet(in) {
		ca := cas.bySecret(l.ca)
		if cur, ok := existing[l.secret]; ok && ca != nil && leafFresh(cur, l, ca, in, now, threshold) {
			out[l.secret] = owned(cur, l)
			continue
		}
		if out[l.secret], err = issueLeaf(cas, l, in, now); err != nil {
			return nil, nil, err
		}
	}
	var changed []string
	for name, want := range out {
		cur := existing[name]
		for key, v := range want {
			if have, ok := cur[key]; !ok || !bytes.Equal(have, v) {
				changed = append(changed, name)
				break
			}
		}
		out[name] = cloneOwned(want) // never alias the caller's maps or bytes
	}
	slices.Sort(changed)
	return out, changed, nil
}

// loadCAs parses the existing CAs and service-account key and generates
// only the missing ones. The etcd CA is generated only for a managed etcd.
func loadCAs(existing Data, in Inputs, now time.Time) (*CAs, error) {
	cas := &CAs{}
	for _, r := range caRoles {
		dst := r.field(cas)
		var err error
		if d, ok := existing[r.secret]; ok {
			if *dst, err = ParseCA(d[corev1.TLSCertKey], d[corev1.TLSPrivateKeyKey]); err != nil {
				return nil, fmt.Errorf("CA Secret %q exists but is unusable (not regenerating it): %w", r.secret, err)
			}
			continue
		}
		if r.secret == provisioner.SecretEtcdCA && !in.ManagedEtcd {
			continue
		}
		if *dst, err = newCA(r.commonName, in.ClusterName, now); err != nil {
			return nil, err
		}
	}
	var err error
	if d, ok := existing[provisioner.SecretServiceAccount]; ok {
		cas.ServiceAccount, err = loadServiceAccountKey(d)
	} else {
		cas.ServiceAccount, err = newServiceAccountKey()
	}
	return cas, err
}

// loadServiceAccountKey keeps sa.key and rewrites sa.pub only when it is
// missing or not the key's public half (tokens signed with sa.key must
// verify with sa.pub). Changing sa.key would invalidate every token.
func loadServiceAccountKey(d map[string][]byte) (*ServiceAccountKey, error) {
	k, err := keyutil.ParsePrivateKeyPEM(d[provisioner.SecretKeySAPrivate])
	if err != nil {
		return nil, fmt.Errorf("Secret %q exists but its %s is unusable (not regenerating it): %w", provisioner.SecretServiceAccount, provisioner.SecretKeySAPrivate, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("service-account key %T cannot sign", k)
	}
	sa, err := serviceAccountKeyFrom(signer)
	if err != nil {
		return nil, err
	}
	sa.PrivatePEM = d[provisioner.SecretKeySAPrivate]
	if pubs, err := keyutil.ParsePublicKeysPEM(d[provisioner.SecretKeySAPublic]); err == nil && len(pubs) == 1 {
		if p, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); ok && p.Equal(pubs[0]) {
			sa.PublicPEM = d[provisioner.SecretKeySAPublic]
		}
	}
	return sa, nil
}

// leafFresh reports whether the existing leaf Secret data can be kept.
func leafFresh(cur map[string][]byte, l leaf, ca *CA, in Inputs, now time.Time, threshold time.Duration) bool {
	var kp *KeyPair
	var err error
	if l.kubeconfig {
		kp, err = kubeconfigKeyPair(cur[provisioner.SecretKeyKubeconfig], in.APIServerURL, ca.CertPEM)
	} else {
		kp, err = ParseKeyPair(cur[corev1.TLSCertKey], cur[corev1.TLSPrivateKeyKey])
	}
	if err != nil || kp.Cert.CheckSignatureFrom(ca.Cert) != nil {
		return false
	}
	// Expiring, unless it already ends with its CA: a reissue could not
	// extend it, and reissuing on every resync would roll pods forever.
	c := kp.Cert
	if !now.Add(threshold).Before(c.NotAfter) && c.NotAfter.Before(ca.Cert.NotAfter) {
		return false
	}
	s := l.spec
	return c.Subject.CommonName == s.CommonName &&
		sameSet(c.Subject.Organization, s.Organization) &&
		sameSet(c.DNSNames, s.DNSNames) &&
		sameSet(ipStrings(c.IPAddresses), canonicalIPs(s.IPAddresses)) &&
		slices.Equal(c.ExtKeyUsage, s.Usage.extKeyUsages())
}

// sameSet compares as sets: the builders' SAN order is not meaningful, so
// a reordering must not reissue a certificate and roll the control plane.
func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// canonicalIPs spells IPs as net.IP.String does ("::1", not "0::1").
func canonicalIPs(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = s
		if ip := net.ParseIP(s); ip != nil {
			out[i] = ip.String()
		}
	}
	return out
}

// owned keeps only the keys capn writes for l.
func owned(cur map[string][]byte, l leaf) map[string][]byte {
	keys := []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}
	if l.kubeconfig {
		keys = []string{provisioner.SecretKeyKubeconfig}
	}
	out := make(map[string][]byte, len(keys))
	for _, k := range keys {
		out[k] = cur[k]
	}
	return out
}

func cloneOwned(m map[string][]byte) map[string][]byte {
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = bytes.Clone(v)
	}
	return out
}

// CertsHash identifies a set of Secret data for the CertsHashAnnotation:
// sha256 over names, keys and values in sorted order, each length-prefixed
// so that no two different sets share an encoding. It covers private keys
// too; a sha256 of high-entropy key material discloses nothing usable.
func CertsHash(data Data) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, name := range slices.Sorted(maps.Keys(data)) {
		field([]byte(name))
		field(binary.BigEndian.AppendUint64(nil, uint64(len(data[name]))))
		for _, key := range slices.Sorted(maps.Keys(data[name])) {
			field([]byte(key))
			field(data[name][key])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
