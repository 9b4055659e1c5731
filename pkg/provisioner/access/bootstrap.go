package access

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/provisioner/pki"
)

// BootstrapUser is who the provisioner is inside a tenant. Its certificate
// lives in memory for one bootstrap and expires after bootstrapValidity:
// capn keeps no standing admin credential for any tenant.
const (
	BootstrapUser      = "capn:provisioner"
	bootstrapValidity  = 10 * time.Minute
	bootstrapFieldName = "capn-provisioner"
)

// Bindings are the ClusterRoleBindings every tenant starts with: its
// kubeconfig users are cluster-admin, and kube-apiserver's kubelet client
// may use the kubelet API (it carries no group, see pki).
func Bindings() []*rbacac.ClusterRoleBindingApplyConfiguration {
	bind := func(name, role, kind, subject string) *rbacac.ClusterRoleBindingApplyConfiguration {
		return rbacac.ClusterRoleBinding(name).
			WithLabels(map[string]string{"app.kubernetes.io/managed-by": "capn"}).
			WithRoleRef(rbacac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(role)).
			WithSubjects(rbacac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(kind).WithName(subject))
	}
	return []*rbacac.ClusterRoleBindingApplyConfiguration{
		bind("capn:cluster-admins", "cluster-admin", rbacv1.GroupKind, TenantAdminsGroup),
		bind("capn:kube-apiserver-kubelet-client", "system:kubelet-api-admin", rbacv1.UserKind, pki.KubeletClientCommonName),
	}
}

// BootstrapClient is a client for the tenant at server as BootstrapUser in
// system:masters, signed by ca just now. RBAC inside a fresh tenant grants
// nobody anything yet, so only that group can write the first bindings.
func BootstrapClient(server string, ca *pki.CA, now time.Time) (kubernetes.Interface, error) {
	kp, err := pki.Issue(ca, pki.LeafSpec{CommonName: BootstrapUser, Organization: []string{"system:masters"},
		Usage: pki.UsageClient, Validity: bootstrapValidity}, now)
	if err != nil {
		return nil, fmt.Errorf("signing the bootstrap certificate: %w", err)
	}
	data, err := pki.Kubeconfig(server, ca.CertPEM, BootstrapUser, kp)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 15 * time.Second
	cfg.UserAgent = "capn-provisioner"
	return kubernetes.NewForConfig(cfg)
}

// Bootstrap applies Bindings to a tenant and reports whether anything
// changed. A binding already in place is left alone (no write); one that is
// missing or altered is server-side applied, so a binding a tenant deleted
// by mistake comes back the next time capn bootstraps (after a restart).
func Bootstrap(ctx context.Context, tenant kubernetes.Interface) (bool, error) {
	changed := false
	for _, b := range Bindings() {
		live, err := tenant.RbacV1().ClusterRoleBindings().Get(ctx, *b.Name, metav1.GetOptions{})
		switch {
		case err == nil && matches(live, b):
			continue
		case err != nil && !apierrors.IsNotFound(err):
			return changed, fmt.Errorf("reading ClusterRoleBinding %s in the tenant: %w", *b.Name, err)
		}
		if _, err := tenant.RbacV1().ClusterRoleBindings().Apply(ctx, b,
			metav1.ApplyOptions{FieldManager: bootstrapFieldName, Force: true}); err != nil {
			return changed, fmt.Errorf("applying ClusterRoleBinding %s in the tenant: %w", *b.Name, err)
		}
		changed = true
	}
	return changed, nil
}

func matches(live *rbacv1.ClusterRoleBinding, want *rbacac.ClusterRoleBindingApplyConfiguration) bool {
	r := want.RoleRef
	if live.RoleRef.APIGroup != *r.APIGroup || live.RoleRef.Kind != *r.Kind || live.RoleRef.Name != *r.Name ||
		len(live.Subjects) != len(want.Subjects) {
		return false
	}
	for i, s := range want.Subjects {
		l := live.Subjects[i]
		if l.APIGroup != *s.APIGroup || l.Kind != *s.Kind || l.Name != *s.Name {
			return false
		}
	}
	return true
}
