package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
)

// tpl gives the apiserver a pod template with one container to poke at.
func tpl(nc *capn.NestedCluster) *corev1.PodSpec {
	nc.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "kube-apiserver", SecurityContext: &corev1.SecurityContext{}}},
	}}
	return &nc.Spec.APIServer.PodTemplate.Spec
}

func env(nc *capn.NestedCluster, e ...corev1.EnvVar) { nc.Spec.APIServer.Env = e }

func vol(src corev1.VolumeSource) []corev1.Volume {
	return []corev1.Volume{{Name: "v", VolumeSource: src}}
}

const (
	api  = "spec.apiServer"
	pod  = "spec.apiServer.podTemplate.spec"
	ctr0 = pod + ".containers[0]"
)

func TestValidateComponentInvalid(t *testing.T) {
	runInvalid(t, []invalidCase{
		// replicas, once per component: validateComponent is shared but the
		// path must name the right one.
		{"apiserver replicas missing", func(nc *capn.NestedCluster) { nc.Spec.APIServer.Replicas = nil },
			wantErr{api + ".replicas", field.ErrorTypeRequired, ""}},
		{"apiserver replicas 0", func(nc *capn.NestedCluster) { nc.Spec.APIServer.Replicas = ptr.To[int32](0) },
			wantErr{api + ".replicas", field.ErrorTypeInvalid, "between 1 and 10"}},
		{"controller-manager replicas negative", func(nc *capn.NestedCluster) { nc.Spec.ControllerManager.Replicas = ptr.To[int32](-1) },
			wantErr{"spec.controllerManager.replicas", field.ErrorTypeInvalid, ""}},
		{"scheduler replicas 11", func(nc *capn.NestedCluster) { nc.Spec.Scheduler.Replicas = ptr.To[int32](11) },
			wantErr{"spec.scheduler.replicas", field.ErrorTypeInvalid, ""}},

		{"image invalid", func(nc *capn.NestedCluster) { nc.Spec.APIServer.Image = "kube-apiserver:" },
			wantErr{api + ".image", field.ErrorTypeInvalid, "image reference"}},
		{"command with empty element", func(nc *capn.NestedCluster) { nc.Spec.Scheduler.Command = []string{"kube-scheduler", ""} },
			wantErr{"spec.scheduler.command[1]", field.ErrorTypeInvalid, ""}},

		// extraArgs
		{"extraArg with dashes", func(nc *capn.NestedCluster) { nc.Spec.APIServer.ExtraArgs = map[string]string{"--v": "2"} },
			wantErr{api + ".extraArgs[--v]", field.ErrorTypeInvalid, "leading dashes"}},
		{"extraArg with =", func(nc *capn.NestedCluster) { nc.Spec.APIServer.ExtraArgs = map[string]string{"v=2": ""} },
			wantErr{api + ".extraArgs[v=2]", field.ErrorTypeInvalid, ""}},
		{"extraArg value with newline", func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.ExtraArgs = map[string]string{"v": "2\n--anonymous-auth=true"}
		},
			wantErr{api + ".extraArgs[v]", field.ErrorTypeInvalid, "newlines"}},
		{"extraArg value with NUL", func(nc *capn.NestedCluster) { nc.Spec.Scheduler.ExtraArgs = map[string]string{"v": "2\x00"} },
			wantErr{"spec.scheduler.extraArgs[v]", field.ErrorTypeInvalid, ""}},
		{"apiserver owned flag", func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.ExtraArgs = map[string]string{"etcd-servers": "http://evil:2379"}
		},
			wantErr{api + ".extraArgs[etcd-servers]", field.ErrorTypeForbidden, `flag "etcd-servers" is managed by capn: it wires kube-apiserver to its etcd`}},
		{"apiserver service-account prefix", func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.ExtraArgs = map[string]string{"service-account-issuer": "https://x"}
		},
			wantErr{api + ".extraArgs[service-account-issuer]", field.ErrorTypeForbidden, "managed by capn"}},
		{"controller-manager owned flag", func(nc *capn.NestedCluster) {
			nc.Spec.ControllerManager.ExtraArgs = map[string]string{"cluster-cidr": "10.0.0.0/8"}
		},
			wantErr{"spec.controllerManager.extraArgs[cluster-cidr]", field.ErrorTypeForbidden, "podCIDR"}},
		{"scheduler owned flag", func(nc *capn.NestedCluster) { nc.Spec.Scheduler.ExtraArgs = map[string]string{"kubeconfig": "/tmp/x"} },
			wantErr{"spec.scheduler.extraArgs[kubeconfig]", field.ErrorTypeForbidden, ""}},

		// env
		{"env name empty", func(nc *capn.NestedCluster) { env(nc, corev1.EnvVar{Value: "x"}) },
			wantErr{api + ".env[0].name", field.ErrorTypeRequired, ""}},
		{"env name invalid", func(nc *capn.NestedCluster) { env(nc, corev1.EnvVar{Name: "1=A"}) },
			wantErr{api + ".env[0].name", field.ErrorTypeInvalid, ""}},
		{"env name duplicate", func(nc *capn.NestedCluster) { env(nc, corev1.EnvVar{Name: "A"}, corev1.EnvVar{Name: "A"}) },
			wantErr{api + ".env[1].name", field.ErrorTypeDuplicate, ""}},
		{"env secretKeyRef", func(nc *capn.NestedCluster) {
			env(nc, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}})
		}, wantErr{api + ".env[0].valueFrom.secretKeyRef", field.ErrorTypeForbidden, "management namespace"}},
		{"env configMapKeyRef", func(nc *capn.NestedCluster) {
			env(nc, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}})
		}, wantErr{api + ".env[0].valueFrom.configMapKeyRef", field.ErrorTypeForbidden, ""}},
		{"env value and valueFrom", func(nc *capn.NestedCluster) {
			env(nc, corev1.EnvVar{Name: "A", Value: "v", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
		}, wantErr{api + ".env[0].value", field.ErrorTypeInvalid, ""}},
		{"env fieldRef without path", func(nc *capn.NestedCluster) {
			env(nc, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{}}})
		}, wantErr{api + ".env[0].valueFrom.fieldRef.fieldPath", field.ErrorTypeRequired, ""}},

		// resources
		{"negative limit", func(nc *capn.NestedCluster) {
			nc.Spec.Scheduler.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("-100m")}}
		}, wantErr{"spec.scheduler.resources.limits[cpu]", field.ErrorTypeInvalid, ""}},
		{"request above limit", func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.Resources = &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"memory": resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{"memory": resource.MustParse("1Gi")},
			}
		}, wantErr{api + ".resources.requests[memory]", field.ErrorTypeInvalid, "less than or equal to memory limit"}},

		// pod template
		{"hostNetwork", func(nc *capn.NestedCluster) { tpl(nc).HostNetwork = true },
			wantErr{pod + ".hostNetwork", field.ErrorTypeForbidden, ""}},
		{"hostPID", func(nc *capn.NestedCluster) { tpl(nc).HostPID = true },
			wantErr{pod + ".hostPID", field.ErrorTypeForbidden, ""}},
		{"hostIPC", func(nc *capn.NestedCluster) { tpl(nc).HostIPC = true },
			wantErr{pod + ".hostIPC", field.ErrorTypeForbidden, ""}},
		{"nodeName", func(nc *capn.NestedCluster) { tpl(nc).NodeName = "node-1" },
			wantErr{pod + ".nodeName", field.ErrorTypeForbidden, ""}},
		{"serviceAccountName", func(nc *capn.NestedCluster) { tpl(nc).ServiceAccountName = "capn-provisioner" },
			wantErr{pod + ".serviceAccountName", field.ErrorTypeForbidden, "may not be set"}},
		{"automountServiceAccountToken", func(nc *capn.NestedCluster) { tpl(nc).AutomountServiceAccountToken = ptr.To(true) },
			wantErr{pod + ".automountServiceAccountToken", field.ErrorTypeForbidden, ""}},
		{"sysctls", func(nc *capn.NestedCluster) {
			tpl(nc).SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
		}, wantErr{pod + ".securityContext.sysctls", field.ErrorTypeForbidden, ""}},
		{"pod seccomp unconfined", func(nc *capn.NestedCluster) {
			tpl(nc).SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}, wantErr{pod + ".securityContext.seccompProfile", field.ErrorTypeForbidden, ""}},
		{"main container args in podTemplate", func(nc *capn.NestedCluster) {
			tpl(nc).Containers = []corev1.Container{{Name: "kube-apiserver", Args: []string{"--etcd-servers=http://evil:2379"}}}
		}, wantErr{pod + ".containers[0].args", field.ErrorTypeForbidden, "spec.apiServer.extraArgs"}},
		{"main container command in podTemplate", func(nc *capn.NestedCluster) {
			nc.Spec.Scheduler.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "kube-scheduler", Command: []string{"/bin/sh"}}},
			}}
		}, wantErr{"spec.scheduler.podTemplate.spec.containers[0].command", field.ErrorTypeForbidden, "spec.scheduler.command"}},
		{"hostPath volume", func(nc *capn.NestedCluster) {
			nc.Spec.ControllerManager.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Volumes: vol(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}),
			}}
		}, wantErr{"spec.controllerManager.podTemplate.spec.volumes[0].hostPath", field.ErrorTypeForbidden, "may not be set"}},
		{"secret volume", func(nc *capn.NestedCluster) {
			tpl(nc).Volumes = vol(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other-ca"}})
		}, wantErr{pod + ".volumes[0].secret", field.ErrorTypeForbidden, ""}},
		{"nfs volume", func(nc *capn.NestedCluster) {
			tpl(nc).Volumes = vol(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}})
		}, wantErr{pod + ".volumes[0].nfs", field.ErrorTypeForbidden, "allowed here: downwardAPI, emptyDir, image, name, projected"}},
		{"projected service account token", func(nc *capn.NestedCluster) {
			tpl(nc).Volumes = vol(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}})
		}, wantErr{pod + ".volumes[0].projected.sources[0].serviceAccountToken", field.ErrorTypeForbidden, ""}},
		{"privileged container", func(nc *capn.NestedCluster) { tpl(nc).Containers[0].SecurityContext.Privileged = ptr.To(true) },
			wantErr{ctr0 + ".securityContext.privileged", field.ErrorTypeForbidden, ""}},
		{"privilege escalation in init container", func(nc *capn.NestedCluster) {
			tpl(nc).InitContainers = []corev1.Container{{Name: "init", SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}}}
		}, wantErr{pod + ".initContainers[0].securityContext.allowPrivilegeEscalation", field.ErrorTypeInvalid, "may only be false"}},
		{"capabilities added in ephemeral container", func(nc *capn.NestedCluster) {
			tpl(nc).EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}},
			}}}
		}, wantErr{pod + ".ephemeralContainers", field.ErrorTypeForbidden, ""}},
		{"procMount", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}, wantErr{ctr0 + ".securityContext.procMount", field.ErrorTypeForbidden, ""}},
		{"windows hostProcess", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}, wantErr{ctr0 + ".securityContext.windowsOptions", field.ErrorTypeForbidden, ""}},
		{"container appArmor unconfined", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}, wantErr{ctr0 + ".securityContext.appArmorProfile", field.ErrorTypeForbidden, ""}},
		{"hostPort", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 6443, HostPort: 6443}}
		}, wantErr{ctr0 + ".ports[0].hostPort", field.ErrorTypeForbidden, ""}},
		{"envFrom secret", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}
		}, wantErr{ctr0 + ".envFrom", field.ErrorTypeForbidden, ""}},
		{"container env secretKeyRef", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].Env = []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
		}, wantErr{ctr0 + ".env[0].valueFrom.secretKeyRef", field.ErrorTypeForbidden, ""}},
		{"template label invalid", func(nc *capn.NestedCluster) {
			tpl(nc)
			nc.Spec.APIServer.PodTemplate.Labels = map[string]string{"bad key!": "x"}
		}, wantErr{"spec.apiServer.podTemplate.metadata.labels", field.ErrorTypeInvalid, ""}},
	})
}

