// Package translate turns a tenant's Pod, bound by the tenant's scheduler to
// a virtual Node, into the host Pod the syncer creates in the tenant's
// workload namespace. It is pure: a tenant Pod and a Context in, a host Pod
// (or the reasons it is refused) out, golden-tested.
//
// The host spec is built field by field from an allow-list: a field not
// named here is not copied, so a field Kubernetes adds tomorrow does not
// reach the provider's nodes until it is listed. Placement, priority,
// runtime and identity are the provider's; what would give a tenant pod
// more than the workload namespace's Pod Security level is refused, with
// the reasons the tenant sees on its pod, and nothing runs on the host.
package translate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/tenant/names"
)

// Context is what the translation needs besides the tenant pod.
type Context struct {
	// WorkloadNamespace is the host namespace of every synced object.
	WorkloadNamespace string
	// APIServerHost and APIServerPort reach the tenant's kube-apiserver from
	// a host pod (its Service in the management namespace). They replace
	// the tenant's default/kubernetes Service, whose ClusterIP is the
	// management cluster's own apiserver in Shared mode.
	APIServerHost string
	APIServerPort int32
	// Nameserver is the tenant DNS a host pod resolves through. The
	// management kubelet has no cluster DNS, and a pod must never fall back
	// to the node's resolv.conf (it forwards off the machine).
	Nameserver string
	// DNSDomain is the tenant's cluster domain, for the search path.
	DNSDomain string
	// Services are the tenant Services of the pod's namespace, for the
	// service-link environment when the pod enables it.
	Services []corev1.Service
	// Level is the workload namespace's Pod Security level, checked here so
	// that a pod the host would refuse is refused with a reason in the
	// tenant instead of half-created.
	Level api.Level
	// RuntimeClasses are the runtime classes the provider allows tenant
	// pods to name.
	RuntimeClasses []string
	// MaxGracePeriodSeconds bounds terminationGracePeriodSeconds.
	MaxGracePeriodSeconds int64
	// AllowNetRaw keeps the container runtime's default CAP_NET_RAW in
	// host containers. Off, every host container drops it: a tenant
	// container running as root could otherwise forge packets (ARP, other
	// pods' source addresses) on a bridge network it shares with other
	// tenants' pods.
	AllowNetRaw bool
	// MaxEmptyDirSize bounds the sizeLimit of emptyDir volumes, and is the
	// sizeLimit of those that set none; zero is names.MaxEmptyDirSize.
	MaxEmptyDirSize resource.Quantity
	// PullAlways makes every host container whose image is not one of
	// CachedImages pull with imagePullPolicy Always (red-team finding 6):
	// the kubelet then asks the registry, with the tenant's own pull
	// secrets, before it runs an image, so a tenant cannot run another
	// tenant's private image or the provider's from the node's cache.
	// CachedImages are what the provider lets tenants run from the cache
	// as they ask (the tenant DNS addon's image, for one).
	PullAlways   bool
	CachedImages []string

	// Per pod: its tenant namespace's labels, and whether a tenant
	// NetworkPolicy isolates it for ingress or egress (PodLabels).
	NamespaceLabels                 map[string]string
	IngressIsolated, EgressIsolated bool
}

// Token is a service-account token the syncer must request from the tenant
// apiserver (TokenRequest, bound to the tenant pod) and keep, refreshed,
// under Key of the pod's Secret (Result.SecretName).
type Token struct {
	Key               string `json:"key"`
	Audience          string `json:"audience,omitempty"`
	ExpirationSeconds int64  `json:"expirationSeconds"`
}

// Result is a translated pod.
type Result struct {
	Pod *corev1.Pod
	// SecretName is the pod's own Secret, empty when the pod mounts none;
	// SecretData is its content besides the tokens: the tenant's
	// downward-API values that differ on the host (the pod's tenant name,
	// namespace and UID).
	SecretName string
	SecretData map[string][]byte
	Tokens     []Token
	// ConfigMaps and Secrets are the tenant objects (in the pod's
	// namespace) the pod references, which must be synced before it runs.
	ConfigMaps, Secrets []string
	// Claims are the tenant PersistentVolumeClaims its volumes use (a
	// generic ephemeral volume's included), whose host claims must exist.
	Claims []string
}

