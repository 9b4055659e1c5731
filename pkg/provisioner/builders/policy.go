package builders

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

// Names of the per-namespace policy objects. The component NetworkPolicies
// are named after their component (provisioner.EtcdName,
// provisioner.APIServerName).
const (
	NetworkPolicyDefaultDeny = "default-deny"
	NetworkPolicyControllers = "controllers" // kube-controller-manager and kube-scheduler
	LimitRangeName           = "capn-defaults"
	ResourceQuotaName        = "capn-control-plane"
)

// NetworkPolicies confine the management namespace: everything is denied
// (default-deny) except what the control plane needs, per component. Pods
// are selected by provisioner.SelectorLabels, the labels every Deployment,
// StatefulSet and Service of capn selects by: customize puts them back after
// a podTemplate patch and validation reserves capn.dev/ keys, so a tenant
// can neither take a pod out of its policy nor give it another component's.
// A rule without a namespaceSelector only admits pods of the policy's own
// namespace: no other tenant's pod matches one.
//
// What NetworkPolicy does not cover, by design of the API: the kubelet's
// probes (host-originated traffic to a local pod is allowed by the common
// CNIs: Calico, Cilium, the kindnet/kube-router family), so the health and
// metrics ports need no rule; and Prometheus-style scraping of those ports
// from other namespaces, which these policies deny.
//
// The order is deterministic, allow policies first and default-deny last:
// applied in order to a running cluster, every pod is covered by its own
// allow policy before the deny takes effect, so no traffic the control
// plane needs is dropped in between. Etcd's policy exists only when capn
// runs etcd (managed and external never switch: the field is immutable).
func NetworkPolicies(nc *v1alpha1.NestedCluster, p Params) []Object {
	var out []Object
	if m := nc.Spec.Etcd.Managed; m != nil {
		out = append(out, etcdNetworkPolicy(nc, p, m))
	}
	out = append(out, apiServerNetworkPolicy(nc, p), controllersNetworkPolicy(nc, p))
	if shared(nc) {
		out = append(out, syncerNetworkPolicy(nc, p))
	}
	return append(out, defaultDenyNetworkPolicy(nc, p))
}

var bothPolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}

func defaultDenyNetworkPolicy(nc *v1alpha1.NestedCluster, p Params) *networkingv1.NetworkPolicy {
	return networkPolicy(namespacedMeta(nc, p, NetworkPolicyDefaultDeny), networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{},
		PolicyTypes: bothPolicyTypes,
	})
}

// etcdNetworkPolicy: the client port only from this namespace's
// kube-apiserver pods and capn-apiserver's (Params.CapnNamespace: it reads
// and writes etcd for backups and restores), the peer port only between
// members. Nothing else reaches etcd, and etcd reaches nothing but its
// peers.
//
// A multi-member etcd also needs DNS: its members are named
// etcd-N.etcd-headless.<ns>.svc, and etcd resolves --initial-cluster at
// start. That rule is by port only (53, UDP and TCP, to any address)
// because where cluster DNS answers differs between management clusters
// (kube-dns pods in kube-system, a NodeLocal DNSCache on a link-local node
// address no podSelector matches). A single member uses its pod IP and
// gets no DNS.
func etcdNetworkPolicy(nc *v1alpha1.NestedCluster, p Params, m *v1alpha1.ManagedEtcd) *networkingv1.NetworkPolicy {
	const component = v1alpha1.ComponentEtcd
	etcd := componentPeer(nc, component)
	egress := []networkingv1.NetworkPolicyEgressRule{{
		To: []networkingv1.NetworkPolicyPeer{etcd}, Ports: tcpPorts(profiles.EtcdPeerPort),
	}}
	if m.Replicas != nil && *m.Replicas > 1 {
		egress = append(egress, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{
			policyPort(corev1.ProtocolUDP, dnsPort), policyPort(corev1.ProtocolTCP, dnsPort),
		}})
	}
	clients := []networkingv1.NetworkPolicyPeer{componentPeer(nc, v1alpha1.ComponentAPIServer)}
	if p.CapnNamespace != "" {
		clients = append(clients, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: p.CapnNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": CapnAPIServerName}},
		})
	}
	return networkPolicy(objectMeta(nc, p, provisioner.EtcdName, component), networkingv1.NetworkPolicySpec{
		PodSelector: podSelector(nc, component),
		PolicyTypes: bothPolicyTypes,
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{From: clients, Ports: tcpPorts(profiles.EtcdClientPort)},
			{From: []networkingv1.NetworkPolicyPeer{etcd}, Ports: tcpPorts(profiles.EtcdPeerPort)},
		},
		Egress: egress,
	})
}

