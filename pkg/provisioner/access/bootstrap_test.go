package access

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/provisioner/pki"
)

// hostileTenant serves as a tenant apiserver whose every answer is h's,
// with a serving certificate from the tenant's own CA, as capn would see a
// tenant running a custom kube-apiserver image.
func hostileTenant(t *testing.T, h http.HandlerFunc) (*httptest.Server, *pki.CA) {
	t.Helper()
	now := time.Now()
	cas, err := pki.GenerateCAs(now, "team-a/evil")
	require.NoError(t, err)
	kp, err := pki.Issue(cas.Cluster, pki.LeafSpec{CommonName: "kube-apiserver", IPAddresses: []string{"127.0.0.1"}, Usage: pki.UsageServer}, now)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, cas.Cluster
}

func bootstrapAgainst(t *testing.T, srv *httptest.Server, ca *pki.CA) error {
	t.Helper()
	c, err := BootstrapClient(srv.URL, ca, time.Now())
	require.NoError(t, err)
	_, err = Bootstrap(context.Background(), c)
	return err
}

// Finding: a huge body OOM-killed capn. Reading stops at 1 MiB, with an
// error, however much the tenant sends.
func TestBootstrapBoundsTenantResponses(t *testing.T) {
	var written atomic.Int64
	chunk := []byte(`{"kind":"ClusterRoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"` + strings.Repeat("x", 64<<10))
	for name, chunked := range map[string]bool{"content-length": false, "chunked": true} {
		t.Run(name, func(t *testing.T) {
			written.Store(0)
			srv, ca := hostileTenant(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !chunked {
					w.Header().Set("Content-Length", "1073741824")
				}
				for range 16 << 10 { // up to 1 GiB
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
			err := bootstrapAgainst(t, srv, ca)
			require.ErrorIs(t, err, ErrTenantResponseTooLarge)
			assert.Equal(t, "the tenant apiserver's response exceeded 1 MiB", DescribeTenantError(err))
		})
	}
}

// Finding: the client followed tenant redirects to internal services. A
// 3xx is an answer, never followed, and its text is not repeated.
func TestBootstrapFollowsNoRedirects(t *testing.T) {
	var internalHits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		_, _ = w.Write([]byte("secret internal page"))
	}))
	t.Cleanup(internal.Close)
	srv, ca := hostileTenant(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/latest/meta-data", http.StatusFound)
	})
	err := bootstrapAgainst(t, srv, ca)
	require.Error(t, err)
	assert.Zero(t, internalHits.Load(), "capn followed the tenant's redirect")
	desc := DescribeTenantError(err)
	assert.Equal(t, "the tenant apiserver answered HTTP 302", desc)
	assert.NotContains(t, desc, internal.URL)
}

// Finding: a slow tenant held a worker for 15 s. Each request gives up
// after TenantRequestTimeout.
func TestBootstrapTimesOut(t *testing.T) {
	defer func(d time.Duration) { TenantRequestTimeout = d }(TenantRequestTimeout)
	TenantRequestTimeout = 200 * time.Millisecond
	release := make(chan struct{})
	srv, ca := hostileTenant(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	err := bootstrapAgainst(t, srv, ca)
	require.Error(t, err)
	assert.Equal(t, "the tenant apiserver did not answer within 200ms", DescribeTenantError(err))
}

func TestDescribeTenantErrorNeverQuotesTheTenant(t *testing.T) {
	srv, ca := hostileTenant(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"click http://phish.example","reason":"Forbidden","code":403}`))
	})
	err := bootstrapAgainst(t, srv, ca)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "phish", "the raw error does carry the tenant's text")
	assert.Equal(t, "the tenant apiserver answered HTTP 403", DescribeTenantError(err))
}
