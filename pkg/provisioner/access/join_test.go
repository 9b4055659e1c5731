package access

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// joinEnv is a management cluster holding one provisioned tenant, and the
// tenant's apiserver as a fake clientset.
type joinEnv struct {
	nc      *v1alpha1.NestedCluster
	cas     *pki.CAs
	mgmt    *fake.Clientset
	tenant  *fake.Clientset
	dialled []string
	now     time.Time
}

func newJoinEnv(t *testing.T, revision string, lb string) *joinEnv {
	t.Helper()
	e := &joinEnv{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), tenant: fake.NewClientset()}
	e.nc = &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "demo", UID: "6f1c2b9e-3d4a-4e5f-8a7b-0c1d2e3f4a5b"}}
	e.nc.Spec.APIServer.Service.Port = 6443
	ns := provisioner.ManagementNamespace(e.nc)
	var err error
	e.cas, err = pki.GenerateCAs(e.now, "team-a/demo")
	require.NoError(t, err)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.APIServerName},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.42"}}
	if lb != "" {
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lb}}
	}
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: provisioner.OwnerLabels(e.nc)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.SecretCA},
			Data: map[string][]byte{corev1.TLSCertKey: e.cas.Cluster.CertPEM, corev1.TLSPrivateKeyKey: e.cas.Cluster.KeyPEM}},
		svc,
	}
	if revision != "" {
		objs = append(objs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.APIServerName,
			Annotations: map[string]string{builders.TemplateRevisionAnnotation: revision}}})
	}
	e.mgmt = fake.NewClientset(objs...)
	return e
}

func (e *joinEnv) issuer() *JoinIssuer {
	return &JoinIssuer{Management: e.mgmt, Now: func() time.Time { return e.now },
		TenantClient: func(server string, ca *pki.CA, now time.Time) (kubernetes.Interface, error) {
			if !ca.Cert.Equal(e.cas.Cluster.Cert) {
				return nil, errors.New("signed by another CA")
			}
			e.dialled = append(e.dialled, server)
			return e.tenant, nil
		}}
}

var tokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

func TestJoinIssuer(t *testing.T) {
	e := newJoinEnv(t, "3", "")
	ctx := context.Background()
	tok, err := e.issuer().Issue(ctx, e.nc, "alice", 20*time.Minute)
	require.NoError(t, err)

	// The token, and its Secret in the tenant.
	m := tokenRE.FindStringSubmatch(tok.Token)
	require.NotNil(t, m, "token %q is not <[a-z0-9]{6}>.<[a-z0-9]{16}>", tok.Token)
	assert.Equal(t, e.now.Add(20*time.Minute), tok.Expires)
	sec, err := e.tenant.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+m[1], metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.SecretTypeBootstrapToken, sec.Type)
	assert.Equal(t, map[string]string{
		"token-id":                       m[1],
		"token-secret":                   m[2],
		"expiration":                     "2026-06-01T12:20:00Z",
		"usage-bootstrap-authentication": "true",
		"usage-bootstrap-signing":        "true",
		"auth-extra-groups":              JoinGroup,
		"description":                    `node join token created by capn for "alice" (nestedclusters/jointoken)`,
	}, sec.StringData)
	// capn reaches the tenant at its ClusterIP; nodes get status.endpoint.
	assert.Equal(t, []string{"https://10.96.0.42:6443"}, e.dialled)
	assert.Equal(t, "https://10.96.0.42:6443", tok.Endpoint)

	// kubeadm's CA pin: sha256 of the DER SubjectPublicKeyInfo.
	sum := sha256.Sum256(e.cas.Cluster.Cert.RawSubjectPublicKeyInfo)
	assert.Equal(t, []string{"sha256:" + hex.EncodeToString(sum[:])}, tok.CACertHashes)

	// A kubelet's bootstrap kubeconfig: endpoint, CA, token, no CA key.
	assert.NotContains(t, string(tok.BootstrapKubeconfig), string(e.cas.Cluster.KeyPEM))
	cfg, err := clientcmd.Load(tok.BootstrapKubeconfig)
	require.NoError(t, err)
	kctx := cfg.Contexts[cfg.CurrentContext]
	require.NotNil(t, kctx)
	assert.Equal(t, "https://10.96.0.42:6443", cfg.Clusters[kctx.Cluster].Server)
	assert.Equal(t, e.cas.Cluster.CertPEM, cfg.Clusters[kctx.Cluster].CertificateAuthorityData)
	assert.Equal(t, tok.Token, cfg.AuthInfos[kctx.AuthInfo].Token)

	// cluster-info: the endpoint and the CA, for bootstrapsigner to sign.
	ci, err := e.tenant.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	require.NoError(t, err)
	info, err := clientcmd.Load([]byte(ci.Data["kubeconfig"]))
	require.NoError(t, err)
	require.Len(t, info.Clusters, 1)
	for _, c := range info.Clusters {
		assert.Equal(t, "https://10.96.0.42:6443", c.Server)
		assert.Equal(t, e.cas.Cluster.CertPEM, c.CertificateAuthorityData)
	}
	assert.Empty(t, info.AuthInfos, "cluster-info carries no credential")

	// Every request gets its own token.
	again, err := e.issuer().Issue(ctx, e.nc, "alice", time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, tok.Token, again.Token)
	secrets, err := e.tenant.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, secrets.Items, 2)
}

// With a load balancer, nodes get its address; capn still dials the
// ClusterIP.
func TestJoinIssuerLoadBalancer(t *testing.T) {
	e := newJoinEnv(t, "3", "203.0.113.7")
	tok, err := e.issuer().Issue(context.Background(), e.nc, "alice", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "https://203.0.113.7:6443", tok.Endpoint)
	assert.Equal(t, []string{"https://10.96.0.42:6443"}, e.dialled)
	ci, err := e.tenant.CoreV1().ConfigMaps("kube-public").Get(context.Background(), "cluster-info", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, ci.Data["kubeconfig"], "server: https://203.0.113.7:6443")
}

func TestJoinIssuerRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, revision string
		want           error
	}{
		{"apiserver at revision 2", "2", ErrJoinUnsupported},
		{"apiserver without a revision (1)", "1", ErrJoinUnsupported},
		{"no apiserver Deployment", "", ErrNotProvisioned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newJoinEnv(t, tc.revision, "")
			_, err := e.issuer().Issue(ctx, e.nc, "alice", time.Minute)
			require.ErrorIs(t, err, tc.want)
			assert.Empty(t, e.dialled, "the tenant was called")
		})
	}

	// A tenant that fails: a fixed phrase and the status, never its text.
	e := newJoinEnv(t, "3", "")
	e.tenant.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("<script>tenant text</script>"))
	})
	_, err := e.issuer().Issue(ctx, e.nc, "alice", time.Minute)
	require.ErrorIs(t, err, ErrTenantUnavailable)
	assert.NotContains(t, err.Error(), "tenant text")
	assert.Contains(t, err.Error(), "HTTP 500")

	// Two id clashes in a row: the second is reported, not retried forever.
	e = newJoinEnv(t, "3", "")
	clashes := 0
	e.tenant.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		clashes++
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), "bootstrap-token-x")
	})
	_, err = e.issuer().Issue(ctx, e.nc, "alice", time.Minute)
	require.ErrorIs(t, err, ErrTenantUnavailable)
	assert.Equal(t, 2, clashes)
}

// The ids and secrets are drawn from the whole alphabet.
func TestNewBootstrapToken(t *testing.T) {
	seen := map[rune]bool{}
	for range 200 {
		id, secret, err := newBootstrapToken()
		require.NoError(t, err)
		require.Regexp(t, tokenRE, id+"."+secret)
		for _, r := range id + secret {
			seen[r] = true
		}
	}
	assert.Len(t, seen, 36)
}

// JoinGroup must be a group kube-apiserver's bootstrap-token
// authenticator accepts in auth-extra-groups.
func TestJoinGroupIsABootstrapGroup(t *testing.T) {
	assert.Regexp(t, `^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`, JoinGroup)
}

// Bootstrap writes the join RBAC: tokens of JoinGroup create CSRs and get
// node-client certificates approved; nodes renew theirs; anonymous reads
// cluster-info, by name only. A second run writes nothing.
func TestBootstrapAppliesJoinRBAC(t *testing.T) {
	ctx := context.Background()
	tenant := fake.NewClientset()
	changed, err := Bootstrap(ctx, tenant)
	require.NoError(t, err)
	assert.True(t, changed)
	for name, want := range map[string][2]string{
		"capn:kubelet-bootstrap":                     {"system:node-bootstrapper", JoinGroup},
		"capn:node-autoapprove-bootstrap":            {"system:certificates.k8s.io:certificatesigningrequests:nodeclient", JoinGroup},
		"capn:node-autoapprove-certificate-rotation": {"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
	} {
		b, err := tenant.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, want[0], b.RoleRef.Name, name)
		require.Len(t, b.Subjects, 1, name)
		assert.Equal(t, "Group", b.Subjects[0].Kind, name)
		assert.Equal(t, want[1], b.Subjects[0].Name, name)
	}
	role, err := tenant.RbacV1().Roles("kube-public").Get(ctx, ClusterInfoRole, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, role.Rules, 1)
	assert.Equal(t, []string{"get"}, role.Rules[0].Verbs)
	assert.Equal(t, []string{"configmaps"}, role.Rules[0].Resources)
	assert.Equal(t, []string{"cluster-info"}, role.Rules[0].ResourceNames)
	rb, err := tenant.RbacV1().RoleBindings("kube-public").Get(ctx, ClusterInfoRole, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, rb.Subjects, 1)
	assert.Equal(t, "system:anonymous", rb.Subjects[0].Name)

	changed, err = Bootstrap(ctx, tenant)
	require.NoError(t, err)
	assert.False(t, changed, "a second bootstrap rewrote something")
}

// Tenants bootstrapped before node join existed get its RBAC once: the
// revision the provisioner records covers it, so it differs from the
// revision of everything else alone.
func TestBootstrapRevisionCoversJoin(t *testing.T) {
	rev := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:8])
	}
	require.Equal(t, BootstrapRevision(), rev([]any{tenantRoles(), namespacedRoles(), Bindings(), namespacedBindings(), flowSchemas()}),
		"this test computes BootstrapRevision as bootstrap.go does")
	names := func(objs []string) func(string) bool { return func(n string) bool { return slices.Contains(objs, n) } }
	join := names([]string{"capn:kubelet-bootstrap", "capn:node-autoapprove-bootstrap", "capn:node-autoapprove-certificate-rotation", ClusterInfoRole})
	withoutJoin := []any{tenantRoles(),
		slices.DeleteFunc(namespacedRoles(), func(r *rbacRole) bool { return join(*r.Name) }),
		slices.DeleteFunc(Bindings(), func(b *rbacClusterRoleBinding) bool { return join(*b.Name) }),
		slices.DeleteFunc(namespacedBindings(), func(b *rbacRoleBinding) bool { return join(*b.Name) }), flowSchemas()}
	assert.NotEqual(t, BootstrapRevision(), rev(withoutJoin))
}

type (
	rbacRole               = rbacac.RoleApplyConfiguration
	rbacClusterRoleBinding = rbacac.ClusterRoleBindingApplyConfiguration
	rbacRoleBinding        = rbacac.RoleBindingApplyConfiguration
)
