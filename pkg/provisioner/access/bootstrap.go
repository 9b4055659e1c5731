package access

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/pki"
	"capn.dev/capn/pkg/tenant/names"
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
// may use the kubelet API (it carries no group, see pki); then those of
// node join (join.go).
func Bindings() []*rbacac.ClusterRoleBindingApplyConfiguration {
	bind := func(name, role, kind, subject string) *rbacac.ClusterRoleBindingApplyConfiguration {
		return rbacac.ClusterRoleBinding(name).
			WithLabels(map[string]string{"app.kubernetes.io/managed-by": "capn"}).
			WithRoleRef(rbacac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(role)).
			WithSubjects(rbacac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(kind).WithName(subject))
	}
	bindSA := func(name, role, namespace, sa string) *rbacac.ClusterRoleBindingApplyConfiguration {
		b := bind(name, role, rbacv1.ServiceAccountKind, sa)
		b.Subjects[0].WithAPIGroup("").WithNamespace(namespace)
		return b
	}
	return append([]*rbacac.ClusterRoleBindingApplyConfiguration{
		bind("capn:cluster-admins", "cluster-admin", rbacv1.GroupKind, TenantAdminsGroup),
		bind("capn:kube-apiserver-kubelet-client", "system:kubelet-api-admin", rbacv1.UserKind, names.KubeletClientCommonName),
		bind(TenantSyncerRole, TenantSyncerRole, rbacv1.UserKind, pki.SyncerUser),
		bindSA(CoreDNSRole, CoreDNSRole, dnsNamespace, dnsServiceAccount),
		bindSA(MetricsServerRole, MetricsServerRole, metricsNamespace, metricsServiceAccount),
		bindSA(MetricsAuthDelegatorBinding, "system:auth-delegator", metricsNamespace, metricsServiceAccount),
	}, joinBindings()...)
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
	read := []string{"get", "list", "watch"}
	return []*rbacac.PolicyRuleApplyConfiguration{
		rule("", []string{"pods"}, append(read, "update", "patch", "delete")...),
		rule("", []string{"pods/status"}, "update", "patch"),
		rule("", []string{"nodes"}, append(read, "create", "update", "patch", "delete")...),
		rule("", []string{"nodes/status"}, "update", "patch"),
		rule("", []string{"configmaps", "secrets", "services"}, read...),
		// NetworkPolicies are translated to the host, and a host pod
		// carries its namespace's labels for their namespace selectors.
		rule("", []string{"namespaces"}, read...),
		rule("networking.k8s.io", []string{"networkpolicies"}, read...),
		// Claims are served on the host; the syncer writes the PVs and
		// StorageClasses a tenant sees of them, as a provisioner would,
		// and a claim's resize status.
		rule("", []string{"persistentvolumeclaims"}, read...),
		rule("", []string{"persistentvolumeclaims/status"}, "update", "patch"),
		rule("", []string{"persistentvolumes"}, append(read, "create", "update", "patch", "delete")...),
		rule("storage.k8s.io", []string{"storageclasses"}, append(read, "create", "update", "patch", "delete")...),
		rule("", []string{"serviceaccounts/token"}, "create"),
		rule("", []string{"events"}, "create", "patch", "update"),
		rule("events.k8s.io", []string{"events"}, "create", "patch", "update"),
		rule("coordination.k8s.io", []string{"leases"}, append(read, "create", "update", "patch")...),
		// The Service webhook's configuration, which the leader points at
		// itself: every verb but create by name (the informer watches
		// with a metadata.name field selector), create as RBAC allows it.
		// default/kubernetes's Endpoints and EndpointSlice, which the
		// tenant apiserver does not write: by name, as the webhook's.
		rule("", []string{"endpoints"}, "create"),
		rule("", []string{"endpoints"}, append(read, "update", "patch")...).WithResourceNames(names.APIServerService),
		rule("discovery.k8s.io", []string{"endpointslices"}, "create"),
		rule("discovery.k8s.io", []string{"endpointslices"}, "update", "patch").WithResourceNames(names.APIServerService),
		// Every slice is read: the hand-made ones of selectorless
		// Services are served on the host (the informer leaves out the
		// endpointslice controller's by label).
		rule("discovery.k8s.io", []string{"endpointslices"}, read...),
		rule("admissionregistration.k8s.io", []string{"mutatingwebhookconfigurations"}, "create"),
		rule("admissionregistration.k8s.io", []string{"mutatingwebhookconfigurations"}, append(read, "update", "patch")...).
			WithResourceNames(v1alpha1.ComponentSyncer),
		// The virtual Nodes' resource metrics are served to bearer
		// tokens the tenant apiserver authenticates and authorizes for
		// nodes/metrics, as a kubelet does.
		rule("authentication.k8s.io", []string{"tokenreviews"}, "create"),
		rule("authorization.k8s.io", []string{"subjectaccessreviews"}, "create"),
		// The metrics addon's APIService, by name as the webhook's.
		rule("apiregistration.k8s.io", []string{"apiservices"}, "create"),
		rule("apiregistration.k8s.io", []string{"apiservices"}, append(read, "update", "patch", "delete")...).
			WithResourceNames(names.MetricsAPIServiceName),
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

// Bootstrap applies the tenant's RBAC (Bindings, the ClusterRoles and
// Roles they name) and capn's FlowSchemas (activity.go), and reports whether anything changed. An object
// already in place is left alone (no write); one that is missing or
// altered is server-side applied, so one a tenant deleted by mistake comes
// back the next time capn bootstraps (after a restart, or when
// BootstrapRevision changes).
func Bootstrap(ctx context.Context, tenant kubernetes.Interface) (bool, error) {
	changed := false
	opts := metav1.ApplyOptions{FieldManager: bootstrapFieldName, Force: true}
	rbac := tenant.RbacV1()
	step := func(kind, name string, current func() (bool, error), apply func() error) error {
		ok, err := current()
		switch {
		case err == nil && ok:
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading %s %s in the tenant: %w", kind, name, err)
		}
		if err := apply(); err != nil {
			return fmt.Errorf("applying %s %s in the tenant: %w", kind, name, err)
		}
		changed = true
		return nil
	}
	for _, r := range tenantRoles() {
		if err := step("ClusterRole", *r.Name, func() (bool, error) {
			live, err := rbac.ClusterRoles().Get(ctx, *r.Name, metav1.GetOptions{})
			// Labels too: the aggregation labels are what grant a role's
			// rules to view, edit and admin.
			return err == nil && rulesMatch(live.Rules, r.Rules) && labelsInclude(live.Labels, r.Labels), err
		}, func() error { _, err := rbac.ClusterRoles().Apply(ctx, r, opts); return err }); err != nil {
			return changed, err
		}
	}
	for _, r := range namespacedRoles() {
		if err := step("Role", *r.Namespace+"/"+*r.Name, func() (bool, error) {
			live, err := rbac.Roles(*r.Namespace).Get(ctx, *r.Name, metav1.GetOptions{})
			return err == nil && rulesMatch(live.Rules, r.Rules), err
		}, func() error { _, err := rbac.Roles(*r.Namespace).Apply(ctx, r, opts); return err }); err != nil {
			return changed, err
		}
	}
	for _, b := range Bindings() {
		if err := step("ClusterRoleBinding", *b.Name, func() (bool, error) {
			live, err := rbac.ClusterRoleBindings().Get(ctx, *b.Name, metav1.GetOptions{})
			return err == nil && bindingMatches(live.RoleRef, live.Subjects, b.RoleRef, b.Subjects), err
		}, func() error { _, err := rbac.ClusterRoleBindings().Apply(ctx, b, opts); return err }); err != nil {
			return changed, err
		}
	}
	for _, b := range namespacedBindings() {
		if err := step("RoleBinding", *b.Namespace+"/"+*b.Name, func() (bool, error) {
			live, err := rbac.RoleBindings(*b.Namespace).Get(ctx, *b.Name, metav1.GetOptions{})
			return err == nil && bindingMatches(live.RoleRef, live.Subjects, b.RoleRef, b.Subjects), err
		}, func() error { _, err := rbac.RoleBindings(*b.Namespace).Apply(ctx, b, opts); return err }); err != nil {
			return changed, err
		}
	}
	if err := applyFlowSchemas(ctx, tenant, opts, step); err != nil {
		return changed, err
	}
	return changed, nil
}

// BootstrapRevision is a digest of everything Bootstrap applies. The
// provisioner records it with each tenant's bootstrap, so a capn release
// that grants something new bootstraps every tenant once more.
func BootstrapRevision() string {
	b, err := json.Marshal([]any{tenantRoles(), namespacedRoles(), Bindings(), namespacedBindings(), flowSchemas()})
	if err != nil {
		panic(fmt.Sprintf("marshalling the bootstrap objects: %v", err)) // static data
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func rulesMatch(live []rbacv1.PolicyRule, want []rbacac.PolicyRuleApplyConfiguration) bool {
	if len(live) != len(want) {
		return false
	}
	for i, w := range want {
		l := live[i]
		if !slices.Equal(l.APIGroups, w.APIGroups) || !slices.Equal(l.Resources, w.Resources) || !slices.Equal(l.Verbs, w.Verbs) ||
			!slices.Equal(l.ResourceNames, w.ResourceNames) || len(l.NonResourceURLs) > 0 {
			return false
		}
	}
	return true
}

// labelsInclude reports whether live carries every label of want.
func labelsInclude(live, want map[string]string) bool {
	for k, v := range want {
		if lv, ok := live[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

func bindingMatches(liveRef rbacv1.RoleRef, liveSubjects []rbacv1.Subject, r *rbacac.RoleRefApplyConfiguration, subjects []rbacac.SubjectApplyConfiguration) bool {
	if liveRef.APIGroup != *r.APIGroup || liveRef.Kind != *r.Kind || liveRef.Name != *r.Name || len(liveSubjects) != len(subjects) {
		return false
	}
	for i, s := range subjects {
		l := liveSubjects[i]
		if l.APIGroup != *s.APIGroup || l.Kind != *s.Kind || l.Name != *s.Name || l.Namespace != ptr.Deref(s.Namespace, "") {
			return false
		}
	}
	return true
}
