package controller

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/etcdpool"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/profiles"
)

// managedEtcdPrefix is where a kube-apiserver with the default
// --etcd-prefix keeps every object.
const managedEtcdPrefix = "/registry/"

// tenantEtcd connects to the etcd a cluster keeps its objects in, with the
// credential its own apiserver uses, and returns the prefix of its keys:
// a managed etcd through its client Service as the apiserver's etcd
// client; a pooled tenant as its own pool user, which may read and write
// only its prefix. An external etcd is not capn's to read.
func (c *etcdAccess) tenantEtcd(ctx context.Context, nc *v1alpha1.NestedCluster, ns string) (*clientv3.Client, string, error) {
	secret := func(name string) (map[string][]byte, error) {
		live, err := c.mgmt.Get(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		if err != nil {
			return nil, fmt.Errorf("getting secret %s: %w", name, err)
		}
		return live.(*corev1.Secret).Data, nil
	}
	switch {
	case nc.Spec.Etcd.Pool != "":
		if c.pools == nil {
			return nil, "", fmt.Errorf("NestedEtcdPool %q: this capn serves no pools", nc.Spec.Etcd.Pool)
		}
		pool, err := c.pools.Get(nc.Spec.Etcd.Pool)
		if err != nil {
			return nil, "", fmt.Errorf("NestedEtcdPool %q: %w", nc.Spec.Etcd.Pool, err)
		}
		d, err := secret(provisioner.SecretPoolEtcdClient)
		if err != nil {
			return nil, "", err
		}
		cli, err := etcdpool.Dial(pool.Spec.Endpoints, d[corev1.ServiceAccountRootCAKey], d[corev1.TLSCertKey], d[corev1.TLSPrivateKeyKey])
		return cli, etcdpool.For(nc.UID).Prefix, err
	case nc.Spec.Etcd.Managed != nil:
		svc, err := c.mgmt.Get(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.EtcdName}})
		if err != nil {
			return nil, "", fmt.Errorf("getting the etcd Service: %w", err)
		}
		_, d, err := readPKI(ctx, c.mgmt, ns, builders.PKILayout(nc))
		if err != nil {
			return nil, "", err
		}
		ca, client := d[provisioner.SecretEtcdCA], d[provisioner.SecretAPIServerEtcdClient]
		if ca == nil || client == nil {
			return nil, "", fmt.Errorf("the etcd CA or the apiserver's etcd client certificate is not in %s yet", ns)
		}
		// By ClusterIP: the etcd serving certificate names it, and gRPC
		// checks the certificate against the endpoint's host.
		url := provisioner.EtcdClientURL(nc, provisioner.Addresses{Namespace: ns, EtcdServiceIP: svc.(*corev1.Service).Spec.ClusterIP}, profiles.EtcdClientPort)
		cli, err := etcdpool.Dial([]string{url}, ca[corev1.TLSCertKey], client[corev1.TLSCertKey], client[corev1.TLSPrivateKeyKey])
		return cli, managedEtcdPrefix, err
	}
	return nil, "", fmt.Errorf("an external etcd is backed up and restored where it runs, not by capn")
}
