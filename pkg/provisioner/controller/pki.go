package controller

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
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
// still valid byte for byte. It returns the PKI's logical data as it now
// is: its CertsHash rolls the pods when a certificate they read at start
// changes, and the cluster CA in it serves the tenant bootstrap, so no
// later step of the sync reads these Secrets again.
//
// The data is stored in the layout the cluster's workloads mount
// (pkiLayouts): during a migration both, since pods of either revision
// may run. The logical Secrets are deleted once every workload mounts the
// new layout and has rolled out.
func (c *credentials) ensurePKI(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params, o *observation) (pki.Data, error) {
	ns := p.Namespace
	layout := builders.PKILayout(nc)
	stored, existing, err := readPKI(ctx, c.mgmt, ns, layout)
	if err != nil {
		return nil, err
	}
	want, changed, err := pki.Reconcile(existing, pki.InputsFor(nc, p.Addresses()), c.now(), c.cfg.CertRenewalThreshold)
	if err != nil {
		return nil, fmt.Errorf("reconciling certificates: %w", err)
	}
	perComponent, logical := pkiLayouts(p, o)
	desired := map[string]map[string][]byte{}
	if perComponent {
		maps.Copy(desired, scatterPKI(want, layout))
	}
	if logical {
		maps.Copy(desired, want)
	}
	var written []string
	// The roots first: leaves stored without them would read back as a
	// cluster that lost its CAs.
	names := slices.SortedFunc(maps.Keys(desired), func(a, b string) int {
		return cmp.Or(-cmp.Compare(isRootSecret(a), isRootSecret(b)), cmp.Compare(a, b))
	})
	for _, name := range names {
		if holds(stored[name], desired[name]) {
			continue
		}
		// Applied: capn owns the keys it writes; keys someone else added
		// to the Secret stay.
		if _, err := c.mgmt.Apply(ctx, FieldManager, ownedSecret(nc, ns, name, desired[name])); err != nil {
			return nil, fmt.Errorf("applying secret %s: %w", name, err)
		}
		written = append(written, name)
	}
	if len(written) > 0 {
		klog.FromContext(ctx).Info("Wrote certificate Secrets", "secrets", written, "changed", changed)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "CertificatesIssued", "wrote Secrets %v", written)
	}
	if perComponent && !logical && rolledOut(o.components(nc)) {
		if err := c.removeLogicalPKI(ctx, ns, stored, want); err != nil {
			return nil, err
		}
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

// readPKI reads the Secrets of ns and the logical PKI data they hold, in
// whichever layout (layout: builders.PKILayout of the cluster).
func readPKI(ctx context.Context, mgmt Management, ns string, layout []builders.PKISecret) (map[string]map[string][]byte, pki.Data, error) {
	secrets, err := mgmt.ListSecrets(ctx, ns)
	if err != nil {
		return nil, nil, fmt.Errorf("listing secrets in %s: %w", ns, err)
	}
	stored := map[string]map[string][]byte{}
	for i := range secrets {
		stored[secrets[i].Name] = secrets[i].Data
	}
	return stored, gatherPKI(stored, layout), nil
}

// pkiLayouts says which layouts the cluster's pods may mount: the
// per-component Secrets once any workload is, or new ones will be,
// rendered at builders.PKISecretTemplateRevision; the logical Secrets
// while any workload is rendered before it, or new ones would be (a
// provider pinned an older revision).
func pkiLayouts(p builders.Params, o *observation) (perComponent, logical bool) {
	target := p.TargetRevision() >= builders.PKISecretTemplateRevision
	perComponent, logical = target, !target
	for _, live := range o.workloads {
		if builders.RevisionOf(live) >= builders.PKISecretTemplateRevision {
			perComponent = true
		} else {
			logical = true
		}
	}
	return perComponent, logical
}

// removeLogicalPKI deletes the logical PKI Secrets once no pod mounts them:
// their data lives on in the per-component Secrets.
func (c *credentials) removeLogicalPKI(ctx context.Context, ns string, stored map[string]map[string][]byte, want pki.Data) error {
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := stored[name]; !ok {
			continue
		}
		if err := c.mgmt.Delete(ctx, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			return fmt.Errorf("deleting secret %s: %w", name, err)
		}
	}
	return nil
}

// gatherPKI reads the logical PKI data from the stored Secrets: from the
// per-component layout where it holds a logical Secret, else from the
// logical Secret of that name (a cluster not migrated yet). Roots come
// only from the roots Secret: a component's copy of a CA certificate,
// without the key, is not the CA.
func gatherPKI(stored map[string]map[string][]byte, layout []builders.PKISecret) pki.Data {
	out := pki.Data{}
	for _, s := range layout {
		data, ok := stored[s.Name]
		if !ok {
			continue
		}
		for _, f := range s.Files {
			if builders.IsRoot(f.Logical) && s.Name != provisioner.SecretPKIRoots {
				continue
			}
			if v, ok := data[f.Key]; ok {
				if out[f.Logical] == nil {
					out[f.Logical] = map[string][]byte{}
				}
				out[f.Logical][f.LogicalKey] = v
			}
		}
	}
	for _, s := range layout {
		for _, f := range s.Files {
			if _, done := out[f.Logical]; done {
				continue
			}
			if d, ok := stored[f.Logical]; ok {
				out[f.Logical] = maps.Clone(d)
			}
		}
	}
	return out
}

// scatterPKI lays the logical data out in the per-component Secrets.
func scatterPKI(d pki.Data, layout []builders.PKISecret) map[string]map[string][]byte {
	out := map[string]map[string][]byte{}
	for _, s := range layout {
		data := map[string][]byte{}
		for _, f := range s.Files {
			if v, ok := d[f.Logical][f.LogicalKey]; ok {
				data[f.Key] = v
			}
		}
		if len(data) > 0 {
			out[s.Name] = data
		}
	}
	return out
}

// isRootSecret: the roots Secret, or a logical root.
func isRootSecret(name string) int {
	if name == provisioner.SecretPKIRoots || builders.IsRoot(name) {
		return 1
	}
	return 0
}

// holds reports whether stored has every key of want with the same bytes.
func holds(stored, want map[string][]byte) bool {
	if stored == nil {
		return false
	}
	for k, v := range want {
		if got, ok := stored[k]; !ok || !bytes.Equal(got, v) {
			return false
		}
	}
	return true
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
