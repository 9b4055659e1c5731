package builders

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

func resources(requests, limits corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: requests, Limits: limits}
}

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func testDeployment(name string, replicas int32, spec corev1.PodSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{Spec: spec}},
	}
}

func hardOf(t *testing.T, rendered ...Object) map[corev1.ResourceName]string {
	t.Helper()
	q := ResourceQuota(cluster(), Params{}, rendered)
	out := map[corev1.ResourceName]string{}
	for name, v := range q.Spec.Hard {
		out[name] = v.String()
	}
	return out
}

// A Deployment's pods count twice (surge), a StatefulSet's once plus one.
func TestQuotaSurge(t *testing.T) {
	c := corev1.Container{Name: "a", Resources: resources(list("cpu", "100m", "memory", "128Mi"), list("cpu", "200m", "memory", "256Mi"))}
	hard := hardOf(t, testDeployment("d", 3, corev1.PodSpec{Containers: []corev1.Container{c}}))
	assert.Equal(t, "6", hard[corev1.ResourcePods])
	assert.Equal(t, "600m", hard[corev1.ResourceRequestsCPU])
	assert.Equal(t, "768Mi", hard[corev1.ResourceRequestsMemory])
	assert.Equal(t, "1200m", hard[corev1.ResourceLimitsCPU])
	assert.Equal(t, "1536Mi", hard[corev1.ResourceLimitsMemory])

	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{c},
		}}},
	}
	hard = hardOf(t, sts)
	assert.Equal(t, "4", hard[corev1.ResourcePods])
	assert.Equal(t, "400m", hard[corev1.ResourceRequestsCPU])
	assert.Equal(t, "0", hard[corev1.ResourcePersistentVolumeClaims])
	assert.Equal(t, "0", hard[corev1.ResourceRequestsStorage])
}

// Containers get the LimitRange's defaults for what they leave unset, and a
// limit without a request is also the request (API defaulting).
func TestQuotaUsesLimitRangeDefaults(t *testing.T) {
	hard := hardOf(t, testDeployment("d", 1, corev1.PodSpec{Containers: []corev1.Container{
		{Name: "none"},
		{Name: "request-only", Resources: resources(list("cpu", "100m"), nil)},
		{Name: "limit-only", Resources: resources(nil, list("memory", "1Gi"))},
	}}))
	// Per pod: requests 50m+100m+50m, 64Mi+64Mi+1Gi; limits 4+4+4, 4Gi+4Gi+1Gi.
	assert.Equal(t, "2", hard[corev1.ResourcePods])
	assert.Equal(t, "400m", hard[corev1.ResourceRequestsCPU])
	assert.Equal(t, "2304Mi", hard[corev1.ResourceRequestsMemory])
	assert.Equal(t, "24", hard[corev1.ResourceLimitsCPU])
	assert.Equal(t, "18Gi", hard[corev1.ResourceLimitsMemory])
}

// Kubernetes' effective request: the larger of the containers' sum (with
// sidecars) and the peak of any init container beside the sidecars before it.
func TestQuotaInitContainerRule(t *testing.T) {
	same := func(cpu, mem string) corev1.ResourceRequirements {
		return resources(list("cpu", cpu, "memory", mem), list("cpu", cpu, "memory", mem))
	}
	hard := hardOf(t, testDeployment("d", 1, corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "init-a", Resources: same("1", "50Mi")},
			{Name: "sidecar", Resources: same("100m", "10Mi"), RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
			{Name: "init-b", Resources: same("500m", "500Mi")},
		},
		Containers: []corev1.Container{{Name: "main", Resources: same("300m", "100Mi")}},
	}))
	// cpu: max(300m+100m, 1, 100m, 500m+100m) = 1; memory: max(100Mi+10Mi,
	// 50Mi, 10Mi, 500Mi+10Mi) = 510Mi; two pods.
	assert.Equal(t, "2", hard[corev1.ResourceRequestsCPU])
	assert.Equal(t, "1020Mi", hard[corev1.ResourceRequestsMemory])
	assert.Equal(t, "2", hard[corev1.ResourceLimitsCPU])
	assert.Equal(t, "1020Mi", hard[corev1.ResourceLimitsMemory])
}

