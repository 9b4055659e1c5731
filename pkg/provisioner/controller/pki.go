package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// credentials keeps the cluster's Secrets: its PKI and the copies of an
// external etcd's credentials (externaletcd.go).
type credentials struct{ *env }

// ensurePKI issues or renews the control plane's certificates and writes
// only the Secrets whose data changed; pki.Reconcile keeps everything
// still valid byte for byte. It returns the Secrets' data as they now are:
// its CertsHash rolls the pods when a certificate they read at start
// changes, and the cluster CA in it serves the tenant bootstrap, so no
// later step of the sync reads these Secrets again.
func (c *credentials) ensurePKI(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params) (pki.Data, error) {
	ns := p.Namespace
	secrets, err := c.mgmt.ListSecrets(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("listing secrets in %s: %w", ns, err)
	}
	existing := pki.Data{}
	for i := range secrets {
		existing[secrets[i].Name] = secrets[i].Data
	}
	want, changed, err := pki.Reconcile(existing, pki.InputsFor(nc, p.Addresses()), c.now(), c.cfg.CertRenewalThreshold)
	if err != nil {
		return nil, fmt.Errorf("reconciling certificates: %w", err)
	}
	for _, name := range changed {
		// Applied: capn owns the keys it writes; keys someone else added
		// to the Secret stay.
		if _, err := c.mgmt.Apply(ctx, FieldManager, ownedSecret(nc, ns, name, want[name])); err != nil {
			return nil, fmt.Errorf("applying secret %s: %w", name, err)
		}
	}
	if len(changed) > 0 {
		klog.FromContext(ctx).Info("Wrote certificate Secrets", "secrets", changed)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "CertificatesIssued", "wrote Secrets %v", changed)
	}
	if roots := regeneratedRoots(existing, changed); len(roots) > 0 {
		// Someone deleted a root by hand. A new one is the only way back to
		// a working control plane, but it breaks every credential the old
		// one signed: say so loudly, never silently.
		klog.FromContext(ctx).Error(nil, "Regenerated roots of trust that were missing", "secrets", roots)
		c.recorder.Eventf(nc, corev1.EventTypeWarning, "RootsRegenerated",
			"Secrets %v were missing from %s and capn generated new ones: kubeconfigs, join tokens' CA hashes and node certificates issued before no longer work; ask for them again", roots, ns)
	}
	return want, nil
}

// rootSecrets are the Secrets whose loss breaks trust: the CAs and the
// service-account key.
var rootSecrets = []string{provisioner.SecretCA, provisioner.SecretEtcdCA, provisioner.SecretFrontProxyCA, provisioner.SecretServiceAccount}

// regeneratedRoots are the roots just written that did not exist while
// other PKI Secrets did: lost, not first issued.
func regeneratedRoots(existing pki.Data, changed []string) []string {
	hadPKI := false
	for name := range existing {
		if slices.Contains(rootSecrets, name) || name == provisioner.SecretAPIServerServing {
			hadPKI = true
			break
		}
	}
	if !hadPKI {
		return nil
	}
	var out []string
	for _, name := range changed {
		if _, had := existing[name]; !had && slices.Contains(rootSecrets, name) {
			out = append(out, name)
		}
	}
	return out
}

// ownedSecret is a Secret capn writes into a management namespace, as an
// apply configuration: only the keys in data, and the owner labels. Opaque,
// because CA and kubeconfig Secrets do not fit kubernetes.io/tls.
func ownedSecret(nc *v1alpha1.NestedCluster, ns, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: provisioner.OwnerLabels(nc)},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}
