package controller

import (
	listers "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"k8s.io/apimachinery/pkg/types"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/etcdpool"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// etcdAccess reaches etcd for every loop: a NestedEtcdPool as root
// (membership, pool health) and a tenant's etcd as its apiserver does
// (tenantetcd.go: restores and backups).
type etcdAccess struct {
	*env
	// pools lists NestedEtcdPools (nil: none served).
	pools listers.NestedEtcdPoolLister
}

// poolMembership grants pooled clusters their pool user and keys and
// takes them back on deletion.
type poolMembership struct {
	*env
	*etcdAccess
	// poolGrants maps a pooled cluster's UID to the pool credentials it
	// was granted with.
	mu         sync.Mutex
	poolGrants map[types.UID]string
}

// poolCredentials is a NestedEtcdPool with its credentials Secret read.
type poolCredentials struct {
	pool *v1alpha1.NestedEtcdPool
	ca   *pki.CA
	data map[string][]byte
	// hash identifies the pool's endpoints and credentials: a change
	// grants again and reissues nothing that is still valid.
	hash string
}

// readPool returns the pool name refers to and its credentials, or an
// error that tells the provider what to fix.
func (c *etcdAccess) readPool(ctx context.Context, name string) (*poolCredentials, error) {
	if c.pools == nil {
		return nil, fmt.Errorf("NestedEtcdPool %q: this capn serves no pools", name)
	}
	pool, err := c.pools.Get(name)
	if err != nil {
		return nil, fmt.Errorf("NestedEtcdPool %q: %w", name, err)
	}
	ref := pool.Spec.CredentialsSecretRef
	live, err := c.mgmt.ReadSecret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("NestedEtcdPool %q: reading Secret %s/%s: %w", name, ref.Namespace, ref.Name, err)
	}
	sum := sha256.New()
	for _, ep := range pool.Spec.Endpoints {
		sum.Write([]byte(ep + "\x00"))
	}
	for _, k := range etcdpool.CredentialKeys {
		if len(live.Data[k]) == 0 {
			return nil, fmt.Errorf("NestedEtcdPool %q: Secret %s/%s has no key %q", name, ref.Namespace, ref.Name, k)
		}
		sum.Write([]byte(k + "\x00"))
		sum.Write(live.Data[k])
	}
	ca, err := pki.ParseCA(live.Data[etcdpool.KeyCACert], live.Data[etcdpool.KeyCAKey])
	if err != nil {
		return nil, fmt.Errorf("NestedEtcdPool %q: Secret %s/%s: %w", name, ref.Namespace, ref.Name, err)
	}
	return &poolCredentials{pool: pool, ca: ca, data: live.Data, hash: hex.EncodeToString(sum.Sum(nil)[:16])}, nil
}

func (p *poolCredentials) dial() (*clientv3.Client, error) {
	return etcdpool.Dial(p.pool.Spec.Endpoints, p.data[etcdpool.KeyCACert], p.data[etcdpool.KeyRootCert], p.data[etcdpool.KeyRootKey])
}

// ensureEtcdPool gives a cluster with spec.etcd.pool its place in the
// pool before its apiserver starts: its etcd user and role
// (etcdpool.Grant, once per pool credentials and capn run), and a client
// certificate for that user, signed by the pool's CA, in the management
// namespace. It returns what the apiserver builder needs and a hash that
// rolls the apiserver when the certificate or the pool changes; nil
// without a pool.
func (c *poolMembership) ensureEtcdPool(ctx context.Context, nc *v1alpha1.NestedCluster, target builders.Params) (*builders.EtcdPool, string, error) {
	ns := target.Namespace
	name := nc.Spec.Etcd.Pool
	if name == "" {
		return nil, "", nil
	}
	p, err := c.readPool(ctx, name)
	if err != nil {
		return nil, "", c.poolError(ctx, name, err)
	}
	tenant := etcdpool.For(nc.UID)
	c.mu.Lock()
	granted := c.poolGrants[nc.UID] == p.hash
	c.mu.Unlock()
	if !granted {
		if err := c.asRoot(ctx, p, func(cli *clientv3.Client) error { return etcdpool.Grant(ctx, cli, tenant) }); err != nil {
			return nil, "", err
		}
		c.mu.Lock()
		c.poolGrants[nc.UID] = p.hash
		c.mu.Unlock()
		klog.FromContext(ctx).Info("Granted the cluster its etcd user in the pool", "pool", name, "user", tenant.User, "prefix", tenant.Prefix)
	}
	data, err := c.poolClientCert(ctx, nc, ns, p, tenant)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(append(append([]byte{}, data[corev1.TLSCertKey]...), data[corev1.ServiceAccountRootCAKey]...))
	return &builders.EtcdPool{Endpoints: p.pool.Spec.Endpoints, Prefix: tenant.Prefix}, hex.EncodeToString(sum[:8]), nil
}

