package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes/fake"
	certutil "k8s.io/client-go/util/cert"
)

func fixedUser(name string) authenticator.Request {
	return authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
	})
}

func TestRejectAnonymous(t *testing.T) {
	cases := []struct {
		user, path string
		wantOK     bool
	}{
		{user.Anonymous, "/apis/capn.dev/v1alpha1/nestedclusters", false},
		{user.Anonymous, "/apis", false},
		{user.Anonymous, "/healthzfoo", false},
		{user.Anonymous, "/readyz", true},
		{user.Anonymous, "/readyz/etcd", true},
		{user.Anonymous, "/livez", true},
		{user.Anonymous, "/healthz", true},
		{"alice", "/apis", true},
	}
	for _, c := range cases {
		resp, ok, err := rejectAnonymous(fixedUser(c.user)).AuthenticateRequest(httptest.NewRequest(http.MethodGet, c.path, nil))
		if err != nil || ok != c.wantOK {
			t.Errorf("%s %s: ok=%v err=%v, want ok=%v", c.user, c.path, ok, err, c.wantOK)
		}
		if ok && resp.User.GetName() != c.user {
			t.Errorf("%s %s: user changed to %q", c.user, c.path, resp.User.GetName())
		}
	}
}

func TestStandaloneAuth(t *testing.T) {
	cfg := &genericapiserver.Config{}
	if err := applyStandaloneAuth(cfg, "s3cret"); err != nil {
		t.Fatal(err)
	}
	authn := func(header, path string) (string, bool) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, ok, _ := cfg.Authentication.Authenticator.AuthenticateRequest(req)
		if !ok {
			return "", false
		}
		return resp.User.GetName(), true
	}
	if name, ok := authn("Bearer s3cret", "/apis"); !ok || name != AdminUser {
		t.Errorf("admin token: name=%q ok=%v", name, ok)
	}
	if _, ok := authn("Bearer wrong", "/apis"); ok {
		t.Error("wrong token authenticated")
	}
	if _, ok := authn("", "/apis"); ok {
		t.Error("no credentials authenticated outside health paths")
	}
	if name, ok := authn("", "/readyz"); !ok || name != user.Anonymous {
		t.Errorf("anonymous /readyz: name=%q ok=%v", name, ok)
	}

	authz := func(u user.Info, path string) authorizer.Decision {
		d, _, _ := cfg.Authorization.Authorizer.Authorize(t.Context(), authorizer.AttributesRecord{User: u, Path: path})
		return d
	}
	admin := &user.DefaultInfo{Name: AdminUser, Groups: []string{user.SystemPrivilegedGroup}}
	other := &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	if authz(admin, "/apis") != authorizer.DecisionAllow {
		t.Error("admin not allowed")
	}
	if authz(other, "/apis") == authorizer.DecisionAllow {
		t.Error("non-admin allowed")
	}
	if authz(&user.DefaultInfo{Name: user.Anonymous}, "/readyz") != authorizer.DecisionAllow {
		t.Error("anonymous /readyz not allowed")
	}
}

func TestOptionsValidate(t *testing.T) {
	o := NewOptions(nil, nil)
	o.Standalone = true
	o.Recommended.SecureServing.BindPort = 0
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err == nil {
		t.Error("standalone with --secure-port=0 accepted")
	}
	o.Recommended.SecureServing.BindPort = 8443
	o.EmbeddedEtcdDataDir = ""
	if err := o.Validate(); err == nil {
		t.Error("embedded etcd without a data dir accepted")
	}
	o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{"https://127.0.0.1:2379"}
	if o.UseEmbeddedEtcd() {
		t.Error("--etcd-servers set but embedded etcd still selected")
	}
	if err := o.Validate(); err != nil {
		t.Errorf("external etcd, standalone: %v", err)
	}
	if o.Recommended.Authentication != nil || o.Recommended.CoreAPI != nil {
		t.Error("standalone kept options that need a core kube-apiserver")
	}
}

// The upstream ConfigMap CA controller that holds the front-proxy CA loads
// nothing in RunOnce (its lister is empty until its informer runs), which
// is the window frontProxyCAReady keeps capn unready through.
func TestFrontProxyCAReady(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "extension-apiserver-authentication"},
		Data:       map[string]string{"requestheader-client-ca-file": string(testCAPEM(t))},
	}
	fromConfigMap, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", cm.Namespace, cm.Name,
		"requestheader-client-ca-file", fake.NewClientset(cm))
	require.NoError(t, err)
	require.NoError(t, fromConfigMap.RunOnce(context.Background()))
	err = frontProxyCAReady(fromConfigMap).Check(nil)
	require.Error(t, err, "the CA is not loaded before the informer runs")
	assert.Contains(t, err.Error(), "not loaded yet")

	loaded, err := dynamiccertificates.NewStaticCAContent("front-proxy", testCAPEM(t))
	require.NoError(t, err)
	assert.NoError(t, frontProxyCAReady(loaded).Check(nil))
	assert.Equal(t, "front-proxy-ca", frontProxyCAReady(loaded).Name())
}

func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "front-proxy-ca"}, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
}
