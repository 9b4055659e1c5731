package builders

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
	cmdsyncer "capn.dev/capn/pkg/cmd/syncer"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/pkg/versions"
)

// DataPlane is the provider's side of the Shared data plane
// (capn-apiserver's --data-plane-* and --tenant-* flags). A tenant's
// spec.dataPlane can only narrow it.
type DataPlane struct {
	// NodeSelector picks the management nodes that may run tenant pods;
	// spec.dataPlane.nodeSelector is ANDed with it.
	NodeSelector map[string]string
	// Tolerations of every tenant pod on the host, each in
	// placement.ParseToleration's form.
	Tolerations []string
	// PodSecurity is the level tenant pods must meet: baseline or
	// restricted; empty means baseline.
	PodSecurity string
	// Quota is the workload namespace's ResourceQuota where
	// spec.dataPlane.quota names nothing.
	Quota corev1.ResourceList
	// SyncerImage is capn-syncer's image unless spec.syncer.image is one
	// of the provider's others; empty means DefaultSyncerImage.
	SyncerImage string
	// RuntimeClasses tenant pods may name.
	RuntimeClasses []string
	// DNSImage is the DNS addon's image unless spec.dns.image names one;
	// empty means versions.CoreDNSImage. DNSUpstreams are the resolvers it
	// forwards outside names to; empty forwards nothing.
	DNSImage     string
	DNSUpstreams []string
	// MetricsImage is the metrics addon's image unless spec.metrics.image
	// names one; empty means versions.MetricsServerImage.
	MetricsImage string
	// PullAlways and CachedImages are the syncer's --pull-always and
	// --cached-images (red-team finding 6), from template revision 5 on.
	PullAlways   bool
	CachedImages []string
	// StorageClasses are the management StorageClasses tenant claims may
	// name; empty: the syncer serves the management default class. Only a
	// list reaches the syncer's flags, so a provider who keeps the default
	// rolls no syncer.
	StorageClasses []string
}

// DefaultSyncerImage is the image `make images` builds.
const DefaultSyncerImage = "capn.dev/capn-syncer:dev"

// syncerHealthPort serves the syncer's /healthz and /readyz;
// syncerWebhookPort the tenant's Service admission webhook and
// syncerKubeletPort the virtual Nodes' kubelet API (both HTTPS, called by
// the tenant apiserver at the leader's pod IP); syncerMetricsPort their
// resource metrics, scraped by the tenant's metrics-server from the
// workload namespace.
const (
	syncerHealthPort  = cmdsyncer.HealthPort
	syncerWebhookPort = cmdsyncer.WebhookPort
	syncerKubeletPort = cmdsyncer.KubeletPort
	syncerMetricsPort = cmdsyncer.KubeletMetricsPort
)

// DefaultWorkloadQuota is the workload namespace's quota when the
// provider sets none: room for a small team's workloads.
func DefaultWorkloadQuota() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourcePods:           resource.MustParse("50"),
		corev1.ResourceRequestsCPU:    resource.MustParse("4"),
		corev1.ResourceRequestsMemory: resource.MustParse("8Gi"),
		corev1.ResourceLimitsCPU:      resource.MustParse("8"),
		corev1.ResourceLimitsMemory:   resource.MustParse("16Gi"),
		// The node's disk the tenant's containers may claim: every
		// container has a request and limit (the LimitRange's defaults).
		corev1.ResourceRequestsEphemeralStorage: resource.MustParse("10Gi"),
		corev1.ResourceLimitsEphemeralStorage:   resource.MustParse("20Gi"),
		corev1.ResourceServices:                 resource.MustParse("50"),
		corev1.ResourceConfigMaps:               resource.MustParse("100"),
		corev1.ResourceSecrets:                  resource.MustParse("100"),
		// The tenant's NetworkPolicies, and capn's three.
		validation.ResourceNetworkPolicies: resource.MustParse("100"),
		// Persistent volumes: the provider's disk, under every class.
		corev1.ResourceRequestsStorage:        resource.MustParse("10Gi"),
		corev1.ResourcePersistentVolumeClaims: resource.MustParse("10"),
	}
}

