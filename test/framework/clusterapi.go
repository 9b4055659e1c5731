package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Where and as whom StartClusterAPI runs Cluster API's core manager: the
// names production's core/config/default kustomization gives it
// (namespace capi-system, namePrefix capi-).
const (
	ClusterAPINamespace      = "capi-system"
	ClusterAPIServiceAccount = "capi-manager"
	// ClusterAPIManagerRole holds the rules of core/config/rbac/role.yaml.
	ClusterAPIManagerRole = "capi-manager-role"
	// ClusterAPIAggregatedRole is the ClusterRole the manager's
	// ClusterRoleBinding grants: it aggregates every ClusterRole labelled
	// ClusterAPIAggregationLabel=true, ClusterAPIManagerRole included, so a
	// provider extends the manager's permissions with a labelled ClusterRole.
	ClusterAPIAggregatedRole   = "capi-aggregated-manager-role"
	ClusterAPIAggregationLabel = "cluster.x-k8s.io/aggregate-to-manager"
	// ClusterAPIProviderLabel=cluster-api is on every object installed, as
	// production's kustomization puts it there (clusterctl finds a
	// provider's objects by it).
	ClusterAPIProviderLabel = "cluster.x-k8s.io/provider"
	clusterAPINamePrefix    = "capi-"
)

// ClusterAPIOptions says which Cluster API build StartClusterAPI runs.
type ClusterAPIOptions struct {
	// Manager is the core manager binary (sigs.k8s.io/cluster-api/core;
	// hack/build-tools.sh --print-path capi-manager).
	Manager string
	// Clusterctl is the clusterctl binary (hack/build-tools.sh --print-path
	// clusterctl), run by ClusterAPI.Clusterctl.
	Clusterctl string
	// ModuleDir is the sigs.k8s.io/cluster-api module the binaries were
	// built from, in the module cache: `go list -m -f '{{.Dir}}'
	// sigs.k8s.io/cluster-api` in hack/tools/cluster-api. Its core/config
	// holds the CRDs, RBAC and webhook manifests StartClusterAPI installs.
	ModuleDir string
	// FeatureGates is the manager's --feature-gates (default
	// ClusterTopology=true: ClusterClass and managed topologies are alpha
	// and off by default in v1.14).
	FeatureGates string
	// ExtraArgs are appended to the manager's flags.
	ExtraArgs []string
	// StartTimeout bounds the install and the manager's start, up to its
	// webhooks answering (default 3m: a busy 2-core machine is slow).
	StartTimeout time.Duration
}