// PodSecretName is the name of the host pod host's own Secret.
func PodSecretName(host string) string { return names.Derived(host, "pod") }

// Keys of the pod's own Secret.
const (
	keyName      = "metadata.name"
	keyNamespace = "metadata.namespace"
	keyUID       = "metadata.uid"
)

// defaultTokenExpiration is what the kubelet asks for when a projection
// names none (an hour).
const defaultTokenExpiration = 3600

var evaluator = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("pod security evaluator: %v", err))
	}
	return e
}()

// Pod translates tenant. It refuses (a non-empty ErrorList, the paths in
// the tenant pod's terms) rather than dropping anything that would change
// what the pod does; fields that only steer the tenant's own scheduler
// (affinity, tolerations, priority, topology spread, readiness gates) are
// left out of the host pod, which is pinned to the node the tenant chose.
func Pod(tenant *corev1.Pod, c Context) (*Result, field.ErrorList) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	node := tenant.Spec.NodeName
	if node == "" {
		errs = append(errs, field.Required(spec.Child("nodeName"), "the pod is not bound to a node yet"))
	}
	ts := &tenant.Spec
	// Host namespaces, privilege, capabilities, hostPath and host ports are
	// copied as asked and refused by the Pod Security check below, in its
	// words, so the tenant sees what the host would have said.
	if ts.RuntimeClassName != nil && !slices.Contains(c.RuntimeClasses, *ts.RuntimeClassName) {
		errs = append(errs, field.NotSupported(spec.Child("runtimeClassName"), *ts.RuntimeClassName, c.RuntimeClasses))
	}
	maxGrace := c.maxGracePeriod()
	if g := ts.TerminationGracePeriodSeconds; g != nil && *g > maxGrace {
		errs = append(errs, field.Invalid(spec.Child("terminationGracePeriodSeconds"), *g, fmt.Sprintf("must be at most %d", maxGrace)))
	}
	if len(ts.ResourceClaims) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("resourceClaims"), "dynamic resources are not available to tenant pods"))
	}
	if len(ts.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "ephemeral containers are not synced"))
	}

	host := names.Host(tenant.Namespace, tenant.Name)
	podSecret := PodSecretName(host)
	r := &Result{SecretData: map[string][]byte{
		keyName:      []byte(tenant.Name),
		keyNamespace: []byte(tenant.Namespace),
		keyUID:       []byte(tenant.UID),
	}}
	refs := &refs{ns: tenant.Namespace, pod: tenant.Name, podSecret: podSecret, result: r, maxEmptyDir: c.maxEmptyDirSize()}

	errs = append(errs, checkImages(ts.InitContainers, spec.Child("initContainers"))...)
	errs = append(errs, checkImages(ts.Containers, spec.Child("containers"))...)
	volumes, verrs := refs.volumes(ts.Volumes, spec.Child("volumes"))
	errs = append(errs, verrs...)
	dnsCfg, derrs := dnsConfig(tenant, c, spec.Child("dnsConfig"))
	errs = append(errs, derrs...)

	hs := corev1.PodSpec{
		Volumes:                       volumes,
		InitContainers:                refs.containers(ts.InitContainers, tenant),
		Containers:                    refs.containers(ts.Containers, tenant),
		RestartPolicy:                 ts.RestartPolicy,
		TerminationGracePeriodSeconds: ts.TerminationGracePeriodSeconds,
		ActiveDeadlineSeconds:         ts.ActiveDeadlineSeconds,
		// The host namespace's default ServiceAccount, with no token: the
		// pod's identity is the tenant's, in the tenant's tokens.
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext:              ts.SecurityContext.DeepCopy(),
		ImagePullSecrets:             refs.pullSecrets(ts.ImagePullSecrets),
		// The pod keeps its tenant hostname; the host name is not its.
		Hostname:              hostname(tenant),
		Subdomain:             ts.Subdomain,
		SetHostnameAsFQDN:     ts.SetHostnameAsFQDN,
		ShareProcessNamespace: ts.ShareProcessNamespace,
		HostAliases:           hostAliases(ts.HostAliases, c),
		DNSPolicy:             corev1.DNSNone,
		DNSConfig:             dnsCfg,
		OS:                    ts.OS.DeepCopy(),
		Resources:             ts.Resources.DeepCopy(),
		Affinity:              pinTo(node),
		HostNetwork:           ts.HostNetwork,
		HostPID:               ts.HostPID,
		HostIPC:               ts.HostIPC,
		HostUsers:             ts.HostUsers,
	}
	env := serviceEnv(tenant, c)
	for i := range hs.Containers {
		hs.Containers[i].Env = append(slices.Clone(env), hs.Containers[i].Env...)
	}
	for i := range hs.InitContainers {
		hs.InitContainers[i].Env = append(slices.Clone(env), hs.InitContainers[i].Env...)
	}
	if c.PullAlways {
		pullAlways(hs.InitContainers, c.CachedImages)
		pullAlways(hs.Containers, c.CachedImages)
	}
	if !c.AllowNetRaw {
		// Adding NET_RAW back is refused by the Pod Security check below
		// (baseline does not allow it), so a drop cannot be undone.
		dropNetRaw(hs.InitContainers)
		dropNetRaw(hs.Containers)
	}
	errs = append(errs, refs.errs...)

	annotations := DownwardAnnotations(tenant)
	if n := downwardBytes(annotations); n > MaxDownwardBytes {
		errs = append(errs, field.Forbidden(field.NewPath("metadata"), fmt.Sprintf(
			"the labels and annotations the pod's downward-API volumes read total %d bytes; at most %d are carried to the shared data plane", n, MaxDownwardBytes)))
	}
	annotations[names.TenantNameAnnotation] = tenant.Name
	annotations[TenantGenerationAnnotation] = strconv.FormatInt(tenant.Generation, 10)
	hostPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        host,
			Namespace:   c.WorkloadNamespace,
			Labels:      PodLabels(tenant, c),
			Annotations: annotations,
		},
		Spec: hs,
	}
	// Only baseline and restricted: a privileged workload namespace would
	// hand tenants the provider's nodes.
	level := c.Level
	if level != api.LevelRestricted {
		level = api.LevelBaseline
	}
	for _, res := range evaluator.EvaluatePod(api.LevelVersion{Level: level, Version: api.LatestVersion()}, &hostPod.ObjectMeta, &hostPod.Spec) {
		if !res.Allowed {
			msg := res.ForbiddenReason
			if res.ForbiddenDetail != "" {
				msg += " (" + res.ForbiddenDetail + ")"
			}
			errs = append(errs, field.Forbidden(spec, fmt.Sprintf("pod security level %q: %s", level, msg)))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	slices.Sort(r.ConfigMaps)
	r.ConfigMaps = slices.Compact(r.ConfigMaps)
	slices.Sort(r.Secrets)
	r.Secrets = slices.Compact(r.Secrets)
	r.Pod = hostPod
	if !refs.usesPodSecret {
		r.SecretData = nil
	} else {
		r.SecretName = podSecret
	}
	return r, nil
}

func (c Context) maxEmptyDirSize() resource.Quantity {
	if c.MaxEmptyDirSize.IsZero() {
		return resource.MustParse(names.MaxEmptyDirSize)
	}
	return c.MaxEmptyDirSize
}

func (c Context) maxGracePeriod() int64 {
	if c.MaxGracePeriodSeconds == 0 {
		return names.MaxGracePeriodSeconds
	}
	return c.MaxGracePeriodSeconds
}

// DeletionGracePeriod is the grace period to delete a host pod with when
// its tenant pod is deleted with grace (nil: the host pod's own, already
// bounded). The tenant apiserver accepts any grace on a delete, so the
// bound on terminationGracePeriodSeconds would mean nothing if a delete
// could carry a longer one to the host: the pod would hold its node and
// quota for as long as the tenant asked.
func DeletionGracePeriod(tenant *int64, c Context) *int64 {
	if tenant == nil {
		return nil
	}
	return ptr.To(min(*tenant, c.maxGracePeriod()))
}

// HostLabels are the labels that record a host object's tenant identity
// (namespace, and the UID when the object has one) and the syncer's
// managed-by.
func HostLabels(tenantNamespace, uid string) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/managed-by": names.ManagedByValue,
		names.TenantNamespaceLabel:     tenantNamespace,
	}
	if uid != "" {
		l[names.TenantUIDLabel] = uid
	}
	return l
}

