//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/etcdpool"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/test/framework"
)

const poolNS = "etcd-pool"

// poolEtcd is a shared etcd the test runs as a provider would: TLS,
// client certificates, auth on with a certificate-only root user.
type poolEtcd struct {
	tlsEtcd
	root tls.Certificate
}

func startPoolEtcd(t testing.TB, c *framework.Cluster) poolEtcd {
	t.Helper()
	e := runTLSEtcd(t, c, poolNS, "etcd-pool")
	rootKP, err := e.CA.ClientCert("root")
	require.NoError(t, err)
	root, err := tls.X509KeyPair(rootKP.CertPEM, rootKP.KeyPEM)
	require.NoError(t, err)
	p := poolEtcd{tlsEtcd: e, root: root}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := p.client(t, c, root)
	_, err = cli.UserAddWithOptions(ctx, "root", "", &clientv3.UserAddOptions{NoPassword: true})
	require.NoError(t, err)
	_, err = cli.UserGrantRole(ctx, "root", "root")
	require.NoError(t, err)
	_, err = cli.AuthEnable(ctx)
	require.NoError(t, err)

	_, err = c.Client.CoreV1().Secrets(poolNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pool-credentials"},
		Data: map[string][]byte{etcdpool.KeyCACert: e.CA.CertPEM, etcdpool.KeyCAKey: e.CA.KeyPEM,
			etcdpool.KeyRootCert: rootKP.CertPEM, etcdpool.KeyRootKey: rootKP.KeyPEM},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return p
}

// client dials the pool from the host as whoever cert says. It names the
// Service's address, which the serving certificate holds (gRPC takes the
// TLS server name from the endpoint), and connects to the pod's.
func (p poolEtcd) client(t testing.TB, c *framework.Cluster, cert tls.Certificate) *clientv3.Client {
	t.Helper()
	pod, err := c.Client.CoreV1().Pods(p.NS).Get(context.Background(), "etcd", metav1.GetOptions{})
	require.NoError(t, err)
	podAddr := net.JoinHostPort(pod.Status.PodIP, "2379")
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(p.CA.CertPEM))
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{p.Endpoint},
		DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", podAddr)
		})},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// testEtcdPool: two tenants keep their state in one pool etcd, each under
