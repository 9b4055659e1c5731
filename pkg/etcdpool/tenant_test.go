package etcdpool

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"capn.dev/capn/pkg/provisioner/pki"
)

// pool is a real etcd as a shared pool runs one: TLS with client
// certificates required, and authentication on, so a certificate's CN is
// its user.
type pool struct {
	t      *testing.T
	ca     *pki.CA
	dir    string
	client string
}

func startPool(t *testing.T) *pool {
	t.Helper()
	now := time.Now()
	cas, err := pki.GenerateCAs(now, "pool")
	require.NoError(t, err)
	p := &pool{t: t, ca: cas.Etcd, dir: t.TempDir()}
	serving, err := pki.Issue(p.ca, pki.LeafSpec{CommonName: "etcd", IPAddresses: []string{"127.0.0.1"}, Usage: pki.UsageServer}, now)
	require.NoError(t, err)
	write := func(name string, data []byte) string {
		path := filepath.Join(p.dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir, cfg.LogLevel = "pool", filepath.Join(p.dir, "data"), "error"
	client, peer := url.URL{Scheme: "https", Host: "127.0.0.1:0"}, url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ListenMetricsUrls = nil
	cfg.ClientTLSInfo.CertFile = write("server.crt", serving.CertPEM)
	cfg.ClientTLSInfo.KeyFile = write("server.key", serving.KeyPEM)
	cfg.ClientTLSInfo.TrustedCAFile = write("ca.crt", p.ca.CertPEM)
	cfg.ClientTLSInfo.ClientCertAuth = true
	e, err := embed.StartEtcd(cfg)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("pool etcd not ready within a minute")
	}
	p.client = "https://" + e.Clients[0].Addr().String()

	// The pool's root: what the provider's root credential is.
	root := p.as("root")
	_, err = root.UserAddWithOptions(context.Background(), "root", "", &clientv3.UserAddOptions{NoPassword: true})
	require.NoError(t, err)
	_, err = root.UserGrantRole(context.Background(), "root", "root")
	require.NoError(t, err)
	_, err = root.AuthEnable(context.Background())
	require.NoError(t, err)
	return p
}

// as is a client authenticating with a certificate whose CN is user.
func (p *pool) as(user string) *clientv3.Client {
	p.t.Helper()
	kp, err := pki.Issue(p.ca, pki.LeafSpec{CommonName: user, Usage: pki.UsageClient}, time.Now())
	require.NoError(p.t, err)
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	require.NoError(p.t, err)
	roots := x509.NewCertPool()
	require.True(p.t, roots.AppendCertsFromPEM(p.ca.CertPEM))
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{p.client}, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}})
	require.NoError(p.t, err)
	p.t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Tenant A's credential reads and writes its own prefix and nothing else:
// not B's keys, not a key that only starts like its prefix, not the
// pool's users. Removing A takes its role, keys and user, and leaves B
// as it was.
func TestTenantsAreIsolated(t *testing.T) {
	p := startPool(t)
	ctx := context.Background()
	root := p.as("root")
	a, b := For("aaaa-1111"), For("bbbb-2222")
	require.NoError(t, Grant(ctx, root, a))
	require.NoError(t, Grant(ctx, root, b))
	require.NoError(t, Grant(ctx, root, a), "Grant is idempotent")

	ca, cb := p.as(a.User), p.as(b.User)
	_, err := ca.Put(ctx, a.Prefix+"registry/pods/x", "a")
	require.NoError(t, err)
	_, err = cb.Put(ctx, b.Prefix+"registry/pods/y", "b")
	require.NoError(t, err)
	got, err := ca.Get(ctx, a.Prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.Count)

	denied := func(what string, err error) {
		t.Helper()
		assert.ErrorIs(t, err, rpctypes.ErrPermissionDenied, what)
	}
	_, err = ca.Get(ctx, b.Prefix, clientv3.WithPrefix())
	denied("A reads B's prefix", err)
	_, err = ca.Get(ctx, b.Prefix+"registry/pods/y")
	denied("A reads B's key", err)
	_, err = ca.Put(ctx, b.Prefix+"registry/pods/z", "a")
	denied("A writes under B's prefix", err)
	_, err = ca.Delete(ctx, b.Prefix, clientv3.WithPrefix())
	denied("A deletes B's keys", err)
	_, err = ca.Put(ctx, "/aaaa-1111x/registry", "a")
	denied("A writes a key that only starts like its prefix", err)
	_, err = ca.Get(ctx, "/", clientv3.WithPrefix())
	denied("A lists the whole keyspace", err)
	_, err = ca.UserList(ctx)
	denied("A lists the pool's users", err)

	require.NoError(t, Remove(ctx, root, a))
	require.NoError(t, Remove(ctx, root, a), "Remove is idempotent")
	left, err := root.Get(ctx, a.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	assert.Zero(t, left.Count, "A's keys are gone")
	_, err = root.UserGet(ctx, a.User)
	assert.ErrorIs(t, err, rpctypes.ErrUserNotFound)
	_, err = root.RoleGet(ctx, a.Role)
	assert.ErrorIs(t, err, rpctypes.ErrRoleNotFound)

	kept, err := cb.Get(ctx, b.Prefix+"registry/pods/y")
	require.NoError(t, err, "B still works")
	require.Len(t, kept.Kvs, 1)
	assert.Equal(t, "b", string(kept.Kvs[0].Value))
}

// Dial and Observe as capn uses them: root's certificate in PEM, the
// pool's database size read from every member, and a pool without auth
// refused (its certificates would identify nobody).
func TestObserve(t *testing.T) {
	p := startPool(t)
	kp, err := pki.Issue(p.ca, pki.LeafSpec{CommonName: "root", Usage: pki.UsageClient}, time.Now())
	require.NoError(t, err)
	cli, err := Dial([]string{p.client}, p.ca.CertPEM, kp.CertPEM, kp.KeyPEM)
	require.NoError(t, err)
	defer func() { _ = cli.Close() }()
	ctx := context.Background()
	h, err := Observe(ctx, cli)
	require.NoError(t, err)
	assert.Positive(t, h.DBSize)
	assert.Empty(t, h.Unreachable)

	_, err = cli.AuthDisable(ctx)
	require.NoError(t, err)
	_, err = Observe(ctx, cli)
	assert.ErrorContains(t, err, "auth is not enabled")

	_, err = Dial([]string{p.client}, []byte("not PEM"), kp.CertPEM, kp.KeyPEM)
	assert.ErrorContains(t, err, "no PEM certificate")
}
