package access

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
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
		bind(TenantSyncerRole, TenantSyncerRole, rbacv1.UserKind, pki.SyncerUser),
	}
}

// TenantSyncerRole is the tenant ClusterRole of capn-syncer (pki.SyncerUser):
// what it needs to run the tenant's pods and publish virtual Nodes, and no
// more. It reads ConfigMaps, Secrets and Services (to copy what pods
// reference, and Services to the host), writes pods' status and bindings'
// outcome, owns the virtual Nodes and their Leases, asks for the tokens
// pods mount, and records Events. It cannot write RBAC, Secrets or
// workloads, so a compromised syncer is not a tenant admin.
const TenantSyncerRole = "capn:syncer"

// TenantSyncerRules are TenantSyncerRole's rules.
func TenantSyncerRules() []*rbacac.PolicyRuleApplyConfiguration {
	rule := func(group string, resources []string, verbs ...string) *rbacac.PolicyRuleApplyConfiguration {
		return rbacac.PolicyRule().WithAPIGroups(group).WithResources(resources...).WithVerbs(verbs...)
	}
	read := []string{"get", "list", "watch"}
	return []*rbacac.PolicyRuleApplyConfiguration{
		rule("", []string{"pods"}, append(read, "update", "patch", "delete")...),
		rule("", []string{"pods/status"}, "update", "patch"),
		rule("", []string{"nodes"}, append(read, "create", "update", "patch", "delete")...),
		rule("", []string{"nodes/status"}, "update", "patch"),
		rule("", []string{"configmaps", "secrets", "services"}, read...),
		rule("", []string{"serviceaccounts/token"}, "create"),
		rule("", []string{"events"}, "create", "patch", "update"),
		rule("events.k8s.io", []string{"events"}, "create", "patch", "update"),
		rule("coordination.k8s.io", []string{"leases"}, append(read, "create", "update", "patch")...),
		// The Service webhook's configuration, which the leader points at
		// itself: every verb but create by name (the informer watches
		// with a metadata.name field selector), create as RBAC allows it.
		rule("admissionregistration.k8s.io", []string{"mutatingwebhookconfigurations"}, "create"),
		rule("admissionregistration.k8s.io", []string{"mutatingwebhookconfigurations"}, append(read, "update", "patch")...).
			WithResourceNames(v1alpha1.ComponentSyncer),
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
	// The tenant's apiserver may run an image the tenant chose: every
	// answer is hostile until read. Short requests, bounded bodies, and no
	// redirects (a 3xx to an internal address would make capn its proxy).
	cfg.Timeout = TenantRequestTimeout
	cfg.UserAgent = "capn-provisioner"
	cfg.QPS, cfg.Burst = -1, 0 // a handful of requests per bootstrap; no client-side limiter goroutines
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return boundedBodies{rt} })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("tenant HTTP client: %w", err)
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return kubernetes.NewForConfigAndClient(cfg, hc)
}

// TenantRequestTimeout bounds each request to a tenant apiserver. A var so
// tests can shorten it.
var TenantRequestTimeout = 5 * time.Second

// MaxTenantResponseBytes bounds every response body read from a tenant
// apiserver; the bootstrap's answers are a few KiB.
const MaxTenantResponseBytes = 1 << 20

// ErrTenantResponseTooLarge: a tenant answered more than
// MaxTenantResponseBytes.
var ErrTenantResponseTooLarge = errors.New("tenant response exceeds 1 MiB")

// boundedBodies cuts every response body at MaxTenantResponseBytes, with an
// error rather than silently: a truncated JSON document must not parse.
type boundedBodies struct{ rt http.RoundTripper }

func (b boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > MaxTenantResponseBytes {
		_ = resp.Body.Close()
		return nil, ErrTenantResponseTooLarge
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxTenantResponseBytes}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrTenantResponseTooLarge
	}
	// Read one byte more than allowed, to tell "exactly the limit" from
	// "over it".
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, ErrTenantResponseTooLarge
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// DescribeTenantError is what capn may say about a failed tenant request
// in Events, status and logs: a fixed phrase and at most an HTTP status
// code, never text from the tenant's answer, which the tenant controls and
// other parties read.
func DescribeTenantError(err error) string {
	var status apierrors.APIStatus
	var netErr net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTenantResponseTooLarge):
		return "the tenant apiserver's response exceeded 1 MiB"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("the tenant apiserver did not answer within %s", TenantRequestTimeout)
	case errors.As(err, &status) && status.Status().Code != 0:
		return fmt.Sprintf("the tenant apiserver answered HTTP %d", status.Status().Code)
	case errors.As(err, &netErr):
		return "could not connect to the tenant apiserver"
	default:
		return "the tenant request failed"
	}
}

// Bootstrap applies Bindings to a tenant and reports whether anything
// changed. A binding already in place is left alone (no write); one that is
// missing or altered is server-side applied, so a binding a tenant deleted
// by mistake comes back the next time capn bootstraps (after a restart).
func Bootstrap(ctx context.Context, tenant kubernetes.Interface) (bool, error) {
	changed := false
	role := rbacac.ClusterRole(TenantSyncerRole).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "capn"}).
		WithRules(TenantSyncerRules()...)
	live, err := tenant.RbacV1().ClusterRoles().Get(ctx, TenantSyncerRole, metav1.GetOptions{})
	switch {
	case err == nil && rulesMatch(live.Rules, role.Rules):
	case err != nil && !apierrors.IsNotFound(err):
		return changed, fmt.Errorf("reading ClusterRole %s in the tenant: %w", TenantSyncerRole, err)
	default:
		if _, err := tenant.RbacV1().ClusterRoles().Apply(ctx, role,
			metav1.ApplyOptions{FieldManager: bootstrapFieldName, Force: true}); err != nil {
			return changed, fmt.Errorf("applying ClusterRole %s in the tenant: %w", TenantSyncerRole, err)
		}
		changed = true
	}
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

func rulesMatch(live []rbacv1.PolicyRule, want []rbacac.PolicyRuleApplyConfiguration) bool {
	if len(live) != len(want) {
		return false
	}
	for i, w := range want {
		l := live[i]
		if !slices.Equal(l.APIGroups, w.APIGroups) || !slices.Equal(l.Resources, w.Resources) || !slices.Equal(l.Verbs, w.Verbs) ||
			len(l.ResourceNames) > 0 || len(l.NonResourceURLs) > 0 {
			return false
		}
	}
	return true
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