// PodLabels are a host pod's labels: its identity, the tenant pod's own
// labels and its namespace's, each under a capn-owned key (red-team
// finding 8: a provider selector must never take in a tenant pod), and
// the NetworkPolicy isolation markers c names. Translated Service
// selectors and NetworkPolicies select by the carried keys.
func PodLabels(tenant *corev1.Pod, c Context) map[string]string {
	l := HostLabels(tenant.Namespace, string(tenant.UID))
	for k, v := range tenant.Labels {
		l[names.TenantLabelKey(k)] = v
	}
	for k, v := range c.NamespaceLabels {
		l[names.NamespaceLabelKey(k)] = v
	}
	if c.IngressIsolated {
		l[names.IngressIsolatedLabel] = "true"
	}
	if c.EgressIsolated {
		l[names.EgressIsolatedLabel] = "true"
	}
	return l
}

// pinTo is a required node affinity to the real node behind the virtual
// one the tenant scheduler chose. Not spec.nodeName: the host scheduler
// then still admits the pod and accounts for its resources.
func pinTo(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}},
		},
	}}
}

func hostname(p *corev1.Pod) string {
	if p.Spec.Hostname != "" {
		return p.Spec.Hostname
	}
	// As the kubelet does: the pod name, cut to a label, no trailing dot
	// or dash.
	h := p.Name
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// kubernetesNames are the names of the tenant's default/kubernetes
// Service, resolved from /etc/hosts to the tenant apiserver.
func kubernetesNames(domain string) []string {
	return []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + domain}
}