// The same workload given twice (live and rendered) counts once, at the
// larger of each resource.
func TestQuotaWorkloadListedTwiceCountsOnce(t *testing.T) {
	big := corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: resources(list("cpu", "1"), nil)}}}
	small := corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: resources(list("cpu", "100m"), nil)}}}
	hard := hardOf(t, testDeployment("d", 1, big), testDeployment("d", 3, small))
	assert.Equal(t, "6", hard[corev1.ResourcePods])
	assert.Equal(t, "2", hard[corev1.ResourceRequestsCPU])
}

func TestQuotaPVCStorage(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/ha-pvc/input.yaml")
	objs, err := All(nc, defaultParams)
	require.NoError(t, err)
	q := find[*corev1.ResourceQuota](objs, ResourceQuotaName)
	require.NotNil(t, q)
	hard := q.Spec.Hard
	// Three members, one 8Gi claim each, no spare claim.
	assert.Equal(t, "3", ptr.To(hard[corev1.ResourcePersistentVolumeClaims]).String())
	assert.Equal(t, "24Gi", ptr.To(hard[corev1.ResourceRequestsStorage]).String())
	// Three Services (etcd, etcd-headless, kube-apiserver) plus headroom.
	assert.Equal(t, "4", ptr.To(hard[corev1.ResourceServices]).String())
	// 3×2 per kube-* Deployment, 3+1 etcd.
	assert.Equal(t, "22", ptr.To(hard[corev1.ResourcePods]).String())
}

// goldenCases are the golden inputs with their Params, plus a cluster with
// init containers and a sidecar on kube-apiserver.
func goldenCases(t *testing.T) map[string]struct {
	nc *v1alpha1.NestedCluster
	p  Params
} {
	t.Helper()
	inputs, err := filepath.Glob("testdata/*/input.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	out := map[string]struct {
		nc *v1alpha1.NestedCluster
		p  Params
	}{}
	for _, in := range inputs {
		name := filepath.Base(filepath.Dir(in))
		p, ok := goldenParams[name]
		if !ok {
			p = defaultParams
		}
		out[name] = struct {
			nc *v1alpha1.NestedCluster
			p  Params
		}{decodeNestedCluster(t, in), p}
	}
	withInit := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.UID = "00000009-0000-4000-8000-000000000009"
		nc.Spec.APIServer.Replicas = ptr.To[int32](2)
		nc.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "log-shipper", Image: "example.com/s:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Resources: resources(list("cpu", "200m", "memory", "100Mi"), nil)},
				{Name: "warm-up", Image: "example.com/w:1",
					Resources: resources(list("cpu", "3", "memory", "1500Mi"), list("cpu", "3", "memory", "1500Mi"))},
			},
		}}
	})
	out["init-containers"] = struct {
		nc *v1alpha1.NestedCluster
		p  Params
	}{withInit, defaultParams}
	return out
}

