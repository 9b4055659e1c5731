package kubelet

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	utilexec "k8s.io/client-go/util/exec"

	"capn.dev/capn/pkg/tenant/names"
)

var webHost = names.Host("shop", "web")

// unreachable is a management apiserver no test should reach.
func unreachable(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the management apiserver was called: %s %s", r.Method, r.URL)
		http.Error(w, "no", http.StatusTeapot)
	})
}

// countingManagement counts the calls it gets and refuses them all.
type countingManagement struct{ calls atomic.Int32 }

func (c *countingManagement) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c.calls.Add(1)
	http.Error(w, "no", http.StatusTeapot)
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	return do(t, c, http.MethodGet, u, nil)
}

func do(t *testing.T, c *http.Client, method, u string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t, unreachable(t), envOptions{})
	path := e.kubelet.URL + "/nothing-here"

	// The tenant apiserver's client gets past authentication (to a 404).
	resp, _ := get(t, e.client, path)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Another common name from the same CA: authenticated, not served.
	resp, body := get(t, e.clientWith(e.ca.client(t, "system:node:vnode-1")), path)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, "Forbidden\n", body, "no detail")

	// No certificate, or one of another CA: the handshake fails.
	for name, c := range map[string]*http.Client{
		"no certificate": e.clientWith(),
		"another CA":     e.clientWith(newTestCA(t, "other").client(t, kubeletCN)),
	} {
		_, err := c.Get(path)
		assert.Error(t, err, name)
	}
}

// Behind a server that only asks for a certificate, the handler still
// refuses a missing or unverified one.
func TestAuthenticationInHandler(t *testing.T) {
	for name, mode := range map[string]tls.ClientAuthType{
		"VerifyClientCertIfGiven": tls.VerifyClientCertIfGiven,
		"RequireAnyClientCert":    tls.RequireAnyClientCert,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, unreachable(t), envOptions{tls: func(ca *testCA) *tls.Config {
				if mode == tls.RequireAnyClientCert {
					// No CA list: a Go client sends a certificate only if
					// its issuer is on the list the server sends.
					return &tls.Config{ClientAuth: mode}
				}
				return &tls.Config{ClientAuth: mode, ClientCAs: ca.pool()}
			}})
			u := e.kubelet.URL + "/containerLogs/shop/web/app"
			if mode == tls.VerifyClientCertIfGiven {
				resp, body := get(t, e.clientWith(), u)
				assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
				assert.Equal(t, "Unauthorized\n", body)
			}
			// Unverified: another CA's certificate with the right name.
			if mode == tls.RequireAnyClientCert {
				resp, _ := get(t, e.clientWith(newTestCA(t, "other").client(t, kubeletCN)), u)
				assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	const otherUID = "11111111-2222-3333-4444-555555555555"
	forged := hostPod("shop", "web", tenantUID)
	forged.Annotations[names.TenantNameAnnotation] = "api"
	for _, tc := range []struct {
		name         string
		host         []*corev1.Pod
		method, path string
		header       http.Header
		code         int
	}{
		{name: "another kubelet endpoint", path: "/stats/summary", code: http.StatusNotFound},
		{name: "pods", path: "/pods", code: http.StatusNotFound},
		{name: "configz", path: "/configz", code: http.StatusNotFound},
		{name: "pprof", path: "/debug/pprof/heap", code: http.StatusNotFound},
		{name: "healthz", path: "/healthz", code: http.StatusNotFound},
		{name: "an unknown log parameter", path: "/containerLogs/shop/web/app?follow=true&insecureSkipTLSVerifyBackend=true", code: http.StatusBadRequest},
		{name: "an unknown exec parameter", method: "POST", path: "/exec/shop/web/app?command=ls&output=1&user=root", code: http.StatusBadRequest},
		{name: "a malformed query", path: "/containerLogs/shop/web/app?follow=%zz", code: http.StatusBadRequest},
		{name: "logs by POST", method: "POST", path: "/containerLogs/shop/web/app", code: http.StatusMethodNotAllowed},
		{name: "run by GET", path: "/run/shop/web/app?cmd=ls", code: http.StatusMethodNotAllowed},
		{name: "exec without an upgrade", method: "POST", path: "/exec/shop/web/app?command=ls&output=1", code: http.StatusBadRequest},
		{name: "a pod the tenant does not own", path: "/containerLogs/bank/vault/app", code: http.StatusNotFound},
		{name: "another uid in the path", method: "POST", path: "/run/shop/web/" + otherUID + "/app?cmd=ls", code: http.StatusNotFound},
		{name: "a host pod with the right name and another uid", host: []*corev1.Pod{hostPod("shop", "web", otherUID)}, path: "/containerLogs/shop/web/app", code: http.StatusNotFound},
		{name: "a host pod recording another identity", host: []*corev1.Pod{forged}, path: "/containerLogs/shop/web/app", code: http.StatusForbidden},
		{name: "a container the tenant pod does not have", path: "/containerLogs/shop/web/injected", code: http.StatusNotFound},
		{name: "an oversized URL", path: "/containerLogs/shop/web/app?tailLines=" + strings.Repeat("1", maxRequestURIBytes), code: http.StatusRequestURITooLong},
		{name: "oversized headers", path: "/containerLogs/shop/web/app", header: http.Header{"X-Pad": {strings.Repeat("a", maxHeaderBytes)}}, code: http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host
			if host == nil {
				host = []*corev1.Pod{hostPod("shop", "web", tenantUID), hostPod("bank", "vault", otherUID)}
			}
			m := &countingManagement{}
			e := newEnv(t, m, envOptions{host: host})
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			resp, body := do(t, e.client, method, e.kubelet.URL+tc.path, tc.header)
			assert.Equal(t, tc.code, resp.StatusCode, body)
			assert.NotContains(t, body, webHost)
			assert.NotContains(t, body, workloadNS)
			assert.Zero(t, m.calls.Load(), "refused before any replay")
		})
	}
}