// CapnAPIServerName is the app.kubernetes.io/name of capn-apiserver's
// pods (artifacts/deploy).
const CapnAPIServerName = "capn-apiserver"

// dnsPort is DNS's well-known port, for etcd's peer-name lookups.
const dnsPort = 53

// apiServerNetworkPolicy: the secure port is open to any source, because
// its clients are everywhere: tenants (inside or outside the management
// cluster, through the Service or a load balancer, which SNATs them to a
// node address or passes the client's), kube-controller-manager and
// kube-scheduler, and capn. It is the one port meant to be reachable, and it
// authenticates every request.
//
// Egress is what apiServerEgress (network.go) lists and nothing else.
func apiServerNetworkPolicy(nc *v1alpha1.NestedCluster, p Params) *networkingv1.NetworkPolicy {
	const component = v1alpha1.ComponentAPIServer
	return networkPolicy(objectMeta(nc, p, provisioner.APIServerName, component), networkingv1.NetworkPolicySpec{
		PodSelector: podSelector(nc, component),
		PolicyTypes: bothPolicyTypes,
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: tcpPorts(profiles.APIServerPort)}},
		Egress:      apiServerEgress(nc, p),
	})
}

// controllersNetworkPolicy: kube-controller-manager and kube-scheduler
// talk to kube-apiserver and nothing else, and nothing needs to reach them
// (their only listener is the health and metrics port the kubelet probes).
// The rule matches the apiserver pods' container port: policies see
// Service traffic after its ClusterIP is translated to a pod, so the
// Service's own port (spec.apiServer.service.port) does not appear. No DNS:
// their kubeconfigs name the apiserver by the Service's ClusterIP
// (Params.APIServerServiceIP, which the controller sets before it issues
// them); a kubeconfig naming the Service by DNS would need a DNS rule here.
// A podTemplate sidecar in these pods is confined the same way.
func controllersNetworkPolicy(nc *v1alpha1.NestedCluster, p Params) *networkingv1.NetworkPolicy {
	return networkPolicy(namespacedMeta(nc, p, NetworkPolicyControllers), networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{
			MatchLabels: map[string]string{v1alpha1.ClusterLabel: nc.Name},
			MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key:      v1alpha1.ComponentLabel,
				Operator: metav1.LabelSelectorOpIn,
				Values:   []string{v1alpha1.ComponentControllerManager, v1alpha1.ComponentScheduler},
			}},
		},
		PolicyTypes: bothPolicyTypes,
		Egress: []networkingv1.NetworkPolicyEgressRule{{
			To:    []networkingv1.NetworkPolicyPeer{componentPeer(nc, v1alpha1.ComponentAPIServer)},
			Ports: tcpPorts(profiles.APIServerPort),
		}},
	})
}

func networkPolicy(meta metav1.ObjectMeta, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: meta,
		Spec:       spec,
	}
}

// namespacedMeta names an object of nc's management namespace that belongs
// to no one component: objectMeta's labels without the component.
func namespacedMeta(nc *v1alpha1.NestedCluster, p Params, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: provisioner.NamespaceOf(nc, p.Addresses()), Labels: provisioner.OwnerLabels(nc)}
}

func podSelector(nc *v1alpha1.NestedCluster, component string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: provisioner.SelectorLabels(nc, component)}
}

// componentPeer is component's pods in the policy's own namespace (no
// namespaceSelector).
func componentPeer(nc *v1alpha1.NestedCluster, component string) networkingv1.NetworkPolicyPeer {
	s := podSelector(nc, component)
	return networkingv1.NetworkPolicyPeer{PodSelector: &s}
}

func tcpPorts(ports ...int) []networkingv1.NetworkPolicyPort {
	out := make([]networkingv1.NetworkPolicyPort, len(ports))
	for i, port := range ports {
		out[i] = policyPort(corev1.ProtocolTCP, port)
	}
	return out
}