// need computes, independently of the quota code, what the rendered pods
// can hold at once: each Deployment at twice its replicas (a full surge),
// each StatefulSet at its replicas, each pod at the peak of its startup
// timeline (init containers one by one beside the sidecars started so
// far, then the containers beside all sidecars), with the rendered
// LimitRange's defaults for unset values. Values are milli-units.
func need(t *testing.T, objs []Object) map[corev1.ResourceName]int64 {
	t.Helper()
	lr := find[*corev1.LimitRange](objs, LimitRangeName)
	require.NotNil(t, lr)
	require.Len(t, lr.Spec.Limits, 1)
	item := lr.Spec.Limits[0]
	value := func(c corev1.Container, res corev1.ResourceName, limit bool) int64 {
		l, r := c.Resources.Limits, c.Resources.Requests
		if limit {
			if q, ok := l[res]; ok {
				return q.MilliValue()
			}
			q := item.Default[res]
			return q.MilliValue()
		}
		if q, ok := r[res]; ok {
			return q.MilliValue()
		}
		if q, ok := l[res]; ok {
			return q.MilliValue()
		}
		q := item.DefaultRequest[res]
		return q.MilliValue()
	}
	peak := func(spec corev1.PodSpec, res corev1.ResourceName, limit bool) int64 {
		var sidecars, top int64
		for _, c := range spec.InitContainers {
			v := value(c, res, limit)
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecars += v
				top = max(top, sidecars)
			} else {
				top = max(top, sidecars+v)
			}
		}
		steady := sidecars
		for _, c := range spec.Containers {
			steady += value(c, res, limit)
		}
		return max(top, steady)
	}
	out := map[corev1.ResourceName]int64{}
	add := func(pods int64, spec corev1.PodSpec) {
		out[corev1.ResourcePods] += pods * 1000
		out[corev1.ResourceRequestsCPU] += pods * peak(spec, corev1.ResourceCPU, false)
		out[corev1.ResourceRequestsMemory] += pods * peak(spec, corev1.ResourceMemory, false)
		out[corev1.ResourceLimitsCPU] += pods * peak(spec, corev1.ResourceCPU, true)
		out[corev1.ResourceLimitsMemory] += pods * peak(spec, corev1.ResourceMemory, true)
	}
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.Deployment:
			add(2*int64(*w.Spec.Replicas), w.Spec.Template.Spec)
		case *appsv1.StatefulSet:
			add(int64(*w.Spec.Replicas), w.Spec.Template.Spec)
			for _, c := range w.Spec.VolumeClaimTemplates {
				s := c.Spec.Resources.Requests[corev1.ResourceStorage]
				out[corev1.ResourcePersistentVolumeClaims] += int64(*w.Spec.Replicas) * 1000
				out[corev1.ResourceRequestsStorage] += int64(*w.Spec.Replicas) * s.MilliValue()
			}
		}
	}
	return out
}

func TestQuotaFitsRenderedPodsAtTwice(t *testing.T) {
	for name, c := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			objs, err := All(c.nc, c.p)
			require.NoError(t, err)
			q := find[*corev1.ResourceQuota](objs, ResourceQuotaName)
			require.NotNil(t, q)
			for res, want := range need(t, objs) {
				have, ok := q.Spec.Hard[res]
				require.True(t, ok, "quota has no %s", res)
				assert.GreaterOrEqual(t, have.MilliValue(), want, "%s: quota %s is below what the pods need at 2x", res, have.String())
			}
			var services, configMaps int64
			for _, o := range objs {
				switch o.(type) {
				case *corev1.Service:
					services++
				case *corev1.ConfigMap:
					configMaps++
				}
			}
			quotaOf := func(r corev1.ResourceName) int64 { v := q.Spec.Hard[r]; return v.Value() }
			assert.Equal(t, services+1, quotaOf(corev1.ResourceServices))
			// kube-root-ca.crt besides the rendered ConfigMaps.
			assert.GreaterOrEqual(t, quotaOf(corev1.ResourceConfigMaps), configMaps+1)
			// Every PKI Secret twice over (a full second set during a CA
			// rotation), external-etcd copies included.
			pkiSecrets := []string{
				provisioner.SecretCA, provisioner.SecretEtcdCA, provisioner.SecretFrontProxyCA, provisioner.SecretServiceAccount,
				provisioner.SecretAPIServerServing, provisioner.SecretAPIServerEtcdClient, provisioner.SecretAPIServerKubeletClient,
				provisioner.SecretFrontProxyClient, provisioner.SecretEtcdServer, provisioner.SecretEtcdPeer,
				provisioner.SecretControllerManagerKC, provisioner.SecretSchedulerKC,
				provisioner.SecretControllerManagerServing, provisioner.SecretSchedulerServing,
				provisioner.SecretExternalEtcdCA, provisioner.SecretExternalEtcdClient, provisioner.SecretPoolEtcdClient,
			}
			assert.GreaterOrEqual(t, quotaOf(corev1.ResourceSecrets), int64(2*len(pkiSecrets)))
		})
	}
}