func hostAliases(tenant []corev1.HostAlias, c Context) []corev1.HostAlias {
	out := []corev1.HostAlias{{IP: c.APIServerHost, Hostnames: kubernetesNames(c.DNSDomain)}}
	for _, a := range tenant {
		out = append(out, *a.DeepCopy())
	}
	return out
}

// Bounds of a pod's DNS config, as Kubernetes validates them
// (k8s.io/kubernetes/pkg/apis/core/validation): the merged config must meet
// them, or the host apiserver refuses the pod in its own words.
const (
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// dnsConfig points the pod at the tenant DNS with the search path the
// kubelet would give it, or, with dnsPolicy None, at the tenant's own
// config. Either way the only nameserver is the tenant DNS: any other
// would let the pod query a resolver on the provider's network (the
// management cluster's DNS names every management Service).
func dnsConfig(p *corev1.Pod, c Context, path *field.Path) (*corev1.PodDNSConfig, field.ErrorList) {
	var errs field.ErrorList
	tc := p.Spec.DNSConfig
	if tc == nil {
		tc = &corev1.PodDNSConfig{}
	}
	for i, ns := range tc.Nameservers {
		if ns != c.Nameserver {
			errs = append(errs, field.Invalid(path.Child("nameservers").Index(i), ns,
				fmt.Sprintf("only the cluster DNS %s may be named: the pod resolves through its cluster's DNS only", c.Nameserver)))
		}
	}
	var cfg *corev1.PodDNSConfig
	if p.Spec.DNSPolicy == corev1.DNSNone && p.Spec.DNSConfig != nil {
		cfg = tc.DeepCopy()
		if len(cfg.Nameservers) == 0 {
			errs = append(errs, field.Required(path.Child("nameservers"), fmt.Sprintf("with dnsPolicy None, name the cluster DNS %s", c.Nameserver)))
		}
		// The kubelet writes each nameserver once; so does the syncer.
		cfg.Nameservers = slices.Compact(cfg.Nameservers)
	} else {
		d := c.DNSDomain
		cfg = &corev1.PodDNSConfig{
			Nameservers: []string{c.Nameserver},
			Searches:    append([]string{p.Namespace + ".svc." + d, "svc." + d, d}, tc.Searches...),
			Options:     append([]corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("5")}}, tc.Options...),
		}
	}
	if n := len(cfg.Searches); n > maxDNSSearchPaths {
		errs = append(errs, field.TooMany(path.Child("searches"), n, maxDNSSearchPaths))
	}
	if n := len(strings.Join(cfg.Searches, " ")); n > maxDNSSearchListChars {
		errs = append(errs, field.TooLong(path.Child("searches"), "", maxDNSSearchListChars))
	}
	return cfg, errs
}

