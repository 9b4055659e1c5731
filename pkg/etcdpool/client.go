package etcdpool

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Secret keys of a pool's credentials Secret
// (NestedEtcdPool.spec.credentialsSecretRef).
const (
	KeyCACert   = "ca.crt"  // verifies the members; etcd trusts it for client certificates
	KeyCAKey    = "ca.key"  // signs each tenant's client certificate
	KeyRootCert = "tls.crt" // root's client certificate (CN root)
	KeyRootKey  = "tls.key"
)

// CredentialKeys are the keys a credentials Secret must have.
var CredentialKeys = []string{KeyCACert, KeyCAKey, KeyRootCert, KeyRootKey}

// dialTimeout bounds how long one unreachable pool holds a sync.
const dialTimeout = 5 * time.Second

// Dial connects to the pool at endpoints with a client certificate,
// verifying the members against caPEM. The caller closes the client.
func Dial(endpoints []string, caPEM, certPEM, keyPEM []byte) (*clientv3.Client, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the pool's ca.crt holds no PEM certificate")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the client certificate: %w", err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: dialTimeout,
		TLS:         &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		// capn logs through klog; etcd's client would log reconnects on
		// its own otherwise.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to %v: %w", endpoints, err)
	}
	return cli, nil
}

// Health is what capn reports of a pool.
type Health struct {
	// DBSize is the largest database size among the members that answered.
	DBSize int64
	// Unreachable lists the endpoints that did not answer.
	Unreachable []string
}

// Observe asks every member for its status, and the pool whether auth is
// on: without auth, certificates are not identities and tenants are not
// kept apart, so that is an error.
func Observe(ctx context.Context, cli *clientv3.Client) (Health, error) {
	var h Health
	auth, err := cli.AuthStatus(ctx)
	if err != nil {
		return h, fmt.Errorf("reading auth status: %w", err)
	}
	if !auth.Enabled {
		return h, errors.New("auth is not enabled: tenants would not be kept apart")
	}
	for _, ep := range cli.Endpoints() {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			h.Unreachable = append(h.Unreachable, ep)
			continue
		}
		h.DBSize = max(h.DBSize, st.DbSize)
	}
	return h, nil
}