// The quota depends on no address the controller learns from the applied
// Services, so it can be applied before them.
func TestQuotaDoesNotDependOnServiceParams(t *testing.T) {
	for name, c := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			full, err := All(c.nc, c.p)
			require.NoError(t, err)
			bare, err := All(c.nc, Params{Namespace: c.p.Namespace, Versions: c.p.Versions, EtcdImage: c.p.EtcdImage, EtcdPool: c.p.EtcdPool})
			require.NoError(t, err)
			assert.Equal(t, find[*corev1.ResourceQuota](full, ResourceQuotaName), find[*corev1.ResourceQuota](bare, ResourceQuotaName))
		})
	}
}

func TestLimitRange(t *testing.T) {
	lr := LimitRange(cluster(), Params{})
	require.Len(t, lr.Spec.Limits, 1)
	item := lr.Spec.Limits[0]
	assert.Equal(t, corev1.LimitTypeContainer, item.Type)
	assert.Equal(t, validation.MaxResources(), item.Max, "max must be the API's own bounds")
	for _, r := range []struct {
		name           corev1.ResourceName
		limit, request string
	}{
		{name: corev1.ResourceCPU, limit: "4", request: DefaultRequestCPU},
		{name: corev1.ResourceMemory, limit: "4Gi", request: DefaultRequestMemory},
	} {
		assert.Equal(t, resource.MustParse(r.limit), item.Default[r.name], r.name)
		assert.Equal(t, resource.MustParse(r.request), item.DefaultRequest[r.name], r.name)
	}
	// The API server defaults a missing default limit to max and a missing
	// default request to the default limit; every bounded resource is set,
	// so it changes nothing (a 64Gi ephemeral-storage request would make
	// every pod unschedulable).
	for name, m := range item.Max {
		d, ok := item.Default[name]
		require.True(t, ok, "no default limit for %s", name)
		dr, ok := item.DefaultRequest[name]
		require.True(t, ok, "no default request for %s", name)
		assert.LessOrEqual(t, dr.Cmp(d), 0, "%s: default request above default limit", name)
		assert.LessOrEqual(t, d.Cmp(m), 0, "%s: default limit above max", name)
	}
	assert.True(t, item.DefaultRequest.StorageEphemeral().IsZero())
}

// Every golden pod passes the LimitRange: after its defaults, no container
// requests more than its limit or goes over max.
func TestGoldenPodsPassLimitRange(t *testing.T) {
	for name, c := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			objs, err := All(c.nc, c.p)
			require.NoError(t, err)
			lr := find[*corev1.LimitRange](objs, LimitRangeName)
			require.NotNil(t, lr)
			item := lr.Spec.Limits[0]
			for _, o := range objs {
				spec := podSpecFor(o)
				if spec == nil {
					continue
				}
				for _, ctr := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
					r := admitted(ctr.Resources, item.Default)
					for res, req := range r.Requests {
						if lim, ok := r.Limits[res]; ok {
							assert.LessOrEqual(t, req.Cmp(lim), 0, "%s/%s: %s request %s over limit %s", o.GetName(), ctr.Name, res, req.String(), lim.String())
						}
					}
					for res, m := range item.Max {
						lim := r.Limits[res]
						assert.LessOrEqual(t, lim.Cmp(m), 0, "%s/%s: %s over max", o.GetName(), ctr.Name, res)
					}
				}
			}
		})
	}
}

func podSpecFor(o Object) *corev1.PodSpec {
	switch w := o.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template.Spec
	case *appsv1.StatefulSet:
		return &w.Spec.Template.Spec
	}
	return nil
}

func templateLabels(t *testing.T, objs []Object, name string) labels.Set {
	t.Helper()
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.Deployment:
			if w.Name == name {
				return w.Spec.Template.Labels
			}
		case *appsv1.StatefulSet:
			if w.Name == name {
				return w.Spec.Template.Labels
			}
		}
	}
	t.Fatalf("no workload %s", name)
	return nil
}

func selects(t *testing.T, s *metav1.LabelSelector, l labels.Set) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	require.NoError(t, err)
	return sel.Matches(l)
}