func (o *ClusterAPIOptions) defaults() {
	if o.FeatureGates == "" {
		o.FeatureGates = "ClusterTopology=true"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
}

// ClusterAPI is Cluster API's core manager running as a host process
// against a Cluster, with its CRDs, RBAC and webhooks installed.
type ClusterAPI struct {
	// Manager is the manager process; it is stopped at test cleanup.
	Manager *Process
	// Kubeconfig is the manager's: a bound token of the capi-manager
	// ServiceAccount, so it has exactly the RBAC production gives it.
	Kubeconfig string
	// WebhookURL is the manager's webhook server, which the CRDs'
	// conversion and the admission webhook configurations point at.
	WebhookURL string
	// HealthURL serves /healthz and /readyz; DiagnosticsAddress is the
	// metrics endpoint (HTTPS, authenticated).
	HealthURL, DiagnosticsAddress string
	// ServingCA signs the webhook server's certificate; it is the caBundle
	// of every webhook.
	ServingCA *CA
	// Ready is the time from exec to the webhooks answering.
	Ready time.Duration

	c                *Cluster
	opts             ClusterAPIOptions
	dir              string
	clusterctlConfig string
}

// ClusterAPI's resources, for the checks StartClusterAPI makes.
var (
	clusterAPIClustersV1Beta2 = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	clusterAPIClustersV1Beta1 = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
)

// clusterAPINoRefs is what the Cluster validating webhook answers a Cluster
// without controlPlaneRef, infrastructureRef or topology: the schema allows
// it (given some other field in spec), so only the webhook can refuse it.
const clusterAPINoRefs = "one of spec.controlPlaneRef, spec.infrastructureRef or spec.topology must be set"

// StartClusterAPI installs Cluster API's core provider from
// opts.ModuleDir/core/config the way production's kustomization
// (core/config/default) does, with the manager as a host process instead
// of a Deployment:
//
//   - the CRDs of core/config/crd/bases, with the conversion webhook of
//     core/config/crd/patches (production's kustomize patches) pointing at
//     the manager by url instead of by Service;
//   - namespace capi-system, and core/config/rbac with the capi- prefix and
//     default/manager_role_aggregation_patch.yaml applied: ServiceAccount
//     capi-manager bound to ClusterAPIAggregatedRole, which aggregates
//     ClusterAPIManagerRole;
//   - core/config/webhook/manifests.yaml, each webhook rewritten from
//     service: to url: https://127.0.0.1:<port>/<path>, with the caBundle
//     of a serving certificate minted here (cert-manager's job in
//     production);
//
// then starts the manager with a token kubeconfig of capi-manager, leader
// election off, health and metrics on 127.0.0.1, and waits until /readyz
// answers and the webhooks refuse an invalid Cluster, both as v1beta2
// (admission) and as v1beta1 (conversion, then admission).
//
// The webhook server listens on all addresses, on a free port: core/main.go
// has no flag for controller-runtime's webhook.Options.Host. Only
// kube-apiserver, through 127.0.0.1, talks to it.
func (c *Cluster) StartClusterAPI(t TB, opts ClusterAPIOptions) *ClusterAPI {
	t.Helper()
	opts.defaults()
	for name, v := range map[string]string{"Manager": opts.Manager, "Clusterctl": opts.Clusterctl, "ModuleDir": opts.ModuleDir} {
		if v == "" {
			t.Fatalf("ClusterAPIOptions.%s is empty", name)
		}
	}
	cfgDir := filepath.Join(opts.ModuleDir, "core", "config")
	if _, err := os.Stat(cfgDir); err != nil {
		t.Fatalf("ClusterAPIOptions.ModuleDir: %v", err)
	}
	begin := time.Now()
	a := &ClusterAPI{c: c, opts: opts, dir: filepath.Join(c.Dir, "cluster-api")}
	webhookPort := FreePort(t)
	a.WebhookURL = "https://127.0.0.1:" + strconv.Itoa(webhookPort)
	a.HealthURL = "http://127.0.0.1:" + strconv.Itoa(FreePort(t))
	a.DiagnosticsAddress = "127.0.0.1:" + strconv.Itoa(FreePort(t))

	var err error
	if a.ServingCA, err = NewCA(a.dir, "capi-webhook-ca"); err != nil {
		t.Fatal(err)
	}
	serving, err := a.ServingCA.ServingCert("capi-webhook", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	a.clusterctlConfig = filepath.Join(a.dir, "clusterctl.yaml")
	// clusterctl's own defaults, and no other config file it would find in
	// $HOME or $XDG_CONFIG_HOME.
	if err := os.WriteFile(a.clusterctlConfig, []byte("providers: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	deadline := begin.Add(opts.StartTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := apiextensionsclient.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}

	crds, err := clusterAPICRDs(cfgDir, a.WebhookURL, a.ServingCA.CertPEM)
	if err != nil {
		t.Fatalf("Cluster API CRDs: %v", err)
	}
	for _, crd := range crds {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
	}
	rbac, err := clusterAPIRBAC(cfgDir)
	if err != nil {
		t.Fatalf("Cluster API RBAC: %v", err)
	}
	if err := rbac.create(ctx, c); err != nil {
		t.Fatal(err)
	}
	mutating, validating, err := clusterAPIWebhooks(cfgDir, a.WebhookURL, a.ServingCA.CertPEM)
	if err != nil {
		t.Fatalf("Cluster API webhooks: %v", err)
	}
	if _, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", mutating.Name, err)
	}
	if _, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", validating.Name, err)
	}

	Eventually(t, time.Until(deadline), "Cluster API CRDs Established", func() (bool, string) {
		for _, crd := range crds {
			got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if !crdEstablished(got) {
				return false, crd.Name + " not Established"
			}
		}
		return true, ""
	})
	// The manager's binding grants only the aggregated role, whose rules
	// kube-controller-manager fills in; a manager started before that would
	// see its informers forbidden.
	Eventually(t, time.Until(deadline), ClusterAPIAggregatedRole+" aggregated", func() (bool, string) {
		got, err := c.Client.RbacV1().ClusterRoles().Get(ctx, ClusterAPIAggregatedRole, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(got.Rules) >= rbac.aggregatedRules, fmt.Sprintf("%d of %d rules", len(got.Rules), rbac.aggregatedRules)
	})

	tr, err := c.Client.CoreV1().ServiceAccounts(ClusterAPINamespace).CreateToken(ctx, ClusterAPIServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](4 * 3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ClusterAPINamespace, ClusterAPIServiceAccount, err)
	}
	a.Kubeconfig = c.TokenKubeconfig(fileSafe(ClusterAPINamespace+":"+ClusterAPIServiceAccount), tr.Status.Token)

	args := append([]string{
		"--kubeconfig=" + a.Kubeconfig,
		"--leader-elect=false",
		"--webhook-port=" + strconv.Itoa(webhookPort),
		"--webhook-cert-dir=" + filepath.Dir(serving.CertFile),
		"--webhook-cert-name=" + filepath.Base(serving.CertFile),
		"--webhook-key-name=" + filepath.Base(serving.KeyFile),
		"--health-addr=" + strings.TrimPrefix(a.HealthURL, "http://"),
		"--diagnostics-address=" + a.DiagnosticsAddress,
		"--feature-gates=" + opts.FeatureGates,
	}, opts.ExtraArgs...)
	a.Manager = StartProcess(t, c.Dir, "capi-manager", opts.Manager, args...)

	if _, err := a.Manager.WaitHealthy(&http.Client{Timeout: 5 * time.Second}, a.HealthURL+"/readyz", time.Until(deadline)); err != nil {
		t.Fatalf("Cluster API manager: %v", err)
	}
	for _, gvr := range []schema.GroupVersionResource{clusterAPIClustersV1Beta2, clusterAPIClustersV1Beta1} {
		// Each answer that differs from the one before is logged: the
		// last one alone may only say that time ran out.
		prev := ""
		Eventually(t, time.Until(deadline), "the Cluster webhook refusing a Cluster without refs as "+gvr.Version, func() (bool, string) {
			if exited, err := a.Manager.Exited(); exited {
				t.Fatalf("Cluster API manager exited (%v); its log: %s", err, a.Manager.Log)
			}
			answer := "accepted"
			if err := a.dryRunCreateClusterWithoutRefs(ctx, dyn, gvr); err != nil {
				answer = err.Error()
			}
			ok := strings.Contains(answer, clusterAPINoRefs)
			if !ok && answer != prev {
				t.Logf("dry-run create of a Cluster without refs as %s: %s", gvr.Version, answer)
			}
			prev = answer
			return ok, answer
		})
	}
	a.Ready = time.Since(a.Manager.Started)
	t.Logf("Cluster API manager: webhooks answer %s after exec (%s after StartClusterAPI began)",
		a.Ready.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	return a
}

// dryRunCreateClusterWithoutRefs asks kube-apiserver to create, as gvr's
// version, a Cluster the Cluster webhook must refuse.
func (a *ClusterAPI) dryRunCreateClusterWithoutRefs(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "Cluster",
		"metadata": map[string]any{"name": "webhook-probe", "namespace": ClusterAPINamespace},
		// The schema wants at least one field in spec; paused is no ref.
		"spec": map[string]any{"paused": true},
	}}
	_, err := dyn.Resource(gvr).Namespace(ClusterAPINamespace).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// Clusterctl runs clusterctl with args against the cluster as its admin
// (KUBECONFIG), with a config file of its own and the version check off
// (it would ask GitHub or the Go module proxy for the latest release). It
// returns stdout; a failure's error carries stderr.
func (a *ClusterAPI) Clusterctl(t TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.opts.Clusterctl, append([]string{"--config=" + a.clusterctlConfig}, args...)...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+a.c.AdminKubeconfig,
		"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
		"XDG_CONFIG_HOME="+filepath.Join(a.dir, "xdg"),
	)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("clusterctl %s: %w\nstderr: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// clusterAPICRDs reads core/config/crd/bases and gives each CRD that
// core/config/crd/patches gives a conversion webhook that webhook, at
// baseURL plus the patch's path instead of the patch's Service.
func clusterAPICRDs(cfgDir, baseURL string, caBundle []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	conversions := map[string]*apiextensionsv1.CustomResourceConversion{}
	patches, err := filepath.Glob(filepath.Join(cfgDir, "crd", "patches", "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, p := range patches {
		docs, err := yamlDocs(p)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			var patch apiextensionsv1.CustomResourceDefinition
			if err := yaml.Unmarshal(d, &patch); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			conv := patch.Spec.Conversion
			if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
				return nil, fmt.Errorf("%s: no conversion webhook service for %s", p, patch.Name)
			}
			cc := conv.Webhook.ClientConfig
			cc.URL = ptr.To(baseURL + ptr.Deref(cc.Service.Path, "/"))
			cc.Service, cc.CABundle = nil, caBundle
			conversions[patch.Name] = conv
		}
	}

	files, err := filepath.Glob(filepath.Join(cfgDir, "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", filepath.Join(cfgDir, "crd", "bases"))
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		docs, err := yamlDocs(f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(d, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if conv, ok := conversions[crd.Name]; ok {
				crd.Spec.Conversion = conv
				delete(conversions, crd.Name)
			}
			addLabel(&crd.ObjectMeta, ClusterAPIProviderLabel, "cluster-api")
			crds = append(crds, crd)
		}
	}
	if len(conversions) > 0 {
		return nil, fmt.Errorf("conversion patches for CRDs not in crd/bases: %v", sortedKeys(conversions))
	}
	return crds, nil
}

// clusterAPIRBACObjects is core/config/rbac as core/config/default's
// kustomization renders it.
type clusterAPIRBACObjects struct {
	serviceAccounts     []*corev1.ServiceAccount
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
	// aggregatedRules is how many rules the ClusterRoles labelled for
	// aggregation hold: ClusterAPIAggregatedRole has at least as many once
	// kube-controller-manager has aggregated them.
	aggregatedRules int
}

// clusterAPIRBAC reads every manifest of core/config/rbac and applies what
// core/config/default's kustomization does to it: namespace capi-system,
// the capi- name prefix (on names and on the roleRefs and subjects that
// point at them), the provider label, and
// default/manager_role_aggregation_patch.yaml, which labels manager-role
// for aggregation and binds the ServiceAccount to the aggregated role
// instead.
func clusterAPIRBAC(cfgDir string) (*clusterAPIRBACObjects, error) {
	dir := filepath.Join(cfgDir, "rbac")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	r := &clusterAPIRBACObjects{}
	prefixed := func(m *metav1.ObjectMeta, namespaced bool) {
		m.Name = clusterAPINamePrefix + m.Name
		if namespaced {
			m.Namespace = ClusterAPINamespace
		}
		addLabel(m, ClusterAPIProviderLabel, "cluster-api")
	}
	subjects := func(ss []rbacv1.Subject) {
		for i := range ss {
			if ss[i].Kind == rbacv1.ServiceAccountKind {
				ss[i].Name = clusterAPINamePrefix + ss[i].Name
				ss[i].Namespace = ClusterAPINamespace
			}
		}
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		docs, err := yamlDocs(f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(d, &tm); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			switch tm.Kind {
			case "ServiceAccount":
				o := &corev1.ServiceAccount{}
				err = yaml.Unmarshal(d, o)
				prefixed(&o.ObjectMeta, true)
				r.serviceAccounts = append(r.serviceAccounts, o)
			case "ClusterRole":
				o := &rbacv1.ClusterRole{}
				err = yaml.Unmarshal(d, o)
				prefixed(&o.ObjectMeta, false)
				r.clusterRoles = append(r.clusterRoles, o)
			case "ClusterRoleBinding":
				o := &rbacv1.ClusterRoleBinding{}
				err = yaml.Unmarshal(d, o)
				prefixed(&o.ObjectMeta, false)
				o.RoleRef.Name = clusterAPINamePrefix + o.RoleRef.Name
				subjects(o.Subjects)
				r.clusterRoleBindings = append(r.clusterRoleBindings, o)
			case "Role":
				o := &rbacv1.Role{}
				err = yaml.Unmarshal(d, o)
				prefixed(&o.ObjectMeta, true)
				r.roles = append(r.roles, o)
			case "RoleBinding":
				o := &rbacv1.RoleBinding{}
				err = yaml.Unmarshal(d, o)
				prefixed(&o.ObjectMeta, true)
				o.RoleRef.Name = clusterAPINamePrefix + o.RoleRef.Name
				subjects(o.Subjects)
				r.roleBindings = append(r.roleBindings, o)
			default:
				return nil, fmt.Errorf("%s: unexpected kind %q", f, tm.Kind)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	if err := r.aggregationPatch(filepath.Join(cfgDir, "default", "manager_role_aggregation_patch.yaml")); err != nil {
		return nil, err
	}
	if len(r.serviceAccounts) != 1 || r.serviceAccounts[0].Name != ClusterAPIServiceAccount {
		return nil, fmt.Errorf("%s: want the one ServiceAccount %s", dir, ClusterAPIServiceAccount)
	}
	for _, cr := range r.clusterRoles {
		if cr.Labels[ClusterAPIAggregationLabel] == "true" {
			r.aggregatedRules += len(cr.Rules)
		}
	}
	if r.aggregatedRules == 0 {
		return nil, fmt.Errorf("%s: no rules in ClusterRoles labelled %s", dir, ClusterAPIAggregationLabel)
	}
	return r, nil
}

// aggregationPatch applies core/config/default/manager_role_aggregation_patch.yaml
// (a strategic merge patch): its ClusterRoles' labels are added to the
// ClusterRoles of the same name, its ClusterRoleBindings' roleRefs replace
// those of the same name. Names in the patch are before the prefix.
func (r *clusterAPIRBACObjects) aggregationPatch(path string) error {
	docs, err := yamlDocs(path)
	if err != nil {
		return err
	}
	for _, d := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(d, &tm); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		switch tm.Kind {
		case "ClusterRole":
			var p rbacv1.ClusterRole
			if err := yaml.Unmarshal(d, &p); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			i := indexByName(r.clusterRoles, func(o *rbacv1.ClusterRole) string { return o.Name }, clusterAPINamePrefix+p.Name)
			if i < 0 {
				return fmt.Errorf("%s: no ClusterRole %s to patch", path, p.Name)
			}
			for k, v := range p.Labels {
				addLabel(&r.clusterRoles[i].ObjectMeta, k, v)
			}
		case "ClusterRoleBinding":
			var p rbacv1.ClusterRoleBinding
			if err := yaml.Unmarshal(d, &p); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			i := indexByName(r.clusterRoleBindings, func(o *rbacv1.ClusterRoleBinding) string { return o.Name }, clusterAPINamePrefix+p.Name)
			if i < 0 {
				return fmt.Errorf("%s: no ClusterRoleBinding %s to patch", path, p.Name)
			}
			r.clusterRoleBindings[i].RoleRef = p.RoleRef
			r.clusterRoleBindings[i].RoleRef.Name = clusterAPINamePrefix + p.RoleRef.Name
		default:
			return fmt.Errorf("%s: unexpected kind %q", path, tm.Kind)
		}
	}
	return nil
}

// create creates the namespace and the objects, in dependency order.
func (r *clusterAPIRBACObjects) create(ctx context.Context, c *Cluster) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ClusterAPINamespace,
		Labels: map[string]string{ClusterAPIProviderLabel: "cluster-api", "control-plane": "controller-manager"}}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	for _, o := range r.serviceAccounts {
		if _, err := c.Client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ServiceAccount %s: %w", o.Name, err)
		}
	}
	rbac := c.Client.RbacV1()
	for _, o := range r.clusterRoles {
		if _, err := rbac.ClusterRoles().Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ClusterRole %s: %w", o.Name, err)
		}
	}
	for _, o := range r.clusterRoleBindings {
		if _, err := rbac.ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ClusterRoleBinding %s: %w", o.Name, err)
		}
	}
	for _, o := range r.roles {
		if _, err := rbac.Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Role %s: %w", o.Name, err)
		}
	}
	for _, o := range r.roleBindings {
		if _, err := rbac.RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating RoleBinding %s: %w", o.Name, err)
		}
	}
	return nil
}

