package builders

import (
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

// customize applies a user's ComponentSpec to the generated pod template, in
// this order: image, command, env, resources, then the podTemplate patch.
// What capn relies on is put back afterwards: the labels the selector and
// Services match and capn's annotations.
func customize(tpl *corev1.PodTemplateSpec, component string, spec *v1alpha1.ComponentSpec) error {
	c := &tpl.Spec.Containers[0]
	if spec.Image != "" {
		c.Image = spec.Image
	}
	if len(spec.Command) > 0 {
		c.Command = append([]string(nil), spec.Command...)
	}
	if err := addEnv(c, spec.Env); err != nil {
		return fmt.Errorf("%s: %w", component, err)
	}
	if spec.Resources != nil {
		c.Resources = *spec.Resources.DeepCopy()
	}
	if spec.PodTemplate == nil {
		return nil
	}
	ours := tpl.ObjectMeta.DeepCopy()
	patch, tuned := splitTunableEnv(spec.PodTemplate, c.Name)
	merged, err := mergePodTemplate(tpl, patch)
	if err != nil {
		return fmt.Errorf("%s: podTemplate: %w", component, err)
	}
	*tpl = *merged
	for i := range tpl.Spec.Containers {
		if tpl.Spec.Containers[i].Name == c.Name {
			if err := addEnv(&tpl.Spec.Containers[i], tuned); err != nil {
				return fmt.Errorf("%s: podTemplate: %w", component, err)
			}
		}
	}
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	maps.Copy(tpl.Labels, ours.Labels)
	if len(ours.Annotations) > 0 && tpl.Annotations == nil {
		tpl.Annotations = map[string]string{}
	}
	maps.Copy(tpl.Annotations, ours.Annotations)
	// The API refuses true; false again here in case the patch came from
	// an object stored before that rule.
	tpl.Spec.AutomountServiceAccountToken = ptr.To(false)
	harden(&tpl.Spec)
	return nil
}

// harden puts capn's confinement back on every container after a merge: a
// strategic merge replaces lists, so `drop: [NET_ADMIN]` would otherwise
// replace `drop: [ALL]`, and a stored object may predate the allow-list.
// Settings a tenant may narrow (user and group IDs) are kept.
func harden(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			sc := cs[i].SecurityContext
			if sc == nil {
				sc = &corev1.SecurityContext{}
				cs[i].SecurityContext = sc
			}
			sc.Privileged, sc.ProcMount, sc.WindowsOptions = nil, nil, nil
			sc.AllowPrivilegeEscalation = ptr.To(false)
			sc.ReadOnlyRootFilesystem = ptr.To(true)
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
			if sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
				sc.SeccompProfile = nil
			}
			if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
				sc.AppArmorProfile = nil
			}
		}
	}
	if psc := spec.SecurityContext; psc != nil {
		psc.RunAsNonRoot = ptr.To(true)
		psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		psc.Sysctls = nil
	}
	spec.HostNetwork, spec.HostPID, spec.HostIPC = false, false, false
}

// addEnv appends the user's env. capn's own variables feed the flags, so a
// user variable of the same name is an error rather than a silent override;
// the lean Go settings (tunableEnv) are defaults, and the user's replace them.
func addEnv(c *corev1.Container, env []corev1.EnvVar) error {
next:
	for _, e := range env {
		for i, have := range c.Env {
			if have.Name != e.Name {
				continue
			}
			if !tunableEnv[e.Name] {
				return fmt.Errorf("env %q is set by capn", e.Name)
			}
			c.Env[i] = *e.DeepCopy() // a lean default the tenant tunes
			continue next
		}
		c.Env = append(c.Env, *e.DeepCopy())
	}
	return nil
}

// splitTunableEnv takes the tunable variables (tunableEnv) out of the
// template's entry for capn's container. A strategic merge merges an env
// entry field by field, so a template's GOMEMLIMIT value over capn's
// valueFrom would leave both set, which the API refuses; addEnv replaces
// them whole instead, as it does for spec.env.
func splitTunableEnv(patch *corev1.PodTemplateSpec, container string) (*corev1.PodTemplateSpec, []corev1.EnvVar) {
	var tuned []corev1.EnvVar
	out := patch.DeepCopy()
	for i := range out.Spec.Containers {
		pc := &out.Spec.Containers[i]
		if pc.Name != container || len(pc.Env) == 0 {
			continue
		}
		kept := pc.Env[:0]
		for _, e := range pc.Env {
			if tunableEnv[e.Name] {
				tuned = append(tuned, e)
				continue
			}
			kept = append(kept, e)
		}
		pc.Env = kept
	}
	return out, tuned
}

// mergePodTemplate strategic-merges patch over base, as `kubectl patch`
// would: containers merge by name, env and volumes by name, volumeMounts by
// mountPath, so a user can add a sidecar, a variable or a toleration without
// restating the generated pod.
func mergePodTemplate(base, patch *corev1.PodTemplateSpec) (*corev1.PodTemplateSpec, error) {
	// Args of the generated container are the profile plus extraArgs; a
	// patch replacing them wholesale would bypass the owned-flag checks.
	for _, pc := range patch.Spec.Containers {
		if pc.Name == base.Spec.Containers[0].Name && pc.Args != nil {
			return nil, fmt.Errorf("containers[%s].args: set flags with extraArgs, not the pod template", pc.Name)
		}
	}
	baseJSON, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	patchJSON, err := typedPatchJSON(patch)
	if err != nil {
		return nil, err
	}
	mergedJSON, err := strategicpatch.StrategicMergePatch(baseJSON, patchJSON, corev1.PodTemplateSpec{})
	if err != nil {
		return nil, err
	}
	out := &corev1.PodTemplateSpec{}
	if err := json.Unmarshal(mergedJSON, out); err != nil {
		return nil, err
	}
	return out, nil
}

// typedPatchJSON turns the typed podTemplate into a patch. Marshalling a Go
// struct emits null for required-but-empty fields (spec.containers when the
// user set none); in a merge patch null means "delete", so nulls are pruned:
// a typed object cannot have meant a deletion.
func typedPatchJSON(patch *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	var m any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return json.Marshal(pruneNulls(m))
}

func pruneNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = pruneNulls(e)
		}
	case []any:
		for i, e := range t {
			t[i] = pruneNulls(e)
		}
	}
	return v
}

// podAnnotations are capn's pod-template annotations for a kube-* component
// built for version.
func podAnnotations(version string, p Params, configData map[string]string) map[string]string {
	a := map[string]string{provisioner.VersionAnnotation: version}
	if p.CertsHash != "" {
		a[provisioner.CertsHashAnnotation] = p.CertsHash
	}
	if configData != nil {
		a[provisioner.ConfigHashAnnotation] = configHash(configData)
	}
	return a
}

// args renders the profile's flags for component with the user's extraArgs.
func args(prof profiles.Profile, component string, in profiles.Params, extra map[string]string) ([]string, error) {
	base, err := prof.Flags(component, in)
	if err != nil {
		return nil, err
	}
	merged, err := profiles.Merge(component, base, extra)
	if err != nil {
		return nil, err
	}
	return merged.Args(), nil
}