// Workload-namespace object names.
const (
	// WorkloadPolicyName names the workload namespace's NetworkPolicy
	// for its tenant apiserver, LimitRange and ResourceQuota.
	WorkloadPolicyName = "capn-workloads"
	// WorkloadIngressPolicyName and WorkloadEgressPolicyName let the
	// tenant's pods reach each other: those its own NetworkPolicies do
	// not isolate.
	WorkloadIngressPolicyName = "capn-workloads-ingress"
	WorkloadEgressPolicyName  = "capn-workloads-egress"
	// NetworkPolicySyncer confines the syncer pods in the control-plane
	// namespace.
	NetworkPolicySyncer = "capn-syncer"
)

func shared(nc *v1alpha1.NestedCluster) bool {
	return nc.Spec.DataPlane.Mode == v1alpha1.DataPlaneShared
}

// Syncer builds capn-syncer and what it needs in the control-plane
// namespace: its ServiceAccount (its management identity), a Deployment
// reading its tenant kubeconfig, and a PDB with more than one replica
// (its NetworkPolicy is with the others). Nothing in None mode.
func Syncer(nc *v1alpha1.NestedCluster, p Params) ([]Object, error) {
	if !shared(nc) {
		return nil, nil
	}
	replicas, err := replicasOf(nc.Spec.Syncer.Replicas, "spec.syncer.replicas")
	if err != nil {
		return nil, err
	}
	const component = v1alpha1.ComponentSyncer
	replicas = DesiredReplicas(nc, component, replicas, p.Asleep, p.Restoring)
	dp := p.DataPlane
	image := dp.SyncerImage
	if image == "" {
		image = DefaultSyncerImage
	}
	level := dp.PodSecurity
	if level == "" {
		level = "baseline"
	}
	port := nc.Spec.APIServer.Service.Port
	host := p.APIServerServiceIP
	if host == "" {
		host = provisioner.APIServerName + "." + provisioner.NamespaceOf(nc, p.Addresses()) + ".svc"
	}
	flags := map[string]string{
		cmdsyncer.FlagTenantKubeconfig:        profiles.PKIDir + "/" + profiles.FileKubeconfig,
		cmdsyncer.FlagWorkloadNamespace:       provisioner.WorkloadNamespace(nc),
		cmdsyncer.FlagTenantAPIServerAddress:  host + ":" + strconv.Itoa(int(port)),
		cmdsyncer.FlagTenantDNSDomain:         nc.Spec.ClusterNetwork.DNSDomain,
		cmdsyncer.FlagTenantPodSecurity:       level,
		cmdsyncer.FlagHostNodeSelector:        hostNodeSelector(dp.NodeSelector, nc.Spec.DataPlane.NodeSelector),
		cmdsyncer.FlagHostTolerations:         strings.Join(dp.Tolerations, ","),
		cmdsyncer.FlagAllowedRuntimeClasses:   strings.Join(dp.RuntimeClasses, ","),
		cmdsyncer.FlagLeaderElect:             "true",
		cmdsyncer.FlagHealthAddress:           ":" + strconv.Itoa(syncerHealthPort),
		cmdsyncer.FlagWebhookBindAddress:      ":" + strconv.Itoa(syncerWebhookPort),
		cmdsyncer.FlagWebhookAdvertiseAddress: "$(" + profiles.EnvPodIP + "):" + strconv.Itoa(syncerWebhookPort),
		cmdsyncer.FlagKubeletBindAddress:      ":" + strconv.Itoa(syncerKubeletPort),
		cmdsyncer.FlagKubeletAdvertiseAddress: "$(" + profiles.EnvPodIP + "):" + strconv.Itoa(syncerKubeletPort),
		cmdsyncer.FlagDNSAddon:                strconv.FormatBool(nc.Spec.DNS.Mode != v1alpha1.DNSNone),
	}
	if dp.PullAlways && p.revision(component) >= PullAlwaysTemplateRevision {
		flags[cmdsyncer.FlagPullAlways] = "true"
		if len(dp.CachedImages) > 0 {
			flags[cmdsyncer.FlagCachedImages] = strings.Join(dp.CachedImages, ",")
		}
	}
	if len(dp.StorageClasses) > 0 {
		flags[cmdsyncer.FlagStorageClasses] = strings.Join(dp.StorageClasses, ",")
	}
	if p.revision(v1alpha1.ComponentAPIServer) >= WebhookClientCertTemplateRevision {
		flags[cmdsyncer.FlagWebhookRequireClientCert] = "true"
	}
	if nc.Spec.DNS.Mode != v1alpha1.DNSNone {
		flags[cmdsyncer.FlagDNSImage] = dnsImage(nc, dp)
		if len(dp.DNSUpstreams) > 0 {
			flags[cmdsyncer.FlagDNSUpstreams] = strings.Join(dp.DNSUpstreams, ",")
		}
	}
	ports := []corev1.ContainerPort{tcpPort("health", syncerHealthPort), tcpPort("webhook", syncerWebhookPort), tcpPort("kubelet", syncerKubeletPort)}
	if renderMetrics(nc, p) {
		on := metricsOn(nc)
		flags[cmdsyncer.FlagMetricsAddon] = strconv.FormatBool(on)
		flags[cmdsyncer.FlagKubeletMetricsBindAddress] = ":" + strconv.Itoa(syncerMetricsPort)
		if on {
			flags[cmdsyncer.FlagMetricsImage] = metricsImage(nc, dp)
		}
		ports = append(ports, tcpPort("kubelet-metrics", syncerMetricsPort))
	}
	maps.Copy(flags, nc.Spec.Syncer.ExtraArgs) // validation refused owned flags
	c := corev1.Container{
		Name:           component,
		Image:          image,
		Command:        []string{component},
		Args:           cmdsyncer.Args(flags),
		Ports:          ports,
		ReadinessProbe: httpProbe("/readyz", syncerHealthPort, 2, 3),
		LivenessProbe:  httpProbe("/healthz", syncerHealthPort, 10, 6),
		VolumeMounts:   []corev1.VolumeMount{{Name: "pki", MountPath: profiles.PKIDir, ReadOnly: true}},
	}
	volumes := []corev1.Volume{pkiVolume(component, p.revision(component), syncerFiles)}
	spec := podSpec(nc, p, component, c, volumes)
	// The one capn pod with a management credential: its own
	// ServiceAccount, which RBAC confines to the workload namespace (and
	// reading Nodes).
	spec.ServiceAccountName = provisioner.SyncerName
	spec.AutomountServiceAccountToken = ptr.To(true)
	tpl := podTemplate(nc, component, podAnnotations("", p, nil), spec)
	delete(tpl.Annotations, provisioner.VersionAnnotation) // its version is capn's, not spec.version
	if err := customize(&tpl, component, &nc.Spec.Syncer); err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: objectMeta(nc, p, provisioner.SyncerName, component),
		// Only the syncer's own pods mount its token, and they ask for it.
		AutomountServiceAccountToken: ptr.To(false),
	}
	objs := []Object{sa, deployment(nc, p, provisioner.SyncerName, component, replicas, tpl, true)}
	return appendObjects(objs, podDisruptionBudget(nc, p, provisioner.SyncerName, component, replicas)), nil
}