// clusterAPIWebhooks reads core/config/webhook/manifests.yaml, prefixes the
// configurations' names, and points every webhook at baseURL plus its
// Service path, trusting caBundle.
func clusterAPIWebhooks(cfgDir, baseURL string, caBundle []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	path := filepath.Join(cfgDir, "webhook", "manifests.yaml")
	docs, err := yamlDocs(path)
	if err != nil {
		return nil, nil, err
	}
	toURL := func(name string, cc *admissionregistrationv1.WebhookClientConfig) error {
		if cc.Service == nil || cc.Service.Path == nil {
			return fmt.Errorf("%s: webhook %s has no service path", path, name)
		}
		cc.URL = ptr.To(baseURL + *cc.Service.Path)
		cc.Service, cc.CABundle = nil, caBundle
		return nil
	}
	var m *admissionregistrationv1.MutatingWebhookConfiguration
	var v *admissionregistrationv1.ValidatingWebhookConfiguration
	for _, d := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(d, &tm); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		switch tm.Kind {
		case "MutatingWebhookConfiguration":
			m = &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(d, m); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			m.Name = clusterAPINamePrefix + m.Name
			addLabel(&m.ObjectMeta, ClusterAPIProviderLabel, "cluster-api")
			for i := range m.Webhooks {
				if err := toURL(m.Webhooks[i].Name, &m.Webhooks[i].ClientConfig); err != nil {
					return nil, nil, err
				}
			}
		case "ValidatingWebhookConfiguration":
			v = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(d, v); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			v.Name = clusterAPINamePrefix + v.Name
			addLabel(&v.ObjectMeta, ClusterAPIProviderLabel, "cluster-api")
			for i := range v.Webhooks {
				if err := toURL(v.Webhooks[i].Name, &v.Webhooks[i].ClientConfig); err != nil {
					return nil, nil, err
				}
			}
		default:
			return nil, nil, fmt.Errorf("%s: unexpected kind %q", path, tm.Kind)
		}
	}
	if m == nil || v == nil {
		return nil, nil, fmt.Errorf("%s: want a mutating and a validating webhook configuration", path)
	}
	return m, v, nil
}

// yamlDocs splits a multi-document YAML file, dropping empty documents
// (a leading ---, comments only).
func yamlDocs(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		d, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var probe map[string]any
		if err := yaml.Unmarshal(d, &probe); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(probe) > 0 {
			docs = append(docs, d)
		}
	}
}

func addLabel(m *metav1.ObjectMeta, k, v string) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[k] = v
}

func indexByName[T any](items []T, name func(T) string, want string) int {
	for i, it := range items {
		if name(it) == want {
			return i
		}
	}
	return -1
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