// Etcd's client port admits only kube-apiserver pods, and only those of the
// same namespace: a peer with a podSelector and no namespaceSelector or
// ipBlock. The selector matches the labels APIServer() renders on its pods
// and no other component's.
func TestEtcdPolicyAdmitsOnlySameNamespaceAPIServer(t *testing.T) {
	for _, in := range []string{"minimal", "ha-pvc", "custom"} {
		t.Run(in, func(t *testing.T) {
			nc := decodeNestedCluster(t, "testdata/"+in+"/input.yaml")
			objs, err := All(nc, defaultParams)
			require.NoError(t, err)
			np := find[*networkingv1.NetworkPolicy](objs, provisioner.EtcdName)
			require.NotNil(t, np)
			assert.True(t, selects(t, &np.Spec.PodSelector, templateLabels(t, objs, provisioner.EtcdName)))

			apiObjs, err := APIServer(nc, defaultParams)
			require.NoError(t, err)
			apiLabels := templateLabels(t, apiObjs, provisioner.APIServerName)
			others := map[string]labels.Set{
				provisioner.EtcdName:              templateLabels(t, objs, provisioner.EtcdName),
				provisioner.ControllerManagerName: templateLabels(t, objs, provisioner.ControllerManagerName),
				provisioner.SchedulerName:         templateLabels(t, objs, provisioner.SchedulerName),
			}

			var clientRules int
			for _, rule := range np.Spec.Ingress {
				require.NotEmpty(t, rule.From, "an ingress rule without from admits every source")
				require.NotEmpty(t, rule.Ports, "an ingress rule without ports admits every port")
				for _, peer := range rule.From {
					require.NotNil(t, peer.PodSelector)
					assert.Nil(t, peer.NamespaceSelector, "a namespaceSelector would admit other namespaces")
					assert.Nil(t, peer.IPBlock)
				}
				for _, port := range rule.Ports {
					if port.Port.IntValue() != profiles.EtcdClientPort {
						continue
					}
					clientRules++
					for _, peer := range rule.From {
						assert.True(t, selects(t, peer.PodSelector, apiLabels), "the client port must admit kube-apiserver pods")
						for name, l := range others {
							assert.False(t, selects(t, peer.PodSelector, l), "the client port admits %s pods", name)
						}
					}
				}
			}
			assert.Equal(t, 1, clientRules)
		})
	}
}

// Every rendered pod is covered by default-deny and by exactly the one
// allow policy of its component; allow policies come before default-deny.
func TestNetworkPoliciesCoverEveryPod(t *testing.T) {
	want := map[string]string{
		v1alpha1.ComponentEtcd:              provisioner.EtcdName,
		v1alpha1.ComponentAPIServer:         provisioner.APIServerName,
		v1alpha1.ComponentControllerManager: NetworkPolicyControllers,
		v1alpha1.ComponentScheduler:         NetworkPolicyControllers,
		v1alpha1.ComponentSyncer:            NetworkPolicySyncer,
	}
	for name, c := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			objs, err := All(c.nc, c.p)
			require.NoError(t, err)
			var policies []*networkingv1.NetworkPolicy
			for _, o := range NetworkPolicies(c.nc, c.p) {
				np := o.(*networkingv1.NetworkPolicy)
				assert.Equal(t, "NetworkPolicy", np.Kind)
				assert.Equal(t, provisioner.NamespaceOf(c.nc, c.p.Addresses()), np.Namespace)
				assert.Equal(t, string(c.nc.UID), np.Labels[provisioner.OwnerUIDLabel])
				assert.ElementsMatch(t, bothPolicyTypes, np.Spec.PolicyTypes)
				policies = append(policies, np)
			}
			require.NotEmpty(t, policies)
			assert.Equal(t, NetworkPolicyDefaultDeny, policies[len(policies)-1].Name, "default-deny goes last")
			if c.nc.Spec.Etcd.Managed == nil {
				assert.Nil(t, find[*networkingv1.NetworkPolicy](objs, provisioner.EtcdName))
			}
			for _, o := range objs {
				if podSpecFor(o) == nil {
					continue
				}
				l := templateLabels(t, objs, o.GetName())
				var matched []string
				for _, np := range policies {
					if selects(t, &np.Spec.PodSelector, l) {
						matched = append(matched, np.Name)
					}
				}
				assert.ElementsMatch(t, []string{NetworkPolicyDefaultDeny, want[l[v1alpha1.ComponentLabel]]}, matched, o.GetName())
			}
		})
	}
}