func TestLogsFollowStreamsIncrementally(t *testing.T) {
	release := make(chan struct{})
	type seen struct {
		path  string
		query url.Values
		auth  string
	}
	got := make(chan seen, 1)
	management := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.Path, r.URL.Query(), r.Header.Get("Authorization")}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "first line\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "second line\n")
	})
	e := newEnv(t, management, envOptions{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	req, err := http.NewRequest(http.MethodGet, e.kubelet.URL+"/containerLogs/shop/web/app?follow=true&tailLines=5&timestamps=1", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tenant-user-token")
	type head struct {
		resp  *http.Response
		br    *bufio.Reader
		first string
		err   error
	}
	heads := make(chan head, 1)
	go func() {
		resp, err := e.client.Do(req)
		if err != nil {
			heads <- head{err: err}
			return
		}
		br := bufio.NewReader(resp.Body)
		line, err := br.ReadString('\n')
		heads <- head{resp, br, line, err}
	}()
	// The first line arrives while the management side still holds the
	// second: the stream is not buffered to its end.
	var h head
	select {
	case h = <-heads:
	case <-time.After(30 * time.Second):
		// Only a guard against hanging the run: a buffering relay never
		// answers while the management side holds the rest.
		t.Fatal("the first line did not arrive before the stream ended")
	}
	require.NoError(t, h.err)
	defer func() { _ = h.resp.Body.Close() }()
	require.Equal(t, http.StatusOK, h.resp.StatusCode)
	assert.Equal(t, "first line\n", h.first)

	s := <-got
	assert.Equal(t, "/api/v1/namespaces/"+workloadNS+"/pods/"+webHost+"/log", s.path)
	assert.Equal(t, url.Values{"container": {"app"}, "follow": {"true"}, "tailLines": {"5"}, "timestamps": {"true"}}, s.query)
	assert.Equal(t, "Bearer "+syncerToken, s.auth)

	close(release)
	rest, err := io.ReadAll(h.br)
	require.NoError(t, err)
	assert.Equal(t, "second line\n", string(rest))
}

func TestLogsErrorsInTenantTerms(t *testing.T) {
	status := func(code int32, reason metav1.StatusReason, msg string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(code))
			_ = json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
			})
		}
	}
	t.Run("a refusal keeps its code, named for the tenant pod", func(t *testing.T) {
		e := newEnv(t, status(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", "app", webHost)), envOptions{})
		resp, body := get(t, e.client, e.kubelet.URL+"/containerLogs/shop/web/app")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Equal(t, `container "app" in pod "web" is waiting to start: ContainerCreating`, body)
	})
	t.Run("the syncer refused is not the tenant's business", func(t *testing.T) {
		e := newEnv(t, status(http.StatusForbidden, metav1.StatusReasonForbidden,
			fmt.Sprintf(`pods %q is forbidden: User "system:serviceaccount:capn:capn-syncer" cannot get resource "pods/log" in the namespace %q`, webHost, workloadNS)), envOptions{})
		resp, body := get(t, e.client, e.kubelet.URL+"/containerLogs/shop/web/app")
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		assert.NotContains(t, body, "serviceaccount")
		assert.NotContains(t, body, workloadNS)
	})
}

func TestTooManySessions(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	management := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "line\n")
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-release
	})
	e := newEnv(t, management, envOptions{maxSessions: 1})
	defer close(release)

	resp, err := e.client.Get(e.kubelet.URL + "/containerLogs/shop/web/app?follow=true")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	<-started

	resp2, body := get(t, e.client, e.kubelet.URL+"/containerLogs/shop/web/app")
	assert.Equal(t, http.StatusTooManyRequests, resp2.StatusCode, body)
	assert.Equal(t, "1", resp2.Header.Get("Retry-After"))
}

