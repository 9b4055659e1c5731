// Package pki issues the certificates, keys and kubeconfigs of a tenant
// control plane. Pure functions: crypto only, no clients, no files. The
// controller reads the management namespace's Secrets, calls Reconcile, and
// writes back only what it reports changed.
//
// Keys are ECDSA P-256, the service-account key included: every Kubernetes
// component and client accepts them, a key costs microseconds rather than
// the ~50ms of RSA 2048, and signatures and PEMs are a fraction of the size.
// Generation speed matters because the controller issues on the hot path
// (new clusters, renewals, every tenant-kubeconfig request).
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"time"

	"k8s.io/client-go/util/keyutil"
)

const (
	// CAValidity is long because a CA is never replaced in place: every
	// client trusts it, so a new one would break them all.
	CAValidity = 10 * 365 * 24 * time.Hour
	// DefaultLeafValidity matches kubeadm; Reconcile renews before expiry.
	DefaultLeafValidity = 365 * 24 * time.Hour
	// backdate lets a certificate be valid on a node whose clock runs a
	// little behind the controller's.
	backdate = 5 * time.Minute
	// maxSubjectField is RFC 5280's upper bound for CN and OU.
	maxSubjectField = 64
)

// KeyPair is a certificate with its private key, parsed and PEM-encoded.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// CA is a self-signed certificate authority. A distinct type from KeyPair so
// a CA cannot be passed where a leaf is expected, and vice versa.
type CA struct{ KeyPair }

// ServiceAccountKey signs and verifies the tenant's service-account tokens.
// Key is a crypto.Signer because kube-apiserver also accepts ECDSA keys,
// and an existing key is kept whatever its type.
type ServiceAccountKey struct {
	Key        crypto.Signer
	PrivatePEM []byte
	PublicPEM  []byte
}

// CAs are the roots of one cluster. Etcd is nil when etcd is external.
type CAs struct {
	Cluster, Etcd, FrontProxy *CA
	ServiceAccount            *ServiceAccountKey
}

// Usage is what a leaf certificate may be used for.
type Usage int

const (
	UsageServer Usage = iota
	UsageClient
	// UsagePeer is server and client: etcd members dial each other with
	// the same certificate they serve with, and etcd's gRPC gateway dials
	// its own server with the server certificate.
	UsagePeer
)

func (u Usage) extKeyUsages() []x509.ExtKeyUsage {
	switch u {
	case UsageServer:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case UsageClient:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
}

// LeafSpec describes a leaf certificate. For client certificates the API
// server reads CommonName as the user and Organization as the groups.
type LeafSpec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPAddresses  []string // text, as provisioner.SANs holds them
	Usage        Usage
	Validity     time.Duration // zero means DefaultLeafValidity
}

// GenerateCAs creates the three CAs and the service-account key of a new
// cluster. clusterName (e.g. "<namespace>/<name>") goes into each CA's
// subject so an operator can tell whose CA a certificate chains to.
func GenerateCAs(now time.Time, clusterName string) (*CAs, error) {
	var cas CAs
	var err error
	for _, r := range caRoles {
		if *r.field(&cas), err = newCA(r.commonName, clusterName, now); err != nil {
			return nil, err
		}
	}
	if cas.ServiceAccount, err = newServiceAccountKey(); err != nil {
		return nil, err
	}
	return &cas, nil
}

// newCA self-signs a CA. MaxPathLenZero: it signs leaves only, never an
// intermediate, so a leaked leaf key can never mint a sub-CA.
func newCA(cn, clusterName string, now time.Time) (*CA, error) {
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
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-backdate).UTC(),
		NotAfter:              now.Add(CAValidity).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	if clusterName != "" {
		tmpl.Subject.OrganizationalUnit = []string{truncate(clusterName, maxSubjectField)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing %s: %w", cn, err)
	}
	kp, err := newKeyPair(der, key)
	if err != nil {
		return nil, err
	}
	return &CA{*kp}, nil
}

// newServiceAccountKey is ECDSA P-256, so tokens are ES256: kube-apiserver
// signs and verifies them, as every OIDC verifier does (ES256 is in the
// JOSE algorithms every library implements). An RSA 2048 key took about
// 70 ms to generate, most of a new cluster's CPU in capn (`make
// bench-scale`); P-256 takes microseconds. Clusters created before keep
// their RSA key (Reconcile never replaces one).
func newServiceAccountKey() (*ServiceAccountKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return serviceAccountKeyFrom(key)
}

func serviceAccountKeyFrom(key crypto.Signer) (*ServiceAccountKey, error) {
	priv, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	pub := pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: der})
	return &ServiceAccountKey{Key: key, PrivatePEM: priv, PublicPEM: pub}, nil
}