// dnsImage is the tenant's CoreDNS image: its own choice, else the
// provider's. A tenant may pick any image, as it may for any of its pods:
// the addon runs as a tenant workload, with no credential of capn's.
func dnsImage(nc *v1alpha1.NestedCluster, dp DataPlane) string {
	switch {
	case nc.Spec.DNS.Image != "":
		return nc.Spec.DNS.Image
	case dp.DNSImage != "":
		return dp.DNSImage
	}
	return versions.CoreDNSImage
}

// metricsOn reports whether the tenant keeps the metrics addon: unless it
// said None (the builders render Shared tenants only).
func metricsOn(nc *v1alpha1.NestedCluster) bool {
	return nc.Spec.Metrics.Mode != v1alpha1.MetricsNone
}

// renderMetrics reports whether the syncer's template carries the metrics
// flags and port: from MetricsTemplateRevision on, or earlier when the
// tenant asked for the addon itself. A syncer rendered before the addon
// existed runs without it (its default is off), so leaving the flags out
// keeps its template, and its pods, as they are.
func renderMetrics(nc *v1alpha1.NestedCluster, p Params) bool {
	m := nc.Spec.Metrics
	return p.revision(v1alpha1.ComponentSyncer) >= MetricsTemplateRevision ||
		m.Mode == v1alpha1.MetricsServer || m.Image != ""
}

