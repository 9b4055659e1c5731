package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// healthPaths may be read without credentials: probes carry none, and they
// reveal nothing about tenants.
var healthPaths = []string{"/healthz", "/livez", "/readyz"}

// AdminUser is the identity of the standalone admin kubeconfig.
const AdminUser = "capn-admin"

func isHealthPath(p string) bool {
	for _, h := range healthPaths {
		if p == h || strings.HasPrefix(p, h+"/") {
			return true
		}
	}
	return false
}

// rejectAnonymous turns an anonymous result into "not authenticated" (401)
// outside the health endpoints.
func rejectAnonymous(inner authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := inner.AuthenticateRequest(req)
		if ok && resp.User.GetName() == user.Anonymous && !isHealthPath(req.URL.Path) {
			return nil, false, nil
		}
		return resp, ok, err
	})
}

// frontProxyCAReady fails /readyz until the front-proxy client CA is
// loaded. The delegated authenticator reads it from the ConfigMap
// kube-system/extension-apiserver-authentication through an informer that
// starts with the server, and until that informer syncs it verifies no
// front-proxy certificate: the aggregator's requests, identity headers and
// all, are then anonymous, and capn answers them 401. The HA e2e saw this on
// a replica that had just become ready (a user's GET failed). Not ready
// keeps the replica out of its Service's endpoints, so the aggregator sends
// it nothing until it can authenticate.
func frontProxyCAReady(ca dynamiccertificates.CAContentProvider) healthz.HealthChecker {
	return healthz.NamedCheck("front-proxy-ca", func(*http.Request) error {
		if _, ok := ca.VerifyOptions(); !ok {
			return errors.New("the front-proxy client CA (requestheader-client-ca-file of kube-system/extension-apiserver-authentication) is not loaded yet")
		}
		return nil
	})
}

func newAdminToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating admin token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// applyStandaloneAuth authenticates the admin token (and anonymous only on
// health paths) and authorizes system:masters only. Everything else is 401
// or 403.
func applyStandaloneAuth(cfg *genericapiserver.Config, token string) error {
	tokens := tokenfile.New(map[string]*user.DefaultInfo{
		token: {Name: AdminUser, Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}},
	})
	anon := anonymous.NewAuthenticator([]apiserverconfig.AnonymousAuthCondition{})
	cfg.Authentication.Authenticator = union.New(
		bearertoken.New(tokens),
		rejectAnonymous(anon),
	)
	healthz, err := path.NewAuthorizer(healthPaths)
	if err != nil {
		return err
	}
	cfg.Authorization.Authorizer, err = authzunion.New(
		authzunion.NamedAuthorizer{AuthorizerName: "health-paths", Authorizer: healthz},
		authzunion.NamedAuthorizer{AuthorizerName: "system-masters", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)},
	)
	return err
}

// writeAdminKubeconfig writes a kubeconfig that trusts the serving cert and
// carries the admin token, readable by the owner only.
func writeAdminKubeconfig(file string, serving *genericapiserver.SecureServingInfo, port int, token string) error {
	caPEM, _ := serving.Cert.CurrentCertKeyContent()
	server := "https://127.0.0.1:" + strconv.Itoa(port)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["capn"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["capn"] = &clientcmdapi.Context{Cluster: "capn", AuthInfo: AdminUser, Namespace: "default"}
	kc.CurrentContext = "capn"
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("creating directory for admin kubeconfig: %w", err)
	}
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		return fmt.Errorf("writing admin kubeconfig: %w", err)
	}
	return os.Chmod(file, 0o600)
}