func policyPort(protocol corev1.Protocol, port int) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(protocol), Port: ptr.To(intstr.FromInt32(int32(port)))}
}

// Container defaults of the LimitRange, for containers that set no
// requests or limits of their own: capn's components (which set requests
// only, pod.go's defaultResources) and podTemplate sidecars. The quota
// counts limits, so every container must have some. The default limits
// are validation's (DefaultLimits), which also refuses a request above
// them without a limit.
const (
	// DefaultRequestCPU and DefaultRequestMemory are what a container that
	// sets no request reserves: a small sidecar's worth.
	DefaultRequestCPU    = "50m"
	DefaultRequestMemory = "64Mi"
)

var defaultRequests = limitRangeDefaults(resource.MustParse(DefaultRequestCPU), resource.MustParse(DefaultRequestMemory), resource.MustParse("0"))

// defaultLimitsFor is validation.DefaultLimits, with the memory limit
// raised by a Memory etcd's size: tmpfs pages count against the etcd
// container's memory, so a 4Gi etcd under a 4Gi limit would be killed
// as it fills.
func defaultLimitsFor(nc *v1alpha1.NestedCluster) corev1.ResourceList {
	d := validation.DefaultLimits()
	mem := d[corev1.ResourceMemory]
	if m := nc.Spec.Etcd.Managed; m != nil && m.Storage.Type == v1alpha1.EtcdStorageMemory && m.Storage.Size != nil {
		mem.Add(*m.Storage.Size)
	}
	return limitRangeDefaults(d[corev1.ResourceCPU], canonical(mem), validation.MaxResources()[corev1.ResourceEphemeralStorage])
}

// limitRangeDefaults also sets ephemeral-storage, explicitly, because Max
// bounds it: the API server defaults a LimitRange's missing default limit
// to its max and a missing default request to the default limit, which
// would make every container request 64Gi of node disk and never
// schedule. The limit is the max (what the server would default to; it is
// far above the largest emptyDir validation allows, so the kubelet's
// pod-level ephemeral-storage eviction never catches an etcd within its
// size); the request is zero, as capn's containers request none today.
func limitRangeDefaults(cpu, memory, ephemeral resource.Quantity) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              cpu,
		corev1.ResourceMemory:           memory,
		corev1.ResourceEphemeralStorage: ephemeral,
	}
}

// LimitRange gives every container of the management namespace the
// defaults above and bounds it by validation.MaxResources, the bounds the
// API already enforces on the NestedCluster's resources and podTemplate:
// a valid NestedCluster never renders a container over them, and a pod
// the builders did not render cannot exceed them either.
//
// Every resource of Max is set in Default and DefaultRequest, so the API
// server's LimitRange defaulting adds nothing: the stored object is the
// rendered one.
//
// The LimitRanger admission plugin applies a default limit to a container
// that sets a request but no limit. A request above the default limit
// (e.g. resources.requests.memory: 4Gi with no limit, which validation
// allows) then makes the pod invalid (request > limit) and it is refused.
func LimitRange(nc *v1alpha1.NestedCluster, p Params) *corev1.LimitRange {
	return &corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: namespacedMeta(nc, p, LimitRangeName),
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        defaultLimitsFor(nc),
			DefaultRequest: defaultRequests.DeepCopy(),
			Max:            validation.MaxResources(),
		}}},
	}
}