// metricsImage is the tenant's metrics-server image, chosen as dnsImage
// chooses CoreDNS's.
func metricsImage(nc *v1alpha1.NestedCluster, dp DataPlane) string {
	switch {
	case nc.Spec.Metrics.Image != "":
		return nc.Spec.Metrics.Image
	case dp.MetricsImage != "":
		return dp.MetricsImage
	}
	return versions.MetricsServerImage
}

// hostNodeSelector ANDs the provider's selector with the tenant's: the
// tenant can only choose among the nodes the provider offers (a key both
// set to different values selects nothing).
func hostNodeSelector(provider, tenant map[string]string) string {
	var reqs []string
	for _, m := range []map[string]string{provider, tenant} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			reqs = append(reqs, k+"="+m[k])
		}
	}
	return strings.Join(slices.Compact(reqs), ",")
}

// syncerNetworkPolicy: the syncer talks to the tenant apiserver (this
// namespace), to the management apiserver, at the endpoints
// managementAPIServerEgress names, and to the host kubelets, at those
// kubeletEgress names. Only the tenant apiserver reaches it at the Service
// webhook and the virtual Nodes' kubelet API (and the kubelet's probes,
// which policy does not see); the tenant's metrics-server, a pod of the
// workload namespace, reaches the virtual Nodes' resource metrics on a
// port of their own. The metrics rules stay whether or not the addon
// runs, so that turning it on or off changes no policy.
func syncerNetworkPolicy(nc *v1alpha1.NestedCluster, p Params) *networkingv1.NetworkPolicy {
	egress := []networkingv1.NetworkPolicyEgressRule{
		{To: []networkingv1.NetworkPolicyPeer{componentPeer(nc, v1alpha1.ComponentAPIServer)}, Ports: tcpPorts(profiles.APIServerPort)},
	}
	egress = append(egress, managementAPIServerEgress(p)...)
	egress = append(egress, kubeletEgress(p)...)
	return networkPolicy(objectMeta(nc, p, NetworkPolicySyncer, v1alpha1.ComponentSyncer), networkingv1.NetworkPolicySpec{
		PodSelector: podSelector(nc, v1alpha1.ComponentSyncer),
		PolicyTypes: bothPolicyTypes,
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{
				From:  []networkingv1.NetworkPolicyPeer{componentPeer(nc, v1alpha1.ComponentAPIServer)},
				Ports: tcpPorts(syncerWebhookPort, syncerKubeletPort),
			},
			{
				From:  []networkingv1.NetworkPolicyPeer{namespacePeer(provisioner.WorkloadNamespace(nc))},
				Ports: tcpPorts(syncerMetricsPort),
			},
		},
		Egress: egress,
	})
}