// upgraded is what the fake management apiserver saw of an upgrade.
type upgraded struct {
	method, path string
	query        url.Values
	header       http.Header
}

// upgradingManagement answers every request with a 101, then echoes "pong:"
// and what the client sends first.
func upgradingManagement(t *testing.T, seen chan<- upgraded) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- upgraded{r.Method, r.URL.Path, r.URL.Query(), r.Header.Clone()}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if !assert.NoError(t, err) {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n")
		_ = brw.Flush()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(brw, buf); err != nil {
			return
		}
		_, _ = brw.WriteString("pong:" + string(buf))
		_ = brw.Flush()
	})
}

// upgrade opens a raw TLS connection to the kubelet API, sends an upgrade
// request with header, checks the 101, sends "ping" and returns what comes
// back.
func upgrade(t *testing.T, e *env, method, path string, header http.Header) string {
	t.Helper()
	conn, err := tls.Dial("tcp", e.kubelet.Listener.Addr().String(), e.clientTLS(e.ca.client(t, kubeletCN)))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	req, err := http.NewRequest(method, e.kubelet.URL+path, nil)
	require.NoError(t, err)
	req.Header = header.Clone()
	require.NoError(t, req.Write(conn))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	assert.Equal(t, "SPDY/3.1", resp.Header.Get("Upgrade"))
	_, err = conn.Write([]byte("ping"))
	require.NoError(t, err)
	got := make([]byte, len("pong:ping"))
	_, err = io.ReadFull(br, got)
	require.NoError(t, err)
	return string(got)
}

func spdyHeader() http.Header {
	return http.Header{
		"Connection":                {"Upgrade"},
		"Upgrade":                   {"SPDY/3.1"},
		"X-Stream-Protocol-Version": {"v4.channel.k8s.io", "v3.channel.k8s.io"},
	}
}

func TestExecUpgrade(t *testing.T) {
	seen := make(chan upgraded, 1)
	e := newEnv(t, upgradingManagement(t, seen), envOptions{})

	h := spdyHeader()
	h.Set("Authorization", "Bearer tenant-user-token")
	h.Set("Impersonate-User", "system:admin")
	h.Set("Impersonate-Group", "system:masters")
	h.Set("X-Remote-User", "system:admin")
	h.Set("X-Remote-Group", "system:masters")
	h.Set("Cookie", "session=x")
	got := upgrade(t, e, http.MethodPost, "/exec/shop/web/"+tenantUID+"/app?command=sh&command=-c&command=id&input=1&output=1&tty=1", h)
	assert.Equal(t, "pong:ping", got, "bytes flow both ways after the 101")

	s := <-seen
	assert.Equal(t, http.MethodPost, s.method)
	assert.Equal(t, "/api/v1/namespaces/"+workloadNS+"/pods/"+webHost+"/exec", s.path)
	assert.Equal(t, url.Values{"container": {"app"}, "command": {"sh", "-c", "id"}, "stdin": {"true"}, "stdout": {"true"}, "tty": {"true"}}, s.query)
	assert.Equal(t, "Bearer "+syncerToken, s.header.Get("Authorization"), "the syncer's credentials, not the caller's")
	for _, k := range []string{"Impersonate-User", "Impersonate-Group", "X-Remote-User", "X-Remote-Group", "Cookie"} {
		assert.Empty(t, s.header.Values(k), k)
	}
	assert.Equal(t, "SPDY/3.1", s.header.Get("Upgrade"))
	assert.Equal(t, []string{"v4.channel.k8s.io", "v3.channel.k8s.io"}, s.header.Values("X-Stream-Protocol-Version"))
}

