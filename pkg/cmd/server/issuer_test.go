package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

// The provisioner's join errors reach the registry as its own, which map
// them to 409 and 503; a namespace owned by another cluster reads as not
// provisioned, naming nothing of the other cluster.
func TestJoinTokenIssuerErrors(t *testing.T) {
	nc := &capn.NestedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "demo", UID: "6f1c2b9e-3d4a-4e5f-8a7b-0c1d2e3f4a5b"}}
	served := &v1alpha1.NestedCluster{ObjectMeta: nc.ObjectMeta}
	ns := provisioner.ManagementNamespace(served)
	cas, err := pki.GenerateCAs(time.Now(), "team-a/demo")
	require.NoError(t, err)
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.SecretCA},
		Data: map[string][]byte{corev1.TLSCertKey: cas.Cluster.CertPEM, corev1.TLSPrivateKeyKey: cas.Cluster.KeyPEM}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.APIServerName}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.42"}}
	dep := func(rev string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.APIServerName,
			Annotations: map[string]string{builders.TemplateRevisionAnnotation: rev}}}
	}
	mine := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: provisioner.OwnerLabels(served)}}
	other := served.DeepCopy()
	other.UID = "00000000-0000-0000-0000-000000000001"
	theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: provisioner.OwnerLabels(other)}}
	down := func(string, *pki.CA, time.Time) (kubernetes.Interface, error) {
		c := fake.NewClientset()
		c.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("dial tcp 10.96.0.42:443: connect: connection refused")
		})
		return c, nil
	}
	for _, tc := range []struct {
		name string
		objs []runtime.Object
		want error
	}{
		{"nothing yet", []runtime.Object{mine}, nestedcluster.ErrNotProvisioned},
		{"another cluster's namespace", []runtime.Object{theirs, ca, svc, dep("3")}, nestedcluster.ErrNotProvisioned},
		{"apiserver at revision 2", []runtime.Object{mine, ca, svc, dep("2")}, nestedcluster.ErrJoinUnsupported},
		{"tenant down", []runtime.Object{mine, ca, svc, dep("3")}, nestedcluster.ErrTenantUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := joinTokenIssuer{&access.JoinIssuer{Management: fake.NewClientset(tc.objs...), TenantClient: down}}
			_, err := j.IssueJoinToken(context.Background(), nc, "alice", time.Minute)
			require.ErrorIs(t, err, tc.want)
			require.NotContains(t, err.Error(), string(other.UID))
			require.NotContains(t, err.Error(), "connection refused", "the tenant's error text")
		})
	}
}