// WorkloadNamespace builds the namespace tenant pods run in and its
// policy: Pod Security at the provider's level (enforced, so a pod the
// syncer's own check missed is still refused), a NetworkPolicy that
// allows the tenant's own traffic and its apiserver and nothing else, a
// LimitRange that gives containers without resources a size (the quota
// refuses them otherwise), the ResourceQuota, and the RoleBinding that
// gives the syncer its Role there. Nothing in None mode.
func WorkloadNamespace(nc *v1alpha1.NestedCluster, p Params) []Object {
	if !shared(nc) {
		return nil
	}
	name := provisioner.WorkloadNamespace(nc)
	level := p.DataPlane.PodSecurity
	if level == "" {
		level = "baseline"
	}
	labels := provisioner.OwnerLabels(nc)
	labels[provisioner.WorkloadNamespaceLabel] = "true"
	for _, mode := range []string{"enforce", "warn", "audit"} {
		labels["pod-security.kubernetes.io/"+mode] = level
	}
	meta := func(n string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: name, Labels: provisioner.OwnerLabels(nc)}
	}
	cpNamespace := provisioner.NamespaceOf(nc, p.Addresses())
	apiServer := podSelector(nc, v1alpha1.ComponentAPIServer)
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
	same := metav1.LabelSelector{}
	apiServerPeer := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: cpNamespace}},
		PodSelector:       &apiServer,
	}
	syncer := podSelector(nc, v1alpha1.ComponentSyncer)
	syncerPeer := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: apiServerPeer.NamespaceSelector,
		PodSelector:       &syncer,
	}
	// The tenant apiserver reaches every port of its workloads (webhooks,
	// aggregated APIs, pods/proxy and services/proxy), and they reach it:
	// always, as a cluster's own apiserver is always reachable. So do the
	// virtual Nodes' resource metrics, which the tenant's metrics-server
	// scrapes from its syncer (that port only): a tenant policy that
	// isolates metrics-server must not hide its nodes.
	policy := networkPolicy(meta(WorkloadPolicyName), networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{},
		PolicyTypes: bothPolicyTypes,
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{apiServerPeer}}},
		Egress: []networkingv1.NetworkPolicyEgressRule{
			{To: []networkingv1.NetworkPolicyPeer{apiServerPeer}, Ports: tcpPorts(profiles.APIServerPort)},
			{To: []networkingv1.NetworkPolicyPeer{syncerPeer}, Ports: tcpPorts(syncerMetricsPort)},
		},
	})
	// Within the tenant, everything, as in a cluster without policies,
	// but only for pods no tenant NetworkPolicy isolates: the syncer
	// marks those, and the tenant's translated policies alone say what
	// they accept or send. NetworkPolicies add up, so a baseline that
	// selected every pod would make a tenant's deny a no-op.
	within := []networkingv1.NetworkPolicyPeer{{PodSelector: &same}}
	ingress := networkPolicy(meta(WorkloadIngressPolicyName), networkingv1.NetworkPolicySpec{
		PodSelector: notMarked(names.IngressIsolatedLabel),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: within}},
	})
	egress := networkPolicy(meta(WorkloadEgressPolicyName), networkingv1.NetworkPolicySpec{
		PodSelector: notMarked(names.EgressIsolatedLabel),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress:      []networkingv1.NetworkPolicyEgressRule{{To: within}},
	})
	limits := &corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: meta(WorkloadPolicyName),
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			// Ephemeral storage too: without a limit, a container's logs
			// and writable layer may fill the node's disk under other
			// tenants' pods, and the quota's ephemeral-storage items
			// refuse containers that set none.
			DefaultRequest: limitRangeDefaults(resource.MustParse("10m"), resource.MustParse("32Mi"), resource.MustParse("64Mi")),
			Default:        limitRangeDefaults(resource.MustParse("1"), resource.MustParse("256Mi"), resource.MustParse("1Gi")),
		}}},
	}
	quota := &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: meta(WorkloadPolicyName),
		Spec:       corev1.ResourceQuotaSpec{Hard: WorkloadQuota(nc, p.DataPlane)},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: meta(provisioner.SyncerName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: provisioner.SyncerRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: provisioner.SyncerName, Namespace: cpNamespace}},
	}
	return []Object{ns, policy, ingress, egress, limits, quota, binding}
}

// notMarked selects the pods without the marker label key.
func notMarked(key string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist}}}
}

// WorkloadQuota is the provider's default quota with the tenant's values
// over it (validation capped those at the provider's maximum).
func WorkloadQuota(nc *v1alpha1.NestedCluster, dp DataPlane) corev1.ResourceList {
	q := dp.Quota.DeepCopy()
	if q == nil {
		q = DefaultWorkloadQuota()
	}
	for k, v := range nc.Spec.DataPlane.Quota {
		q[k] = v.DeepCopy()
	}
	return q
}

// SyncerNodesBinding is the cluster-scoped binding that lets nc's syncer
// read Nodes (to mirror them as virtual Nodes). Nothing in None mode.
func SyncerNodesBinding(nc *v1alpha1.NestedCluster, p Params) []Object {
	if !shared(nc) {
		return nil
	}
	return []Object{&rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: provisioner.SyncerClusterRoleBinding(nc), Labels: provisioner.OwnerLabels(nc)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: provisioner.SyncerNodesRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: provisioner.SyncerName,
			Namespace: provisioner.NamespaceOf(nc, p.Addresses())}},
	}}
}