// its own prefix as its own etcd user; neither can touch the other's keys;
// deleting one removes its keys, role and user and leaves the other
// working. managedEtcdKiB is a managed etcd's RSS measured earlier in the
// same run, the baseline of the memory a pooled tenant saves. It returns
// the numbers.
func testEtcdPool(t *testing.T, c *framework.Cluster, admin, k framework.Kubectl, node *framework.Node, kubectl string, managedEtcdKiB int) string {
	t.Helper()
	p := startPoolEtcd(t, c)
	root := p.client(t, c, p.root)
	poolRSS := func() int {
		id := admin.MustRun(t, "", "get", "pod", "etcd", "-n", p.NS, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
		pid, err := node.ContainerPID(id)
		require.NoError(t, err)
		kib, err := framework.RSSKiB(pid)
		require.NoError(t, err)
		return kib
	}
	rssEmpty := poolRSS()

	admin.MustRun(t, fmt.Sprintf(`apiVersion: capn.dev/v1alpha1
kind: NestedEtcdPool
metadata:
  name: shared
spec:
  endpoints: [%q]
  credentialsSecretRef: {namespace: %s, name: pool-credentials}
`, p.Endpoint, poolNS), "create", "-f", "-")
	framework.Eventually(t, time.Minute, "pool shared Available", func() (bool, string) {
		out := admin.MustRun(t, "", "get", "nestedetcdpool", "shared", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].message}`)
		return strings.HasPrefix(out, "True "), out
	})

	manifest := func(name string) string {
		return fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: %s\nspec:\n  dataPlane: {mode: None}\n  etcd: {pool: shared}\n", name)
	}
	// alice may edit NestedClusters in default, but a pool is the
	// provider's to hand out: without "use" on it the create is refused,
	// on the field, and nothing is stored.
	out := k.MustFail(t, manifest("pa"), "create", "-f", "-", "--as=alice")
	assert.Contains(t, out, "spec.etcd.pool")
	assert.Contains(t, out, `lacks permission "use" on nestedetcdpools.capn.dev "shared"`)
	k.MustFail(t, "", "get", "nc", "pa")
	// kubectl create clusterrole checks verbs against discovery, which
	// lists no "use": a manifest, as a provider would write it.
	admin.MustRun(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: use-pool-shared
rules:
- apiGroups: [capn.dev]
  resources: [nestedetcdpools]
  resourceNames: [shared]
  verbs: [use]
`, "apply", "-f", "-")
	admin.MustRun(t, "", "create", "clusterrolebinding", "alice-use-pool-shared", "--clusterrole=use-pool-shared", "--user=alice")
	framework.Eventually(t, 30*time.Second, "alice may use the pool", func() (bool, string) {
		r := k.Run(manifest("pa"), "create", "-f", "-", "--as=alice")
		return r.Err == nil, r.Stdout + r.Stderr
	})
	k.MustRun(t, manifest("pb"), "create", "-f", "-", "--as=alice")

	tenants := map[string]framework.Kubectl{}
	for _, name := range []string{"pa", "pb"} {
		framework.Eventually(t, 5*time.Minute, "NestedCluster "+name+" Ready=True", func() (bool, string) {
			r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.phase}`)
			return r.Err == nil && strings.HasPrefix(r.Stdout, "True "), r.Stdout + r.Stderr
		})
		tk := framework.Kubectl{Bin: kubectl, Kubeconfig: tenantKubeconfig(t, k, "", name, "alice")}
		useTenant(t, tk, "alice", v1alpha1.DataPlaneNone)
		tk.MustRun(t, "", "create", "configmap", "owner", "-n", "default", "--from-literal=tenant="+name)
		tenants[name] = tk
		// No etcd of capn's runs for a pooled tenant.
		ns := mgmtNamespace(t, admin, name)
		assert.Empty(t, strings.TrimSpace(admin.MustRun(t, "", "get", "statefulsets,pods", "-n", ns, "-l",
			v1alpha1.ComponentLabel+"="+v1alpha1.ComponentEtcd, "-o", "name")), "capn runs an etcd for pooled tenant %s", name)
	}
	rssTwo := poolRSS()
	assert.Contains(t, k.MustRun(t, "", "get", "nc", "pb", "-o", "wide"), "Pool/shared", "kubectl get -o wide names the pool")
	framework.Eventually(t, 2*time.Minute, "pool shared counts 2 tenants and holds a finalizer", func() (bool, string) {
		out := admin.MustRun(t, "", "get", "nestedetcdpool", "shared", "-o", "jsonpath={.status.tenants} {.metadata.finalizers}")
		return strings.HasPrefix(out, "2 ") && strings.Contains(out, v1alpha1.PoolFinalizer), out
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	uid := func(name string) string { return k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.metadata.uid}") }
	a, b := etcdpool.For(types.UID(uid("pa"))), etcdpool.For(types.UID(uid("pb")))
	// The tenants' objects are under their own prefixes.
	for name, tenant := range map[string]etcdpool.Tenant{"pa": a, "pb": b} {
		resp, err := root.Get(ctx, tenant.Prefix+"configmaps/default/owner")
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1, "%s's ConfigMap under %s", name, tenant.Prefix)
		assert.Contains(t, string(resp.Kvs[0].Value), name)
	}
	// Tenant a's own credential, as capn issued it to a's apiserver, gets
	// permission denied on b's prefix, for reads and for writes.
	sec, err := c.Client.CoreV1().Secrets(mgmtNamespace(t, admin, "pa")).Get(ctx, provisioner.SecretPoolEtcdClient, metav1.GetOptions{})
	require.NoError(t, err)
	aCert, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	asA := p.client(t, c, aCert)
	_, err = asA.Get(ctx, a.Prefix+"configmaps/default/owner")
	require.NoError(t, err, "a reads its own prefix")
	_, err = asA.Get(ctx, b.Prefix, clientv3.WithPrefix())
	assert.ErrorIs(t, err, rpctypes.ErrPermissionDenied, "a reads b's prefix")
	_, err = asA.Put(ctx, b.Prefix+"configmaps/default/owner", "a was here")
	assert.ErrorIs(t, err, rpctypes.ErrPermissionDenied, "a writes b's prefix")
	_, err = asA.Get(ctx, "/", clientv3.WithPrefix())
	assert.ErrorIs(t, err, rpctypes.ErrPermissionDenied, "a reads the whole keyspace")

	// Delete a: its keys, role and user go; b is untouched and usable.
	bKeys := countKeys(ctx, t, root, b.Prefix)
	k.MustRun(t, "", "delete", "nc", "pa", "--wait=false")
	framework.Eventually(t, 3*time.Minute, "NestedCluster pa gone", func() (bool, string) {
		r := k.Run("", "get", "nc", "pa", "-o", "name")
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
	})
	assert.Zero(t, countKeys(ctx, t, root, a.Prefix), "keys left under a's prefix")
	_, err = root.UserGet(ctx, a.User)
	assert.ErrorIs(t, err, rpctypes.ErrUserNotFound, "a's etcd user")
	_, err = root.RoleGet(ctx, a.Role)
	assert.ErrorIs(t, err, rpctypes.ErrRoleNotFound, "a's etcd role")
	assert.GreaterOrEqual(t, countKeys(ctx, t, root, b.Prefix), bKeys, "b's keys")
	assert.Equal(t, "pb", tenants["pb"].MustRun(t, "", "get", "configmap", "owner", "-n", "default", "-o", "jsonpath={.data.tenant}"))
	tenants["pb"].MustRun(t, "", "create", "configmap", "after-a", "-n", "default")

	// The pool is held while b uses it, and released after.
	admin.MustRun(t, "", "delete", "nestedetcdpool", "shared", "--wait=false")
	assert.Equal(t, "pb", tenants["pb"].MustRun(t, "", "get", "configmap", "owner", "-n", "default", "-o", "jsonpath={.data.tenant}"),
		"b works while its pool is being deleted")
	k.MustRun(t, "", "delete", "nc", "pb", "--wait=false")
	framework.Eventually(t, 3*time.Minute, "pool shared gone once its last tenant is", func() (bool, string) {
		r := admin.Run("", "get", "nestedetcdpool", "shared", "-o", "jsonpath={.status.tenants} {.metadata.finalizers}")
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
	})
	assert.Zero(t, countKeys(ctx, t, root, b.Prefix), "keys left under b's prefix")

	perTenant := float64(rssTwo-rssEmpty) / 2
	return fmt.Sprintf("pool etcd RSS %.0f MiB empty, %.0f MiB with 2 tenants: %.1f MiB per pooled tenant against a managed etcd's %.0f MiB (%.2fx)",
		float64(rssEmpty)/1024, float64(rssTwo)/1024, perTenant/1024, float64(managedEtcdKiB)/1024, perTenant/float64(managedEtcdKiB))
}

func countKeys(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Count
}
