package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Issue signs a fresh key pair with ca. The validity starts a little before
// now (clock skew) and never outlasts the CA: a leaf beyond its CA's expiry
// would fail verification anyway, and claiming otherwise hides the problem.
func Issue(ca *CA, spec LeafSpec, now time.Time) (*KeyPair, error) {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("issue: CA certificate and key are required")
	}
	if spec.CommonName == "" {
		return nil, errors.New("issue: common name is required")
	}
	ips, err := parseIPs(spec.IPAddresses)
	if err != nil {
		return nil, err
	}
	validity := spec.Validity
	if validity <= 0 {
		validity = DefaultLeafValidity
	}
	notBefore, notAfter := now.Add(-backdate), now.Add(validity)
	if notBefore.Before(ca.Cert.NotBefore) {
		notBefore = ca.Cert.NotBefore
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	if !notAfter.After(now) {
		return nil, fmt.Errorf("issue %q: CA %q expired at %s", spec.CommonName, ca.Cert.Subject.CommonName, ca.Cert.NotAfter)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		DNSNames:              spec.DNSNames,
		IPAddresses:           ips,
		NotBefore:             notBefore.UTC(),
		NotAfter:              notAfter.UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature, // ECDSA has no key encipherment
		ExtKeyUsage:           spec.Usage.extKeyUsages(),
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("issue %q: %w", spec.CommonName, err)
	}
	return newKeyPair(der, key)
}

// ParseKeyPair reads a PEM certificate and key and checks they belong
// together: a Secret edited by hand could pair a cert with the wrong key.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, err
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key %T cannot sign", k)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(certs[0].PublicKey) {
		return nil, errors.New("private key does not match the certificate")
	}
	return &KeyPair{Cert: certs[0], Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCA is ParseKeyPair plus the check that the certificate is a CA.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	kp, err := ParseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if !kp.Cert.IsCA {
		return nil, fmt.Errorf("certificate %q is not a CA", kp.Cert.Subject.CommonName)
	}
	return &CA{*kp}, nil
}

func newKeyPair(der []byte, key *ecdsa.PrivateKey) (*KeyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})
	return &KeyPair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// randomSerial is 128 random bits: unpredictable serials are what made
// chosen-prefix collisions impractical, and RFC 5280 allows up to 20 octets.
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil // serials must be positive
}

func parseIPs(in []string) ([]net.IP, error) {
	out := make([]net.IP, 0, len(in))
	for _, s := range in {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("invalid IP SAN %q", s)
		}
		out = append(out, ip)
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