// poolClientCert keeps the cluster's pool client certificate: issued again
// only when missing, near expiry, for another user, or not signed by the
// pool's current CA (the provider rotated it).
func (c *poolMembership) poolClientCert(ctx context.Context, nc *v1alpha1.NestedCluster, ns string, p *poolCredentials, t etcdpool.Tenant) (map[string][]byte, error) {
	proto := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.SecretPoolEtcdClient}}
	live, err := c.mgmt.Get(ctx, proto)
	switch {
	case err == nil:
		cur := live.(*corev1.Secret).Data
		if c.poolCertFresh(cur, p, t) {
			return cur, nil
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("getting secret %s: %w", proto.Name, err)
	}
	kp, err := pki.Issue(p.ca, pki.LeafSpec{CommonName: t.User, Usage: pki.UsageClient}, c.now())
	if err != nil {
		return nil, fmt.Errorf("issuing the pool client certificate: %w", err)
	}
	data := map[string][]byte{
		corev1.ServiceAccountRootCAKey: p.data[etcdpool.KeyCACert],
		corev1.TLSCertKey:              kp.CertPEM,
		corev1.TLSPrivateKeyKey:        kp.KeyPEM,
	}
	if _, err := c.mgmt.Apply(ctx, FieldManager, ownedSecret(nc, ns, proto.Name, data)); err != nil {
		return nil, fmt.Errorf("applying secret %s: %w", proto.Name, err)
	}
	c.recorder.Eventf(nc, corev1.EventTypeNormal, "EtcdPoolCertificateIssued",
		"issued the client certificate of etcd user %s in pool %s", t.User, p.pool.Name)
	return data, nil
}

func (c *poolMembership) poolCertFresh(cur map[string][]byte, p *poolCredentials, t etcdpool.Tenant) bool {
	if len(cur[corev1.TLSPrivateKeyKey]) == 0 || string(cur[corev1.ServiceAccountRootCAKey]) != string(p.data[etcdpool.KeyCACert]) {
		return false
	}
	block, _ := pem.Decode(cur[corev1.TLSCertKey])
	if block == nil {
		return false
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil || crt.Subject.CommonName != t.User || crt.CheckSignatureFrom(p.ca.Cert) != nil {
		return false
	}
	renew, err := pki.NeedsRenewal(cur[corev1.TLSCertKey], c.now(), c.cfg.CertRenewalThreshold)
	return err == nil && !renew
}

// releaseEtcdPool takes a deleted cluster out of its pool (etcdpool.Remove:
// role, keys, user), before its namespace goes. A pool that no longer
// exists has nothing left to remove; an unreachable one keeps the
// finalizer, so nothing of the tenant's stays behind unnoticed.
func (c *poolMembership) releaseEtcdPool(ctx context.Context, nc *v1alpha1.NestedCluster) error {
	name := nc.Spec.Etcd.Pool
	if name == "" {
		return nil
	}
	if c.pools != nil {
		if _, err := c.pools.Get(name); apierrors.IsNotFound(err) {
			c.recorder.Eventf(nc, corev1.EventTypeWarning, "EtcdPoolGone",
				"NestedEtcdPool %s no longer exists: nothing of the cluster's is left to remove from it", name)
			return nil
		}
	}
	p, err := c.readPool(ctx, name)
	if err != nil {
		return c.poolError(ctx, name, err)
	}
	t := etcdpool.For(nc.UID)
	if err := c.asRoot(ctx, p, func(cli *clientv3.Client) error { return etcdpool.Remove(ctx, cli, t) }); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.poolGrants, nc.UID)
	c.mu.Unlock()
	klog.FromContext(ctx).Info("Removed the cluster from its etcd pool", "pool", name, "user", t.User, "prefix", t.Prefix)
	return nil
}

// asRoot runs fn with a root client of pool p.
func (c *etcdAccess) asRoot(ctx context.Context, p *poolCredentials, fn func(*clientv3.Client) error) error {
	cli, err := p.dial()
	if err == nil {
		err = fn(cli)
		_ = cli.Close()
	}
	if err != nil {
		return c.poolError(ctx, p.pool.Name, err)
	}
	return nil
}

// poolError is what a pooled cluster's status and Events say of a failure
// on its pool. That the pool does not exist is the tenant's to know; the
// rest (the provider's Secret, its members' addresses, etcd's answers) is
// the provider's, so it goes to capn's log, and the pool's own status
// shows what its sync finds.
func (c *etcdAccess) poolError(ctx context.Context, name string, err error) error {
	if c.pools == nil {
		return err
	}
	if _, lerr := c.pools.Get(name); apierrors.IsNotFound(lerr) {
		return err
	}
	klog.FromContext(ctx).Error(err, "NestedEtcdPool not usable", "pool", name)
	return fmt.Errorf("NestedEtcdPool %q is not usable now: the provider finds why in its status and in capn's log", name)
}
