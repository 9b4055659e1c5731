package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
			wantErr{pod + ".serviceAccountName", field.ErrorTypeForbidden, "identity"}},
		{"automountServiceAccountToken", func(nc *capn.NestedCluster) { tpl(nc).AutomountServiceAccountToken = ptr.To(true) },
			wantErr{pod + ".automountServiceAccountToken", field.ErrorTypeForbidden, ""}},
		{"sysctls", func(nc *capn.NestedCluster) {
			tpl(nc).SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
		}, wantErr{pod + ".securityContext.sysctls", field.ErrorTypeForbidden, ""}},
		{"pod seccomp unconfined", func(nc *capn.NestedCluster) {
			tpl(nc).SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}, wantErr{pod + ".securityContext.seccompProfile.type", field.ErrorTypeForbidden, ""}},
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
		}, wantErr{"spec.controllerManager.podTemplate.spec.volumes[0].hostPath", field.ErrorTypeForbidden, "filesystem"}},
		{"secret volume", func(nc *capn.NestedCluster) {
			tpl(nc).Volumes = vol(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other-ca"}})
		}, wantErr{pod + ".volumes[0].secret", field.ErrorTypeForbidden, ""}},
		{"nfs volume", func(nc *capn.NestedCluster) {
			tpl(nc).Volumes = vol(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}})
		}, wantErr{pod + ".volumes[0]", field.ErrorTypeForbidden, "only emptyDir"}},
		{"projected service account token", func(nc *capn.NestedCluster) {
			tpl(nc).Volumes = vol(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}})
		}, wantErr{pod + ".volumes[0].projected.sources[0]", field.ErrorTypeForbidden, ""}},
		{"privileged container", func(nc *capn.NestedCluster) { tpl(nc).Containers[0].SecurityContext.Privileged = ptr.To(true) },
			wantErr{ctr0 + ".securityContext.privileged", field.ErrorTypeForbidden, ""}},
		{"privilege escalation in init container", func(nc *capn.NestedCluster) {
			tpl(nc).InitContainers = []corev1.Container{{Name: "init", SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}}}
		}, wantErr{pod + ".initContainers[0].securityContext.allowPrivilegeEscalation", field.ErrorTypeForbidden, ""}},
		{"capabilities added in ephemeral container", func(nc *capn.NestedCluster) {
			tpl(nc).EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}},
			}}}
		}, wantErr{pod + ".ephemeralContainers[0].securityContext.capabilities.add", field.ErrorTypeForbidden, ""}},
		{"procMount", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}, wantErr{ctr0 + ".securityContext.procMount", field.ErrorTypeForbidden, ""}},
		{"windows hostProcess", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}, wantErr{ctr0 + ".securityContext.windowsOptions.hostProcess", field.ErrorTypeForbidden, ""}},
		{"container appArmor unconfined", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}, wantErr{ctr0 + ".securityContext.appArmorProfile.type", field.ErrorTypeForbidden, ""}},
		{"hostPort", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 6443, HostPort: 6443}}
		}, wantErr{ctr0 + ".ports[0].hostPort", field.ErrorTypeForbidden, ""}},
		{"envFrom secret", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}
		}, wantErr{ctr0 + ".envFrom[0].secretRef", field.ErrorTypeForbidden, ""}},
		{"container env secretKeyRef", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].Env = []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
		}, wantErr{ctr0 + ".env[0].valueFrom.secretKeyRef", field.ErrorTypeForbidden, ""}},
		{"template label invalid", func(nc *capn.NestedCluster) {
			tpl(nc)
			nc.Spec.APIServer.PodTemplate.Labels = map[string]string{"bad key!": "x"}
		}, wantErr{"spec.apiServer.podTemplate.metadata.labels", field.ErrorTypeInvalid, ""}},
	})
}