// Rollout headroom of the quota.
const (
	// deploymentPodFactor: a Deployment's pods count twice. Its strategy
	// surges one pod at a time (workload.go), but the Deployment counts
	// only pods that are not terminating, while the quota charges a
	// terminating pod until its grace period ends: each step of a rollout
	// (and each eviction in a node drain) starts the replacement while the
	// old pod still counts, so a quick rollout of N replicas can hold
	// close to 2N pods at once. A rollout that lowers a component's
	// resources is the case the factor does not cover by itself: its old
	// pods still count at the old size. The headroom the other workloads
	// leave while they are not rolling usually absorbs that, but only
	// passing the live workload beside the rendered one (ResourceQuota
	// takes the larger of each) guarantees it.
	deploymentPodFactor = 2
	// statefulSetSparePods: a StatefulSet replaces a member in place, the
	// new pod created only once the old one is gone (they share a name),
	// so replicas suffice for a rollout; one spare pod is a margin, e.g.
	// for replacing a member add-then-remove, as etcd prefers. Its PVCs
	// get no spare: they outlive the pods and a rollout reuses them, and
	// storage is the one resource the spec fixes exactly.
	statefulSetSparePods = 1
	// quotaServiceHeadroom is added to the rendered Services. Nothing
	// creates a Service capn did not render, and a cluster's set never
	// changes (etcd's kind is immutable); but the controller applies the
	// Services before this quota, so one Service added by a newer capn
	// would otherwise be refused by the older quota before the new one is
	// applied. Applying the quota first would make exact counts safe.
	quotaServiceHeadroom = 1
	// quotaSecrets and quotaConfigMaps bound objects the builders do not
	// render: capn's PKI Secrets (14 with a managed etcd: 4 CA and
	// service-account Secrets and 10 leaves; 12 with an external one,
	// counting the two copied credentials; 11 in a pool, counting the
	// pool client certificate) and the management cluster's
	// kube-root-ca.crt beside the rendered ConfigMaps. The controller
	// writes Secrets before it applies this quota, so a tight count would
	// wedge a newer capn that adds one; 64 is over four times today's
	// need (room for a full second set during a CA rotation), yet stops a
	// create-per-sync leak before it fills the management etcd (Secrets
	// and ConfigMaps are up to 1 MiB each).
	quotaSecrets    = 64
	quotaConfigMaps = 64
)

// ResourceQuota bounds what the control plane may hold in the management
// namespace, derived from rendered (All's workloads and Services): pods,
// the requests and limits of their containers (LimitRange defaults for
// what a container leaves unset, as admission will fill them), PVCs and
// their storage, and counts of Services, Secrets and ConfigMaps. The
// headroom above makes rollouts fit; see deploymentPodFactor and the
// constants after it.
//
// A workload listed twice (same kind and name, e.g. the live Deployment
// passed beside the rendered one while a change rolls out) counts once,
// with the larger of each resource: the quota then fits both the old pods
// and the new ones.
//
// It depends on nothing the controller learns by applying Services
// (Params' addresses and CertsHash change no resources), so it can be
// rendered and applied before them.
func ResourceQuota(nc *v1alpha1.NestedCluster, p Params, rendered []Object) *corev1.ResourceQuota {
	defaults := defaultLimitsFor(nc)
	type key struct{ kind, name string }
	var order []key
	usage := map[key]corev1.ResourceList{}
	services := int64(0)
	for _, o := range rendered {
		var u corev1.ResourceList
		switch t := o.(type) {
		case *appsv1.Deployment:
			u = workloadUsage(t.Spec.Replicas, deploymentPodFactor, 0, &t.Spec.Template.Spec, nil, defaults)
		case *appsv1.StatefulSet:
			u = workloadUsage(t.Spec.Replicas, 1, statefulSetSparePods, &t.Spec.Template.Spec, t.Spec.VolumeClaimTemplates, defaults)
		case *corev1.Service:
			services++
			continue
		default:
			continue
		}
		k := key{fmt.Sprintf("%T", o), o.GetName()}
		if have, ok := usage[k]; ok {
			maxInto(have, u)
			continue
		}
		order = append(order, k)
		usage[k] = u
	}
	hard := corev1.ResourceList{}
	for _, name := range quotaSummed {
		hard[name] = resource.Quantity{}
	}
	for _, k := range order {
		for _, name := range quotaSummed {
			q := hard[name]
			q.Add(usage[k][name])
			hard[name] = q
		}
	}
	for _, name := range quotaSummed {
		hard[name] = canonical(hard[name])
	}
	hard[corev1.ResourceServices] = *resource.NewQuantity(services+quotaServiceHeadroom, resource.DecimalSI)
	hard[corev1.ResourceSecrets] = *resource.NewQuantity(quotaSecrets, resource.DecimalSI)
	hard[corev1.ResourceConfigMaps] = *resource.NewQuantity(quotaConfigMaps, resource.DecimalSI)
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: namespacedMeta(nc, p, ResourceQuotaName),
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
}

