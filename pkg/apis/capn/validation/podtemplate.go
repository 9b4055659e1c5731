package validation

import (
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The pod template is a strategic-merge patch over a pod capn generates and
// runs in the management cluster, so it is partial by design: containers may
// carry only a name, volumes only a name. What is checked is that the patch
// cannot give the tenant more than the management cluster means to: no host
// namespaces, paths or ports, no privilege, no management-cluster identity
// and no reads of management-namespace objects. The rules follow the Pod
// Security "baseline" level plus those identity and object rules.
const (
	whyHost     = "would give the pod access to the management cluster's node"
	whyPriv     = "would let a container gain privileges on the management cluster's node"
	whyIdentity = "would borrow a management-cluster identity"
	whyMgmtObj  = "would read an object in the management namespace, which the tenant does not own"
	whyVolume   = "only emptyDir, downwardAPI, ephemeral, image and downwardAPI-only projected volumes are allowed"
)

func validatePodTemplate(tpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	if tpl == nil {
		return nil
	}
	mp := fldPath.Child("metadata")
	allErrs := metav1validation.ValidateLabels(tpl.Labels, mp.Child("labels"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(tpl.Annotations, mp.Child("annotations"))...)

	spec, sp := &tpl.Spec, fldPath.Child("spec")
	forbidIf := func(cond bool, p *field.Path, why string) {
		if cond {
			allErrs = append(allErrs, field.Forbidden(p, why))
		}
	}
	forbidIf(spec.HostNetwork, sp.Child("hostNetwork"), whyHost)
	forbidIf(spec.HostPID, sp.Child("hostPID"), whyHost)
	forbidIf(spec.HostIPC, sp.Child("hostIPC"), whyHost)
	forbidIf(spec.NodeName != "", sp.Child("nodeName"), "would bypass the management cluster's scheduler")
	forbidIf(spec.ServiceAccountName != "", sp.Child("serviceAccountName"), whyIdentity)
	forbidIf(spec.DeprecatedServiceAccount != "", sp.Child("serviceAccount"), whyIdentity)
	forbidIf(isTrue(spec.AutomountServiceAccountToken), sp.Child("automountServiceAccountToken"), whyIdentity)

	if sc := spec.SecurityContext; sc != nil {
		scp := sp.Child("securityContext")
		forbidIf(len(sc.Sysctls) > 0, scp.Child("sysctls"), "would change kernel settings on the management cluster's node")
		allErrs = append(allErrs, validateSandbox(sc.WindowsOptions, sc.SeccompProfile, sc.AppArmorProfile, scp)...)
	}

	for i := range spec.Volumes {
		allErrs = append(allErrs, validateVolume(&spec.Volumes[i], sp.Child("volumes").Index(i))...)
	}
	for i := range spec.InitContainers {
		allErrs = append(allErrs, validateContainer(&spec.InitContainers[i], sp.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		allErrs = append(allErrs, validateContainer(&spec.Containers[i], sp.Child("containers").Index(i))...)
	}
	for i := range spec.EphemeralContainers {
		allErrs = append(allErrs, validateContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), sp.Child("ephemeralContainers").Index(i))...)
	}
	return allErrs
}

func validateVolume(v *corev1.Volume, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	named := []struct {
		set  bool
		name string
		why  string
	}{
		{v.HostPath != nil, "hostPath", "would expose the management cluster node's filesystem"},
		{v.Secret != nil, "secret", whyMgmtObj},
		{v.ConfigMap != nil, "configMap", whyMgmtObj},
		{v.PersistentVolumeClaim != nil, "persistentVolumeClaim", whyMgmtObj},
	}
	for _, n := range named {
		if n.set {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(n.name), n.why))
		}
	}
	if v.Projected != nil {
		for i, s := range v.Projected.Sources {
			if s.DownwardAPI == nil || s.Secret != nil || s.ConfigMap != nil || s.ServiceAccountToken != nil ||
				s.ClusterTrustBundle != nil || s.PodCertificate != nil {
				allErrs = append(allErrs, field.Forbidden(fldPath.Child("projected", "sources").Index(i), whyVolume))
			}
		}
	}
	// Anything else (network and cloud volumes, inline CSI, gitRepo) would
	// have the management cluster's nodes mount storage on a tenant's say.
	rest := v.VolumeSource
	rest.HostPath, rest.Secret, rest.ConfigMap, rest.PersistentVolumeClaim, rest.Projected = nil, nil, nil, nil, nil
	rest.EmptyDir, rest.DownwardAPI, rest.Ephemeral, rest.Image = nil, nil, nil, nil
	if rest != (corev1.VolumeSource{}) {
		allErrs = append(allErrs, field.Forbidden(fldPath, whyVolume))
	}
	return allErrs
}

func validateContainer(c *corev1.Container, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnv(c.Env, fldPath.Child("env"))
	for i, ef := range c.EnvFrom {
		p := fldPath.Child("envFrom").Index(i)
		if ef.SecretRef != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("secretRef"), whyMgmtObj))
		}
		if ef.ConfigMapRef != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("configMapRef"), whyMgmtObj))
		}
	}
	for i, port := range c.Ports {
		if port.HostPort != 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("ports").Index(i).Child("hostPort"), whyHost))
		}
	}
	sc := c.SecurityContext
	if sc == nil {
		return allErrs
	}
	scp := fldPath.Child("securityContext")
	if isTrue(sc.Privileged) {
		allErrs = append(allErrs, field.Forbidden(scp.Child("privileged"), whyPriv))
	}
	if isTrue(sc.AllowPrivilegeEscalation) {
		allErrs = append(allErrs, field.Forbidden(scp.Child("allowPrivilegeEscalation"), whyPriv))
	}
	if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
		allErrs = append(allErrs, field.Forbidden(scp.Child("capabilities", "add"), whyPriv))
	}
	if sc.ProcMount != nil {
		allErrs = append(allErrs, field.Forbidden(scp.Child("procMount"), "would unmask /proc of the management cluster's node"))
	}
	return append(allErrs, validateSandbox(sc.WindowsOptions, sc.SeccompProfile, sc.AppArmorProfile, scp)...)
}

// validateSandbox covers the settings that exist at both pod and container
// level and each switch a confinement off.
func validateSandbox(w *corev1.WindowsSecurityContextOptions, seccomp *corev1.SeccompProfile, apparmor *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if w != nil && isTrue(w.HostProcess) {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("windowsOptions", "hostProcess"), whyHost))
	}
	if seccomp != nil && seccomp.Type == corev1.SeccompProfileTypeUnconfined {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("seccompProfile", "type"), whyPriv))
	}
	if apparmor != nil && apparmor.Type == corev1.AppArmorProfileTypeUnconfined {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("appArmorProfile", "type"), whyPriv))
	}
	return allErrs
}

func isTrue(b *bool) bool { return b != nil && *b }
