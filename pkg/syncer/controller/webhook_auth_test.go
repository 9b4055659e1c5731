package controller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/tenant/names"
)

// Red-team finding 2: the Service webhook served anyone who reached the
// syncer pod. With ClientCAs it serves only a certificate of the tenant CA
// with the apiserver's name.
func TestWebhookRequiresTheTenantAPIServer(t *testing.T) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tenant-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	client := func(cn string) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	o := WebhookOptions{ClientCAs: pool, ClientCommonNames: []string{names.KubeletClientCommonName}}

	srv := httptest.NewUnstartedServer(o.authenticate(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})))
	certs, err := newServingCerts("127.0.0.1", time.Now)
	require.NoError(t, err)
	srv.TLS = o.tlsConfig(certs.getCertificate)
	srv.StartTLS()
	defer srv.Close()

	get := func(certs ...tls.Certificate) (int, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}}} //nolint:gosec // the server's identity is not what this tests
		resp, err := c.Post(srv.URL+ServiceWebhookPath, "application/json", nil)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	_, err = get()
	assert.Error(t, err, "no client certificate must fail the handshake")
	code, err := get(client("alice"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, code, "a tenant user's certificate")
	code, err = get(client(names.KubeletClientCommonName))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)

	// Without ClientCAs (an apiserver that presents none yet) it serves
	// as before.
	assert.Equal(t, tls.NoClientCert, WebhookOptions{}.tlsConfig(certs.getCertificate).ClientAuth)
}