func TestAttachAndPortForwardUpgrades(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		header             http.Header
		wantPath           string
		wantQuery          url.Values
	}{
		{
			name: "attach", method: http.MethodPost, path: "/attach/shop/web/sidecar?output=1&error=1", header: spdyHeader(),
			wantPath: "attach", wantQuery: url.Values{"container": {"sidecar"}, "stdout": {"true"}, "stderr": {"true"}},
		},
		{
			name: "port-forward over SPDY", method: http.MethodPost, path: "/portForward/shop/web/" + tenantUID,
			header:   http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}, "X-Stream-Protocol-Version": {"portforward.k8s.io"}},
			wantPath: "portforward", wantQuery: url.Values{},
		},
		{
			// A WebSocket's bearer-token subprotocol is dropped; the
			// channel protocols go through.
			name: "port-forward over a WebSocket", method: http.MethodGet, path: "/portForward/shop/web?port=80,8443",
			header: http.Header{
				"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Version": {"13"},
				"Sec-Websocket-Protocol": {"v4.channel.k8s.io, base64url.bearer.authorization.k8s.io.dG9rZW4"},
			},
			wantPath: "portforward", wantQuery: url.Values{"ports": {"80", "8443"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := make(chan upgraded, 1)
			e := newEnv(t, upgradingManagement(t, seen), envOptions{})
			assert.Equal(t, "pong:ping", upgrade(t, e, tc.method, tc.path, tc.header))
			s := <-seen
			assert.Equal(t, tc.method, s.method)
			assert.Equal(t, "/api/v1/namespaces/"+workloadNS+"/pods/"+webHost+"/"+tc.wantPath, s.path)
			assert.Equal(t, tc.wantQuery, s.query)
			assert.Equal(t, "Bearer "+syncerToken, s.header.Get("Authorization"))
			if p := tc.header.Get("Sec-Websocket-Protocol"); p != "" {
				assert.Equal(t, "v4.channel.k8s.io", s.header.Get("Sec-Websocket-Protocol"))
			}
		})
	}
}

// fakeRunner stands in for an exec through the management apiserver.
type fakeRunner struct {
	got       []string
	out       string
	err       error
	namespace string
	pod       string
}

func (f *fakeRunner) Run(_ context.Context, namespace, pod, container string, command []string) ([]byte, error) {
	f.namespace, f.pod = namespace, pod
	f.got = append([]string{container}, command...)
	return []byte(f.out), f.err
}

func TestRun(t *testing.T) {
	r := &fakeRunner{out: "total 0\n"}
	e := newEnv(t, unreachable(t), envOptions{runner: r})
	resp, body := do(t, e.client, http.MethodPost, e.kubelet.URL+"/run/shop/web/app?cmd="+url.QueryEscape("ls -l /tmp"), nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "total 0\n", body)
	assert.Equal(t, []string{"app", "ls", "-l", "/tmp"}, r.got)
	assert.Equal(t, workloadNS, r.namespace)
	assert.Equal(t, webHost, r.pod)

	r.err = utilexec.CodeExitError{Err: fmt.Errorf("command terminated with non-zero exit code"), Code: 2}
	resp, body = do(t, e.client, http.MethodPost, e.kubelet.URL+"/run/shop/web/app?cmd=false", nil)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, body, "exit code 2")

	r.err = apierrors.NewNotFound(podsResource, webHost)
	resp, body = do(t, e.client, http.MethodPost, e.kubelet.URL+"/run/shop/web/app?cmd=ls", nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.NotContains(t, body, webHost)
}

func TestForwardHeaders(t *testing.T) {
	in := http.Header{
		"Connection": {"Upgrade"}, "Upgrade": {"websocket"},
		"Sec-Websocket-Protocol": {"base64url.bearer.authorization.k8s.io.dG9rZW4", "v5.channel.k8s.io,v4.channel.k8s.io"},
		"Authorization":          {"Bearer x"}, "Impersonate-Uid": {"1"}, "Impersonate-Extra-Scopes": {"a"},
		"X-Remote-Extra-Foo": {"b"}, "X-Forwarded-For": {"10.0.0.1"}, "Origin": {"https://evil"},
	}
	assert.Equal(t, http.Header{
		"Connection": {"Upgrade"}, "Upgrade": {"websocket"},
		"Sec-Websocket-Protocol": {"v5.channel.k8s.io, v4.channel.k8s.io"},
	}, forwardHeaders(in))
}

func TestNewHandlerNeedsItsOptions(t *testing.T) {
	r := resolver(t, nil, nil)
	cfg := &rest.Config{Host: "https://management.example:6443"}
	_, err := NewHandler(Options{Management: cfg, Resolver: r, ClientCommonNames: []string{kubeletCN}})
	require.NoError(t, err)
	for name, o := range map[string]Options{
		"no management": {Resolver: r, ClientCommonNames: []string{kubeletCN}},
		"no name":       {Management: cfg, Resolver: r},
		"no resolver":   {Management: cfg, ClientCommonNames: []string{kubeletCN}},
	} {
		_, err := NewHandler(o)
		assert.Error(t, err, name)
	}
}
