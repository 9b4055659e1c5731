package controller

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// ensurePKI issues or renews the control plane's certificates and writes
// only the Secrets whose data changed; pki.Reconcile keeps everything
// still valid byte for byte. It returns the Secrets' data as they now are:
// its CertsHash rolls the pods when a certificate they read at start
// changes, and the cluster CA in it serves the tenant bootstrap, so no
// later step of the sync reads these Secrets again.
func (c *Controller) ensurePKI(ctx context.Context, nc *v1alpha1.NestedCluster, in *v1alpha1.NestedCluster, p builders.Params) (pki.Data, error) {
	ns := p.Namespace
	secrets, err := c.mgmt.ListSecrets(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("listing secrets in %s: %w", ns, err)
	}
	existing := pki.Data{}
	live := map[string]*corev1.Secret{}
	for i := range secrets {
		s := &secrets[i]
		existing[s.Name], live[s.Name] = s.Data, s
	}
	want, changed, err := pki.Reconcile(existing, pki.InputsFor(in, p.Addresses()), c.now(), c.threshold)
	if err != nil {
		return nil, fmt.Errorf("reconciling certificates: %w", err)
	}
	for _, name := range changed {
		if cur, ok := live[name]; ok {
			// Update rather than replace: keys capn does not own stay.
			s := cur.DeepCopy()
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			maps.Copy(s.Data, want[name])
			if err := c.mgmt.Update(ctx, s); err != nil {
				return nil, fmt.Errorf("updating secret %s: %w", name, err)
			}
			continue
		}
		s := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: provisioner.OwnerLabels(in)},
			// Opaque: CA and kubeconfig Secrets do not fit kubernetes.io/tls.
			Type: corev1.SecretTypeOpaque,
			Data: want[name],
		}
		if err := c.mgmt.Create(ctx, s); err != nil {
			return nil, fmt.Errorf("creating secret %s: %w", name, err)
		}
	}
	if len(changed) > 0 {
		klog.FromContext(ctx).Info("Wrote certificate Secrets", "secrets", changed)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "CertificatesIssued", "wrote Secrets %v", changed)
	}
	return want, nil
}