// serviceEnv is the environment the kubelet would have given the pod in
// the tenant: the tenant apiserver as KUBERNETES_SERVICE_*, and, when the
// pod enables service links, every Service of its namespace.
func serviceEnv(p *corev1.Pod, c Context) []corev1.EnvVar {
	port := strconv.Itoa(int(c.APIServerPort))
	env := []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: c.APIServerHost},
		{Name: "KUBERNETES_SERVICE_PORT", Value: port},
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: port},
		{Name: "KUBERNETES_PORT", Value: "tcp://" + c.APIServerHost + ":" + port},
		{Name: "KUBERNETES_PORT_" + port + "_TCP", Value: "tcp://" + c.APIServerHost + ":" + port},
		{Name: "KUBERNETES_PORT_" + port + "_TCP_PROTO", Value: "tcp"},
		{Name: "KUBERNETES_PORT_" + port + "_TCP_PORT", Value: port},
		{Name: "KUBERNETES_PORT_" + port + "_TCP_ADDR", Value: c.APIServerHost},
	}
	if p.Spec.EnableServiceLinks != nil && !*p.Spec.EnableServiceLinks {
		return env
	}
	svcs := slices.Clone(c.Services)
	slices.SortFunc(svcs, func(a, b corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range svcs {
		if s.Namespace != p.Namespace || s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
			continue
		}
		if p.Namespace == "default" && s.Name == "kubernetes" {
			continue // the tenant apiserver, above
		}
		env = append(env, linkEnv(s)...)
	}
	return env
}

// linkEnv is the kubelet's service-link variables for one Service.
func linkEnv(s corev1.Service) []corev1.EnvVar {
	prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	ip := s.Spec.ClusterIP
	first := s.Spec.Ports[0]
	env := []corev1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(first.Port))},
	}
	for _, sp := range s.Spec.Ports {
		if sp.Name != "" {
			env = append(env, corev1.EnvVar{Name: prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(sp.Name, "-", "_")), Value: strconv.Itoa(int(sp.Port))})
		}
	}
	proto := strings.ToLower(string(first.Protocol))
	if proto == "" {
		proto = "tcp"
	}
	env = append(env, corev1.EnvVar{Name: prefix + "_PORT", Value: fmt.Sprintf("%s://%s:%d", proto, ip, first.Port)})
	for _, sp := range s.Spec.Ports {
		pr := string(sp.Protocol)
		if pr == "" {
			pr = string(corev1.ProtocolTCP)
		}
		base := fmt.Sprintf("%s_PORT_%d_%s", prefix, sp.Port, strings.ToUpper(pr))
		env = append(env,
			corev1.EnvVar{Name: base, Value: fmt.Sprintf("%s://%s:%d", strings.ToLower(pr), ip, sp.Port)},
			corev1.EnvVar{Name: base + "_PROTO", Value: strings.ToLower(pr)},
			corev1.EnvVar{Name: base + "_PORT", Value: strconv.Itoa(int(sp.Port))},
			corev1.EnvVar{Name: base + "_ADDR", Value: ip},
		)
	}
	return env
}

