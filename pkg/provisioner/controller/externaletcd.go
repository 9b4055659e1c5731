package controller

import (
	"bytes"
	"capn.dev/capn/pkg/provisioner/builders"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// ensureExternalEtcd copies the Secrets a NestedCluster names for its
// external etcd from the NestedCluster's namespace into the management
// namespace (a pod mounts Secrets of its own namespace only). Only the keys
// the apiserver reads are copied. It returns a hash of what was copied, to
// roll the apiserver when the user rotates those certificates; "" without
// an external etcd.
func (c *credentials) ensureExternalEtcd(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params) (string, error) {
	ns := p.Namespace
	x := nc.Spec.Etcd.External
	if x == nil {
		return "", nil
	}
	copies := []struct {
		from, to string
		keys     []string
	}{
		{x.CASecretRef.Name, provisioner.SecretExternalEtcdCA, []string{corev1.ServiceAccountRootCAKey}},
		{x.ClientSecretRef.Name, provisioner.SecretExternalEtcdClient, []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}},
	}
	sum := sha256.New()
	for _, cp := range copies {
		data, err := c.readUserSecret(ctx, nc.Namespace, cp.from, cp.keys)
		if err != nil {
			return "", err
		}
		for _, k := range cp.keys {
			sum.Write([]byte(cp.to + "/" + k + "\x00"))
			sum.Write(data[k])
		}
		if err := c.writeCopy(ctx, nc, ns, cp.to, data); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(sum.Sum(nil)[:16]), nil
}

// readUserSecret returns the wanted keys of the user's Secret, or an error
// that says exactly what is missing, since the user has to fix it.
func (c *credentials) readUserSecret(ctx context.Context, namespace, name string, keys []string) (map[string][]byte, error) {
	live, err := c.mgmt.ReadSecret(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("external etcd: Secret %s/%s not found", namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("external etcd: reading Secret %s/%s: %w", namespace, name, err)
	}
	src := live.Data
	out := map[string][]byte{}
	for _, k := range keys {
		if len(src[k]) == 0 {
			return nil, fmt.Errorf("external etcd: Secret %s/%s has no key %q", namespace, name, k)
		}
		out[k] = src[k]
	}
	return out, nil
}

// writeCopy applies the management copy only when its data differs, so a
// resync writes nothing.
func (c *credentials) writeCopy(ctx context.Context, nc *v1alpha1.NestedCluster, ns, name string, data map[string][]byte) error {
	live, err := c.mgmt.Get(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	switch {
	case err == nil:
		if sameData(live.(*corev1.Secret).Data, data) {
			return nil
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("getting secret %s: %w", name, err)
	}
	if _, err := c.mgmt.Apply(ctx, FieldManager, ownedSecret(nc, ns, name, data)); err != nil {
		return fmt.Errorf("applying secret %s: %w", name, err)
	}
	klog.FromContext(ctx).Info("Copied external etcd Secret", "secret", name)
	c.recorder.Eventf(nc, corev1.EventTypeNormal, "ExternalEtcdSecretCopied", "copied external etcd credentials into %s/%s", ns, name)
	return nil
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
