package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

const (
	kubeletCN   = "kube-apiserver-kubelet-client"
	syncerToken = "syncer-token"
)

// testCA is a CA that issues client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func (ca *testCA) client(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// env is a kubelet API server in front of a fake management apiserver.
type env struct {
	ca         *testCA
	management *httptest.Server
	kubelet    *httptest.Server
	// client is the tenant apiserver's kubelet client.
	client *http.Client
}

type envOptions struct {
	tenant, host []*corev1.Pod
	maxSessions  int
	runner       Runner
	// tls, if set, replaces TLSConfig's (for tests of the handler's own
	// checks behind a laxer server).
	tls func(ca *testCA) *tls.Config
}

func newEnv(t *testing.T, management http.Handler, o envOptions) *env {
	t.Helper()
	e := &env{ca: newTestCA(t, "tenant-ca")}
	e.management = httptest.NewTLSServer(management)
	t.Cleanup(e.management.Close)
	cfg := &rest.Config{
		Host:            e.management.URL,
		BearerToken:     syncerToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.management.Certificate().Raw})},
		Timeout:         time.Second, // must not cut streams
	}
	h, err := NewHandler(Options{
		Management:        cfg,
		Resolver:          resolver(t, o.tenant, o.host),
		ClientCommonNames: []string{kubeletCN},
		MaxSessions:       o.maxSessions,
		Runner:            o.runner,
	})
	require.NoError(t, err)
	e.kubelet = httptest.NewUnstartedServer(nil)
	e.kubelet.Config = NewHTTPServer(context.Background(), h, nil)
	if o.tls != nil {
		e.kubelet.TLS = o.tls(e.ca)
	} else {
		e.kubelet.TLS = TLSConfig(e.ca.pool(), nil)
	}
	e.kubelet.StartTLS()
	t.Cleanup(e.kubelet.Close)
	e.client = e.clientWith(e.ca.client(t, kubeletCN))
	return e
}

// clientWith is an HTTPS client of the kubelet API presenting certs.
func (e *env) clientWith(certs ...tls.Certificate) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: e.clientTLS(certs...)}}
}

func (e *env) clientTLS(certs ...tls.Certificate) *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(e.kubelet.Certificate())
	return &tls.Config{RootCAs: roots, Certificates: certs}
}