// refs rewrites what a pod references in its namespace to host names, and
// collects what must be synced.
type refs struct {
	ns, pod, podSecret string
	result             *Result
	errs               field.ErrorList
	// usesPodSecret: a volume projects from the pod's own Secret.
	usesPodSecret bool
	maxEmptyDir   resource.Quantity
}

func (r *refs) configMap(name string) string {
	r.result.ConfigMaps = append(r.result.ConfigMaps, name)
	return names.Host(r.ns, name)
}

func (r *refs) secret(name string) string {
	r.result.Secrets = append(r.result.Secrets, name)
	return names.Host(r.ns, name)
}

// claim is the host claim of the tenant claim name.
func (r *refs) claim(name string) string {
	r.result.Claims = append(r.result.Claims, name)
	return names.Host(r.ns, name)
}

func (r *refs) pullSecrets(in []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, s := range in {
		out = append(out, corev1.LocalObjectReference{Name: r.secret(s.Name)})
	}
	return out
}

// volumes allows emptyDir, configMap, secret, downwardAPI and projected
// sources, the ones a pod's own namespace can back, and claims, which name
// their host claims (a generic ephemeral volume is the claim the tenant's
// controller made for it, named as upstream names it); anything that
// mounts the node is refused. An emptyDir always has a sizeLimit, so the
// kubelet evicts a pod that fills it past the bound.
func (r *refs) volumes(in []corev1.Volume, p *field.Path) ([]corev1.Volume, field.ErrorList) {
	var out []corev1.Volume
	var errs field.ErrorList
	for i, v := range in {
		vp := p.Index(i)
		src := v.VolumeSource
		hv := corev1.Volume{Name: v.Name}
		switch {
		case src.EmptyDir != nil:
			ed := src.EmptyDir.DeepCopy()
			switch {
			case ed.SizeLimit == nil:
				ed.SizeLimit = ptr.To(r.maxEmptyDir.DeepCopy())
			case ed.SizeLimit.Cmp(r.maxEmptyDir) > 0:
				errs = append(errs, field.Invalid(vp.Child("emptyDir", "sizeLimit"), ed.SizeLimit.String(),
					fmt.Sprintf("must be at most %s: emptyDir volumes share the node's disk and memory with other tenants' pods", r.maxEmptyDir.String())))
			}
			hv.EmptyDir = ed
		case src.ConfigMap != nil:
			cm := src.ConfigMap.DeepCopy()
			cm.Name = r.configMap(cm.Name)
			hv.ConfigMap = cm
		case src.Secret != nil:
			s := src.Secret.DeepCopy()
			s.SecretName = r.secret(s.SecretName)
			hv.Secret = s
		case src.DownwardAPI != nil:
			hv.Projected = &corev1.ProjectedVolumeSource{DefaultMode: src.DownwardAPI.DefaultMode, Sources: r.downwardAPI(src.DownwardAPI.Items)}
		case src.Projected != nil:
			pv, perrs := r.projected(v.Name, src.Projected, vp.Child("projected"))
			errs = append(errs, perrs...)
			hv.Projected = pv
		case src.PersistentVolumeClaim != nil:
			hv.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: r.claim(src.PersistentVolumeClaim.ClaimName), ReadOnly: src.PersistentVolumeClaim.ReadOnly}
		case src.Ephemeral != nil:
			hv.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: r.claim(r.pod + "-" + v.Name)}
		default:
			errs = append(errs, field.Forbidden(vp, "only emptyDir, configMap, secret, downwardAPI, projected, persistentVolumeClaim and ephemeral volumes run on the shared data plane"))
			continue
		}
		out = append(out, hv)
	}
	return out, errs
}