// quotaSummed are the quota's resources summed over the workloads.
var quotaSummed = []corev1.ResourceName{
	corev1.ResourcePods,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
	corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage,
}

// workloadUsage is one workload's share of the quota: its pods
// (replicas × factor + spare) times one pod's effective requests and
// limits, and its claims (replicas × templates, no spare).
func workloadUsage(replicas *int32, factor, spare int64, spec *corev1.PodSpec, claims []corev1.PersistentVolumeClaim, defaults corev1.ResourceList) corev1.ResourceList {
	r := int64(1) // the API defaults an unset replicas to 1
	if replicas != nil {
		r = int64(*replicas)
	}
	pods := r*factor + spare
	reqs, limits := podResources(spec, defaults)
	u := corev1.ResourceList{
		corev1.ResourcePods:                   *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceRequestsCPU:            times(reqs[corev1.ResourceCPU], pods),
		corev1.ResourceRequestsMemory:         times(reqs[corev1.ResourceMemory], pods),
		corev1.ResourceLimitsCPU:              times(limits[corev1.ResourceCPU], pods),
		corev1.ResourceLimitsMemory:           times(limits[corev1.ResourceMemory], pods),
		corev1.ResourcePersistentVolumeClaims: *resource.NewQuantity(r*int64(len(claims)), resource.DecimalSI),
	}
	var storage resource.Quantity
	for _, c := range claims {
		storage.Add(c.Spec.Resources.Requests[corev1.ResourceStorage])
	}
	u[corev1.ResourceRequestsStorage] = times(storage, r)
	return u
}

// podResources are a pod's effective requests and limits as the quota
// charges them (Kubernetes' PodRequests/PodLimits): the containers' sum
// including sidecars (init containers with restartPolicy Always), or, if
// larger, the most any one init container needs beside the sidecars
// started before it; plus the pod overhead.
func podResources(spec *corev1.PodSpec, defaults corev1.ResourceList) (requests, limits corev1.ResourceList) {
	pick := []func(corev1.ResourceRequirements) corev1.ResourceList{
		func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests },
		func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits },
	}
	out := make([]corev1.ResourceList, len(pick))
	for i, get := range pick {
		sum := corev1.ResourceList{}
		for _, c := range spec.Containers {
			addInto(sum, get(admitted(c.Resources, defaults)))
		}
		sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}
		for _, c := range spec.InitContainers {
			r := get(admitted(c.Resources, defaults))
			need := corev1.ResourceList{}
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				addInto(sum, r)
				addInto(sidecars, r)
				addInto(need, sidecars)
			} else {
				addInto(need, r)
				addInto(need, sidecars)
			}
			maxInto(initPeak, need)
		}
		maxInto(sum, initPeak)
		addInto(sum, spec.Overhead)
		out[i] = sum
	}
	return out[0], out[1]
}

// admitted is a container's resources as admission leaves them: the API
// defaults a missing request to the limit, then the LimitRange fills a
// missing limit or request with its defaults.
func admitted(r corev1.ResourceRequirements, defaultLimits corev1.ResourceList) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: r.Requests.DeepCopy(), Limits: r.Limits.DeepCopy()}
	if out.Requests == nil {
		out.Requests = corev1.ResourceList{}
	}
	if out.Limits == nil {
		out.Limits = corev1.ResourceList{}
	}
	for name, q := range out.Limits {
		if _, ok := out.Requests[name]; !ok {
			out.Requests[name] = q.DeepCopy()
		}
	}
	for name, q := range defaultLimits {
		if _, ok := out.Limits[name]; !ok {
			out.Limits[name] = q.DeepCopy()
		}
	}
	for name, q := range defaultRequests {
		if _, ok := out.Requests[name]; !ok {
			out.Requests[name] = q.DeepCopy()
		}
	}
	return out
}

func addInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		if have, ok := dst[name]; !ok || q.Cmp(have) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// times is q×n, exact for the small counts here.
func times(q resource.Quantity, n int64) resource.Quantity {
	out := q.DeepCopy()
	out.Mul(n)
	return canonical(out)
}

// canonical re-parses q from its canonical string, so the object holds
// what the API server will store and equal quantities compare equal.
func canonical(q resource.Quantity) resource.Quantity {
	return resource.MustParse(q.String())
}
