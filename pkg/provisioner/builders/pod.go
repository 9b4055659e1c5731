package builders

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

// nonRootID is the "nonroot" uid/gid of distroless images. The component
// images hold one static binary and need no particular user; fsGroup makes
// the mounted certificates (mode 0440) and etcd's data volume theirs.
const nonRootID = int64(65532)

// secretMode: readable by the owner and fsGroup, nobody else.
const secretMode = int32(0o440)

// Default requests up to revision 7: near each component's measured RSS,
// and CPU sized before an idle tenant's Node label loop was fixed (docs/
// benchmarks.md, Density), when an idle tenant used about 250 millicores.
// No limits of their own: the LimitRange gives the default ones, so a busy
// tenant is slowed rather than killed.
var defaultResources = map[string]corev1.ResourceList{
	v1alpha1.ComponentEtcd:              requests("50m", "64Mi"),
	v1alpha1.ComponentAPIServer:         requests("100m", "256Mi"),
	v1alpha1.ComponentControllerManager: requests("50m", "128Mi"),
	v1alpha1.ComponentScheduler:         requests("25m", "64Mi"),
	v1alpha1.ComponentSyncer:            requests("25m", "64Mi"),
}

// IdleRequestsTemplateRevision is the first revision whose CPU requests
// are what an idle tenant measurably uses plus headroom (idleResources).
const IdleRequestsTemplateRevision = 8

// idleResources are the requests from IdleRequestsTemplateRevision on. An
// idle tenant uses about 41 millicores (kube-apiserver 19, etcd 10,
// kube-controller-manager 9, kube-scheduler 2, capn-syncer 1: docs/
// benchmarks.md, Density), so 250m of requests packed seven tenants on a
// 2-CPU node while it idled. A request is the tenant's share when the node
// is busy, not a cap: the LimitRange's default limit lets a busy component
// burst. Memory stays at the measured RSS: it is not what fills a node.
var idleResources = map[string]corev1.ResourceList{
	v1alpha1.ComponentEtcd:              requests("12m", "64Mi"),
	v1alpha1.ComponentAPIServer:         requests("25m", "256Mi"),
	v1alpha1.ComponentControllerManager: requests("10m", "128Mi"),
	v1alpha1.ComponentScheduler:         requests("3m", "64Mi"),
	v1alpha1.ComponentSyncer:            requests("3m", "64Mi"),
}

// componentRequests are component's requests at rev, raised to the
// provider's floor (Placement.RequestFloor); a tenant's spec.<component>.
// resources replaces them whole afterwards (customize).
func componentRequests(component string, rev int, floor corev1.ResourceList) corev1.ResourceList {
	out := defaultResources[component].DeepCopy()
	if rev >= IdleRequestsTemplateRevision {
		out = idleResources[component].DeepCopy()
	}
	for name, min := range floor {
		if have, ok := out[name]; !ok || have.Cmp(min) < 0 {
			out[name] = min.DeepCopy()
		}
	}
	return out
}

func requests(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// objectMeta names an object of component in nc's management namespace.
// Its labels carry the owner's UID; pod templates' do not (podTemplate).
func objectMeta(nc *v1alpha1.NestedCluster, p Params, name, component string) metav1.ObjectMeta {
	l := provisioner.ComponentLabels(nc, component)
	l[provisioner.OwnerUIDLabel] = string(nc.UID)
	return metav1.ObjectMeta{Name: name, Namespace: provisioner.NamespaceOf(nc, p.Addresses()), Labels: l}
}

// podSpec is the hardened skeleton every generated pod starts from: no
// service-account token and no Service env vars (capn's pods talk to the
// tenant apiserver, never the management one), non-root, RuntimeDefault
// seccomp, and a container that can gain nothing and write nowhere but its
// volumes.
func podSpec(nc *v1alpha1.NestedCluster, p Params, component string, c corev1.Container, volumes []corev1.Volume) corev1.PodSpec {
	c.ImagePullPolicy = corev1.PullIfNotPresent
	c.Env = append([]corev1.EnvVar{
		{Name: profiles.EnvPodIP, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: profiles.EnvPodName, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
	}, c.Env...)
	c.Env = append(c.Env, leanEnv(component, c.Name, p.revision(component))...)
	c.Resources = corev1.ResourceRequirements{Requests: componentRequests(component, p.revision(component), p.Placement.RequestFloor[component])}
	c.SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	return corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:        ptr.To(true),
			RunAsUser:           ptr.To(nonRootID),
			RunAsGroup:          ptr.To(nonRootID),
			FSGroup:             ptr.To(nonRootID),
			FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
			SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{c},
		Volumes:    volumes,
		// Spread replicas over nodes when the management cluster can.
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					TopologyKey:   corev1.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchLabels: provisioner.SelectorLabels(nc, component)},
				},
			}},
		}},
	}
}

// file is one Secret key projected to a path in a pki volume.
type file struct{ secret, key, path string }

// projectedSecrets builds one volume from several Secrets, so a component
// sees kubeadm's flat layout while each Secret keeps one purpose, and only
// the listed keys (never a CA key the component does not need) appear.
func projectedSecrets(name string, files []file) corev1.Volume {
	var sources []corev1.VolumeProjection
	index := map[string]int{}
	for _, f := range files {
		i, ok := index[f.secret]
		if !ok {
			i = len(sources)
			index[f.secret] = i
			sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: f.secret},
			}})
		}
		s := sources[i].Secret
		s.Items = append(s.Items, corev1.KeyToPath{Key: f.key, Path: f.path})
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: sources, DefaultMode: ptr.To(secretMode),
	}}}
}

func configMapVolume(name, configMap string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, DefaultMode: ptr.To(secretMode),
	}}}
}

// httpsProbe/httpProbe: a GET on the component's own port.
func httpsProbe(path string, port int, period, failures int32) *corev1.Probe {
	p := httpProbe(path, port, period, failures)
	p.HTTPGet.Scheme = corev1.URISchemeHTTPS
	return p
}

func httpProbe(path string, port int, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(int32(port)), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 15,
	}
}

func tcpPort(name string, port int) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}
}

// configHash fingerprints generated config files for ConfigHashAnnotation.
func configHash(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k + "\x00" + data[k] + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
