package builders

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// A cluster created before management namespaces were named by UID keeps
// its legacy namespace (provisioner.ResolveNamespace). Rendered into it,
// everything must be byte for byte what the older capn rendered, except
// the owner-UID label on object metadata: the same DNS names in the
// certificates, the same etcd cluster token, and above all the same pod
// templates, so upgrading capn restarts no tenant. The file is the
// "minimal" golden output of the last release with legacy names.
func TestLegacyNamespaceRendersAsBefore(t *testing.T) {
	before, err := os.ReadFile("testdata/legacy/minimal-output-before-uid-names.yaml")
	require.NoError(t, err)
	nc := decodeNestedCluster(t, "testdata/minimal/input.yaml")
	p := defaultParams
	p.Namespace = provisioner.LegacyNamespace(nc)
	// Its workloads run at template revision 1 (they carry no revision
	// annotation), and the controller keeps them there (revision.go).
	p.Revisions = TemplateRevisions{}
	for _, c := range v1alpha1.Components() {
		p.Revisions[c] = 1
	}
	all, err := All(nc, p)
	require.NoError(t, err)
	// The namespace policy (policy.go) is new since that release: only
	// what it rendered is compared.
	var objs []Object
	for _, o := range all {
		switch t := o.(type) {
		case *corev1.LimitRange, *corev1.ResourceQuota, *networkingv1.NetworkPolicy:
			continue
		case *corev1.Service:
			// Routing to a single etcd before it is ready is new too; a
			// Service change restarts nothing.
			if t.Name == provisioner.EtcdName {
				t.Spec.PublishNotReadyAddresses = false
			}
		}
		objs = append(objs, o)
	}
	for _, o := range objs {
		l := o.GetLabels()
		require.Equal(t, string(nc.UID), l[provisioner.OwnerUIDLabel], "%T %s lacks the owner UID", o, o.GetName())
		delete(l, provisioner.OwnerUIDLabel)
		o.SetLabels(l)
	}
	got := render(t, nc, p, objs)
	if !bytes.Equal(before, got) {
		t.Errorf("rendering into the legacy namespace differs from the older capn's output:\n%s", firstDiff(before, got))
	}
}