// The policy objects precede every workload, LimitRange before the quota.
func TestAllPutsPolicyFirst(t *testing.T) {
	objs, err := All(cluster(), Params{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(objs), 3)
	assert.IsType(t, &corev1.Namespace{}, objs[0])
	assert.IsType(t, &corev1.LimitRange{}, objs[1])
	assert.IsType(t, &corev1.ResourceQuota{}, objs[2])
	seenWorkload := false
	for _, o := range objs[3:] {
		_, isPolicy := o.(*networkingv1.NetworkPolicy)
		if !isPolicy {
			seenWorkload = true
			continue
		}
		assert.False(t, seenWorkload, "NetworkPolicy %s after a workload object", o.GetName())
	}
}

// tmpfs pages count against the etcd container's memory: a Memory etcd's
// size is added to the default memory limit, or it would be killed as it
// fills.
func TestLimitRangeMakesRoomForMemoryEtcd(t *testing.T) {
	nc := cluster()
	size := resource.MustParse("6Gi")
	nc.Spec.Etcd.Managed.Storage = v1alpha1.EtcdStorage{Type: v1alpha1.EtcdStorageMemory, Size: &size}
	item := LimitRange(nc, Params{}).Spec.Limits[0]
	assert.Equal(t, "10Gi", ptrTo(item.Default[corev1.ResourceMemory]).String())
}

func ptrTo[T any](v T) *T { return &v }

// The provider's placement reaches every control-plane pod, etcd included.
func TestPlacementAppliesToEveryPod(t *testing.T) {
	pl := Placement{
		NodeSelector:      map[string]string{"node-role.example.com/control-planes": ""},
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Value: "capn", Effect: corev1.TaintEffectNoSchedule}},
		PriorityClassName: "capn-control-plane",
	}
	objs, err := All(cluster(), Params{Placement: pl})
	require.NoError(t, err)
	pods := 0
	for _, o := range objs {
		spec := podSpecFor(o)
		if spec == nil {
			continue
		}
		pods++
		assert.Equal(t, pl.NodeSelector, spec.NodeSelector, o.GetName())
		assert.Equal(t, pl.Tolerations, spec.Tolerations, o.GetName())
		assert.Equal(t, pl.PriorityClassName, spec.PriorityClassName, o.GetName())
	}
	assert.Equal(t, 4, pods, "etcd, kube-apiserver, kube-controller-manager, kube-scheduler")
}

// capn-apiserver reads and writes a managed etcd for backups and restores:
// its pods, in its namespace only, reach the client port, and nothing else
// new does.
func TestEtcdPolicyLetsCapnIn(t *testing.T) {
	nc := cluster()
	client := func(p Params) []networkingv1.NetworkPolicyPeer {
		for _, o := range NetworkPolicies(nc, p) {
			if np := o.(*networkingv1.NetworkPolicy); np.Name == provisioner.EtcdName {
				return np.Spec.Ingress[0].From
			}
		}
		t.Fatal("no etcd NetworkPolicy")
		return nil
	}
	assert.Len(t, client(Params{}), 1, "without capn's namespace, only the apiserver")
	peers := client(Params{CapnNamespace: "capn-system"})
	require.Len(t, peers, 2)
	capn := peers[1]
	require.NotNil(t, capn.NamespaceSelector)
	require.NotNil(t, capn.PodSelector)
	assert.Equal(t, map[string]string{corev1.LabelMetadataName: "capn-system"}, capn.NamespaceSelector.MatchLabels)
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "capn-apiserver"}, capn.PodSelector.MatchLabels)
}