// The tenant-boundary findings: each of these was accepted and rendered
// before the pod template was checked against an allow-list and bounded.
func TestValidatePodTemplateEscapes(t *testing.T) {
	tmpl := func(nc *capn.NestedCluster) *corev1.PodTemplateSpec {
		nc.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{}
		return nc.Spec.APIServer.PodTemplate
	}
	forbidden := func(path string) wantErr {
		return wantErr{path, field.ErrorTypeForbidden, "may not be set in a pod template"}
	}
	big := func(n int) string { return strings.Repeat("x", n) }
	runInvalid(t, []invalidCase{
		// Scheduling and placement: the provider's to set.
		{"nodeSelector", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		},
			forbidden(pod + ".nodeSelector")},
		{"affinity", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
		},
			forbidden(pod + ".affinity")},
		{"toleration Exists", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, forbidden(pod + ".tolerations")},
		{"priorityClassName", func(nc *capn.NestedCluster) { tmpl(nc).Spec.PriorityClassName = "system-node-critical" },
			forbidden(pod + ".priorityClassName")},
		{"runtimeClassName", func(nc *capn.NestedCluster) { tmpl(nc).Spec.RuntimeClassName = ptr.To("privileged-vm") },
			forbidden(pod + ".runtimeClassName")},
		{"schedulerName", func(nc *capn.NestedCluster) { tmpl(nc).Spec.SchedulerName = "my-scheduler" },
			forbidden(pod + ".schedulerName")},
		{"topologySpreadConstraints", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname"}}
		}, forbidden(pod + ".topologySpreadConstraints")},
		{"ephemeral volume claiming a PV by name", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "someone-elses-pv"}}}}}}
		}, forbidden(pod + ".volumes[0].ephemeral")},
		// Pods that can never be deleted.
		{"finalizers", func(nc *capn.NestedCluster) { tmpl(nc).Finalizers = []string{"example.com/never"} },
			forbidden(api + ".podTemplate.metadata.finalizers")},
		{"name", func(nc *capn.NestedCluster) { tmpl(nc).Name = "fixed" }, forbidden(api + ".podTemplate.metadata.name")},
		{"namespace", func(nc *capn.NestedCluster) { tmpl(nc).Namespace = "kube-system" }, forbidden(api + ".podTemplate.metadata.namespace")},
		{"ownerReferences", func(nc *capn.NestedCluster) {
			tmpl(nc).OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n", UID: "u"}}
		}, forbidden(api + ".podTemplate.metadata.ownerReferences")},
		{"grace period 2^40", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.TerminationGracePeriodSeconds = ptr.To[int64](1099511627776)
		},
			wantErr{pod + ".terminationGracePeriodSeconds", field.ErrorTypeInvalid, "between 0 and 60"}},
		{"root user", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}
		}, wantErr{pod + ".securityContext.runAsUser", field.ErrorTypeInvalid, "root"}},
		{"capabilities drop replaced", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.Containers = []corev1.Container{{Name: "kube-apiserver", SecurityContext: &corev1.SecurityContext{
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_ADMIN"}}}}}
		}, forbidden(ctr0 + ".securityContext.capabilities")},
		{"reserved annotation", func(nc *capn.NestedCluster) {
			tmpl(nc).Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
		}, wantErr{api + ".podTemplate.metadata.annotations[cluster-autoscaler.kubernetes.io/safe-to-evict]", field.ErrorTypeForbidden, "reserved"}},
		{"capn label", func(nc *capn.NestedCluster) { tmpl(nc).Labels = map[string]string{"capn.dev/cluster": "victim"} },
			wantErr{api + ".podTemplate.metadata.labels[capn.dev/cluster]", field.ErrorTypeForbidden, "reserved"}},
		{"too many sidecars", func(nc *capn.NestedCluster) {
			var cs []corev1.Container
			for i := range maxContainers + 1 {
				cs = append(cs, corev1.Container{Name: fmt.Sprintf("c%d", i)})
			}
			tmpl(nc).Spec.Containers = cs
		}, wantErr{pod + ".containers", field.ErrorTypeTooMany, ""}},

		// Unbounded consumption.
		{"cpu 100k", func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100k")}}
		}, wantErr{api + ".resources.requests[cpu]", field.ErrorTypeInvalid, "at most 16"}},
		{"request above the default limit, no limit", func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}}
		}, wantErr{api + ".resources.requests[memory]", field.ErrorTypeInvalid, "above the default memory limit of 4Gi: set limits.memory too"}},
		{"memory 1Pi in a template", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.Containers = []corev1.Container{{Name: "side", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Pi")}}}}
		}, wantErr{ctr0 + ".resources.limits[memory]", field.ErrorTypeInvalid, "at most 64Gi"}},
		{"extended resource", func(nc *capn.NestedCluster) {
			nc.Spec.Scheduler.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}
		}, wantErr{"spec.scheduler.resources.limits[nvidia.com/gpu]", field.ErrorTypeNotSupported, ""}},
		{"1400 extraArgs of 1 KB", func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.ExtraArgs = map[string]string{}
			for i := range 1400 {
				nc.Spec.APIServer.ExtraArgs[fmt.Sprintf("flag-%d", i)] = big(1024)
			}
		}, wantErr{api + ".extraArgs", field.ErrorTypeTooMany, ""}},
		{"extraArgs total size", func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.ExtraArgs = map[string]string{}
			for i := range 10 {
				nc.Spec.APIServer.ExtraArgs[fmt.Sprintf("flag-%d", i)] = big(4000)
			}
		}, wantErr{api + ".extraArgs", field.ErrorTypeTooLong, ""}},
		{"20000 env vars", func(nc *capn.NestedCluster) {
			for i := range 20000 {
				nc.Spec.ControllerManager.Env = append(nc.Spec.ControllerManager.Env, corev1.EnvVar{Name: fmt.Sprintf("E%d", i), Value: "x"})
			}
		}, wantErr{"spec.controllerManager.env", field.ErrorTypeTooMany, ""}},
		{"emptyDir of 1Ti", func(nc *capn.NestedCluster) {
			tmpl(nc).Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Ti"))}}}}
		}, wantErr{pod + ".volumes[0].emptyDir.sizeLimit", field.ErrorTypeInvalid, "at most 10Gi"}},
	})
}
