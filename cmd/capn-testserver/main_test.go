package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAPIServer answers SelfSubjectReview creations as the given user and
// records the Authorization header of each.
type fakeAPIServer struct {
	srv    *httptest.Server
	caFile string

	mu     sync.Mutex
	tokens []string
}

func newFakeAPIServer(t *testing.T, user authenticationv1.UserInfo) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		f.mu.Lock()
		f.tokens = append(f.tokens, r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(authenticationv1.SelfSubjectReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "SelfSubjectReview"},
			Status:   authenticationv1.SelfSubjectReviewStatus{UserInfo: user},
		})
	}))
	t.Cleanup(f.srv.Close)

	f.caFile = filepath.Join(t.TempDir(), "ca.crt")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	require.NoError(t, os.WriteFile(f.caFile, ca, 0o600))

	u, err := url.Parse(f.srv.URL)
	require.NoError(t, err)
	t.Setenv("KUBERNETES_SERVICE_HOST", u.Hostname())
	t.Setenv("KUBERNETES_SERVICE_PORT", u.Port())
	return f
}

func (f *fakeAPIServer) seenTokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tokens...)
}

func serveRoot(t *testing.T, h http.Handler) response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var resp response
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp), rec.Body.String())
	return resp
}

func TestServeReportsFileEnvAndWhoami(t *testing.T) {
	const user = "system:serviceaccount:default:default"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}
	api := newFakeAPIServer(t, authenticationv1.UserInfo{Username: user, Groups: groups})

	dir := t.TempDir()
	file := filepath.Join(dir, "message")
	require.NoError(t, os.WriteFile(file, []byte("hello from a ConfigMap\n"), 0o600))
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("token-1"), 0o600))
	t.Setenv("CAPN_TESTSERVER_GREETING", "hello from a Secret")

	h := newHandler(config{file: file, env: "CAPN_TESTSERVER_GREETING", tokenFile: token, caFile: api.caFile})

	resp := serveRoot(t, h)
	assert.Equal(t, response{
		File:   "hello from a ConfigMap\n",
		Env:    "hello from a Secret",
		Whoami: user,
		Groups: groups,
	}, resp)

	// The kubelet rewrites a projected token in place; the next request
	// must present the new one, not a cached copy.
	require.NoError(t, os.WriteFile(token, []byte("token-2"), 0o600))
	resp = serveRoot(t, h)
	assert.Equal(t, user, resp.Whoami)
	assert.Empty(t, resp.Error)
	assert.Equal(t, []string{"Bearer token-1", "Bearer token-2"}, api.seenTokens())
}

func TestServeMissingFileAndFailedWhoami(t *testing.T) {
	// An apiserver that refuses the token: the error is reported, the other
	// fields still are.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status:   metav1.StatusFailure, Reason: metav1.StatusReasonUnauthorized, Code: http.StatusUnauthorized, Message: "Unauthorized",
		})
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("bad"), 0o600))
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	t.Setenv("KUBERNETES_SERVICE_HOST", u.Hostname())
	t.Setenv("KUBERNETES_SERVICE_PORT", u.Port())
	t.Setenv("CAPN_TESTSERVER_GREETING", "hi")

	h := newHandler(config{file: filepath.Join(dir, "absent"), env: "CAPN_TESTSERVER_GREETING", tokenFile: token, caFile: caFile})
	resp := serveRoot(t, h)
	assert.Equal(t, "", resp.File)
	assert.Equal(t, "hi", resp.Env)
	assert.Equal(t, "", resp.Whoami)
	assert.Equal(t, []string{}, resp.Groups)
	assert.Contains(t, resp.Error, "Unauthorized")
}

func TestServeNotInCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	resp := serveRoot(t, newHandler(config{file: filepath.Join(t.TempDir(), "absent"), env: "CAPN_TESTSERVER_UNSET"}))
	assert.Contains(t, resp.Error, "KUBERNETES_SERVICE_HOST")
}

func TestHealthzAndUnknownPaths(t *testing.T) {
	h := newHandler(config{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok", rec.Body.String())

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/other", nil))
	assert.Equal(t, http.StatusNotFound, rec.Code)
}

func TestGetRetriesUntil200(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"whoami":"x"}`))
	}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, get(ctx, srv.URL, &out))
	assert.Equal(t, `{"whoami":"x"}`, out.String())
	assert.Equal(t, int32(3), calls.Load())
}

func TestGetRetriesConnectionErrors(t *testing.T) {
	// Reserve an address, close it, and only start serving there after get
	// has begun: the first attempts are refused connections.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("up"))
	}))
	t.Cleanup(srv.Close)
	time.AfterFunc(1500*time.Millisecond, func() {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("re-listening on %s: %v", addr, err)
			return
		}
		srv.Listener = l
		srv.Start()
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, get(ctx, "http://"+addr+"/", &out))
	assert.Equal(t, "up", out.String())
}

func TestGetGivesUpAtDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "never", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	err := get(ctx, srv.URL, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "503")
	assert.Empty(t, out.String())
}

type fakeResolver struct {
	answers []error // one per call; nil resolves to 10.0.0.1
	calls   int
}

func (f *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	err := f.answers[min(f.calls, len(f.answers)-1)]
	f.calls++
	if err != nil {
		return nil, err
	}
	return []string{"10.0.0.1"}, nil
}

func TestLookup(t *testing.T) {
	notFound := &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}
	timeout := &net.DNSError{Err: "i/o timeout", Name: "x", IsTimeout: true}
	ctx := context.Background()

	var out strings.Builder
	r := &fakeResolver{answers: []error{timeout, nil}}
	require.NoError(t, lookup(ctx, r, "web", false, &out))
	assert.Equal(t, 2, r.calls, "retried the timeout")
	assert.Contains(t, out.String(), "web 10.0.0.1")

	out.Reset()
	r = &fakeResolver{answers: []error{notFound}}
	require.NoError(t, lookup(ctx, r, "example.com", true, &out))
	assert.Contains(t, out.String(), "example.com NXDOMAIN")

	// A timeout is not NXDOMAIN: the lookup gives up at the deadline.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	err := lookup(short, &fakeResolver{answers: []error{timeout}}, "example.com", true, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "i/o timeout")

	short2, cancel2 := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel2()
	err = lookup(short2, &fakeResolver{answers: []error{nil}}, "example.com", true, &out)
	require.ErrorContains(t, err, "want NXDOMAIN")
}

func TestWriteIfAbsentKeepsTheFirstValue(t *testing.T) {
	p := filepath.Join(t.TempDir(), "id")
	require.NoError(t, writeIfAbsent(p, "db-0"))
	require.NoError(t, writeIfAbsent(p, "db-0-replacement"))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "db-0", string(b))
}