// tenantField reports the pod-secret key for downward-API fields whose
// host value differs from the tenant's.
func tenantField(f *corev1.ObjectFieldSelector) (string, bool) {
	if f == nil {
		return "", false
	}
	switch f.FieldPath {
	case "metadata.name":
		return keyName, true
	case "metadata.namespace":
		return keyNamespace, true
	case "metadata.uid":
		return keyUID, true
	}
	return "", false
}

// downwardAPI splits items: the pod's tenant name, namespace and UID come
// from the pod's Secret; its labels and annotations from the host pod's
// downward annotations (DownwardAnnotations), which follow the tenant's
// edits; resources and the rest stay downward.
func (r *refs) downwardAPI(items []corev1.DownwardAPIVolumeFile) []corev1.VolumeProjection {
	var fromSecret []corev1.KeyToPath
	var down []corev1.DownwardAPIVolumeFile
	for _, it := range items {
		if key, ok := tenantField(it.FieldRef); ok {
			fromSecret = append(fromSecret, corev1.KeyToPath{Key: key, Path: it.Path, Mode: it.Mode})
			continue
		}
		d := *it.DeepCopy()
		if d.FieldRef != nil {
			if a, ok := downwardAnnotation(d.FieldRef.FieldPath); ok {
				d.FieldRef.FieldPath = annotationPath(a)
			}
		}
		down = append(down, d)
	}
	var out []corev1.VolumeProjection
	if len(down) > 0 {
		out = append(out, corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: down}})
	}
	if len(fromSecret) > 0 {
		r.usesPodSecret = true
		out = append(out, corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: r.podSecret}, Items: fromSecret}})
	}
	return out
}

func (r *refs) projected(volume string, in *corev1.ProjectedVolumeSource, p *field.Path) (*corev1.ProjectedVolumeSource, field.ErrorList) {
	out := &corev1.ProjectedVolumeSource{DefaultMode: in.DefaultMode}
	var errs field.ErrorList
	for i, s := range in.Sources {
		sp := p.Child("sources").Index(i)
		switch {
		case s.ServiceAccountToken != nil:
			t := s.ServiceAccountToken
			exp := int64(defaultTokenExpiration)
			if t.ExpirationSeconds != nil {
				exp = *t.ExpirationSeconds
			}
			key := fmt.Sprintf("token.%s.%d", volume, i)
			r.usesPodSecret = true
			r.result.Tokens = append(r.result.Tokens, Token{Key: key, Audience: t.Audience, ExpirationSeconds: exp})
			out.Sources = append(out.Sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: r.podSecret},
				Items:                []corev1.KeyToPath{{Key: key, Path: t.Path}},
			}})
		case s.ConfigMap != nil:
			cm := s.ConfigMap.DeepCopy()
			cm.Name = r.configMap(cm.Name)
			out.Sources = append(out.Sources, corev1.VolumeProjection{ConfigMap: cm})
		case s.Secret != nil:
			sec := s.Secret.DeepCopy()
			sec.Name = r.secret(sec.Name)
			out.Sources = append(out.Sources, corev1.VolumeProjection{Secret: sec})
		case s.DownwardAPI != nil:
			out.Sources = append(out.Sources, r.downwardAPI(s.DownwardAPI.Items)...)
		default:
			errs = append(errs, field.Forbidden(sp, "only serviceAccountToken, configMap, secret and downwardAPI projections are synced"))
		}
	}
	return out, errs
}

// containers copies each container's allowed fields, with references
// renamed and the downward-API env that differs on the host made literal.
func (r *refs) containers(in []corev1.Container, p *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range in {
		hc := corev1.Container{
			Name:                     c.Name,
			Image:                    c.Image,
			Command:                  slices.Clone(c.Command),
			Args:                     slices.Clone(c.Args),
			WorkingDir:               c.WorkingDir,
			Ports:                    slices.Clone(c.Ports),
			Resources:                *c.Resources.DeepCopy(),
			ResizePolicy:             slices.Clone(c.ResizePolicy),
			RestartPolicy:            c.RestartPolicy,
			VolumeMounts:             slices.Clone(c.VolumeMounts),
			LivenessProbe:            c.LivenessProbe.DeepCopy(),
			ReadinessProbe:           c.ReadinessProbe.DeepCopy(),
			StartupProbe:             c.StartupProbe.DeepCopy(),
			Lifecycle:                c.Lifecycle.DeepCopy(),
			TerminationMessagePath:   c.TerminationMessagePath,
			TerminationMessagePolicy: c.TerminationMessagePolicy,
			ImagePullPolicy:          c.ImagePullPolicy,
			SecurityContext:          c.SecurityContext.DeepCopy(),
			Stdin:                    c.Stdin,
			StdinOnce:                c.StdinOnce,
			TTY:                      c.TTY,
		}
		for _, e := range c.Env {
			he := *e.DeepCopy()
			if e.ValueFrom != nil {
				switch vf := he.ValueFrom; {
				case vf.FieldRef != nil:
					if v, ok := literalField(vf.FieldRef, p); ok {
						he.Value, he.ValueFrom = v, nil
					} else if a, ok := downwardAnnotation(vf.FieldRef.FieldPath); ok {
						// Read at each container start, as the kubelet
						// reads the tenant's: a restart sees an edit.
						vf.FieldRef.FieldPath = annotationPath(a)
					}
				case vf.ConfigMapKeyRef != nil:
					vf.ConfigMapKeyRef.Name = r.configMap(vf.ConfigMapKeyRef.Name)
				case vf.SecretKeyRef != nil:
					vf.SecretKeyRef.Name = r.secret(vf.SecretKeyRef.Name)
				}
			}
			hc.Env = append(hc.Env, he)
		}
		for _, ef := range c.EnvFrom {
			he := *ef.DeepCopy()
			if he.ConfigMapRef != nil {
				he.ConfigMapRef.Name = r.configMap(he.ConfigMapRef.Name)
			}
			if he.SecretRef != nil {
				he.SecretRef.Name = r.secret(he.SecretRef.Name)
			}
			hc.EnvFrom = append(hc.EnvFrom, he)
		}
		out = append(out, hc)
	}
	return out
}

// netRaw is the capability dropped unless the provider allows it.
const netRaw corev1.Capability = "NET_RAW"

// pullAlways sets imagePullPolicy Always on each container whose image is
// not exactly one of cached.
func pullAlways(cs []corev1.Container, cached []string) {
	for i := range cs {
		if !slices.Contains(cached, cs[i].Image) {
			cs[i].ImagePullPolicy = corev1.PullAlways
		}
	}
}

// dropNetRaw adds NET_RAW to each container's dropped capabilities, after
// the tenant's own drops, unless they drop it or ALL already.
func dropNetRaw(cs []corev1.Container) {
	for i := range cs {
		sc := cs[i].SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
			cs[i].SecurityContext = sc
		}
		if sc.Capabilities == nil {
			sc.Capabilities = &corev1.Capabilities{}
		}
		if !slices.Contains(sc.Capabilities.Drop, netRaw) && !slices.Contains(sc.Capabilities.Drop, "ALL") {
			sc.Capabilities.Drop = append(sc.Capabilities.Drop, netRaw)
		}
	}
}

// literalField is the tenant value of a downward-API env field that
// differs on the host and never changes.
func literalField(f *corev1.ObjectFieldSelector, p *corev1.Pod) (string, bool) {
	switch f.FieldPath {
	case "metadata.name":
		return p.Name, true
	case "metadata.namespace":
		return p.Namespace, true
	case "metadata.uid":
		return string(p.UID), true
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, true
	}
	return "", false
}
