package validation

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

const (
	componentAPIServer         = "kube-apiserver"
	componentControllerManager = "kube-controller-manager"
	componentScheduler         = "kube-scheduler"
)

// Replicas bounds for the stateless components. They run inside the
// management cluster and are reached through one Service; beyond a handful,
// extra replicas only consume management capacity.
const (
	minComponentReplicas = 1
	maxComponentReplicas = 10
)

// extraArgKeyRE is a flag name as the components spell them. Leading dashes
// and '=' are refused so a key cannot smuggle a second flag or a value.
var extraArgKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// validateComponent validates the settings shared by kube-apiserver,
// kube-controller-manager and kube-scheduler. component selects the owned
// flag list.
func validateComponent(c *capn.ComponentSpec, component string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rp := fldPath.Child("replicas")
	switch {
	case c.Replicas == nil:
		allErrs = append(allErrs, field.Required(rp, ""))
	case *c.Replicas < minComponentReplicas || *c.Replicas > maxComponentReplicas:
		allErrs = append(allErrs, field.Invalid(rp, *c.Replicas, fmt.Sprintf(
			"must be between %d and %d: the component runs in the management cluster, where more replicas only add load",
			minComponentReplicas, maxComponentReplicas)))
	}
	if c.Image != "" {
		allErrs = append(allErrs, validateImage(fldPath.Child("image"), c.Image)...)
	}
	for i, arg := range c.Command {
		if arg == "" {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("command").Index(i), arg, "must not be empty"))
		}
	}
	allErrs = append(allErrs, validateExtraArgs(c.ExtraArgs, component, fldPath.Child("extraArgs"))...)
	allErrs = append(allErrs, validateEnv(c.Env, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateResources(c.Resources, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validatePodTemplate(c.PodTemplate, fldPath.Child("podTemplate"))...)
	return allErrs
}

func validateExtraArgs(args map[string]string, component string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys) // stable error order
	for _, k := range keys {
		p := fldPath.Key(k)
		if !extraArgKeyRE.MatchString(k) {
			allErrs = append(allErrs, field.Invalid(p, k, "must be a flag name without leading dashes or '=', matching "+extraArgKeyRE.String()))
			continue
		}
		if reason, owned := OwnedFlag(component, k); owned {
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("flag %q is managed by capn: %s", k, reason)))
			continue
		}
		// The value becomes one argv element; a newline or NUL would make
		// the generated manifest or the process arguments lie about it.
		if strings.ContainsAny(args[k], "\n\r\x00") {
			allErrs = append(allErrs, field.Invalid(p, args[k], "must not contain newlines or NUL characters"))
		}
	}
	return allErrs
}

// validateEnv allows literal values and references to the pod itself.
// Secret and ConfigMap references would resolve in the management
// namespace, whose objects (capn's PKI among them) the tenant does not own.
func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, e := range env {
		p := fldPath.Index(i)
		np := p.Child("name")
		switch {
		case e.Name == "":
			allErrs = append(allErrs, field.Required(np, ""))
		case seen[e.Name]:
			allErrs = append(allErrs, field.Duplicate(np, e.Name))
		default:
			for _, msg := range utilvalidation.IsEnvVarName(e.Name) {
				allErrs = append(allErrs, field.Invalid(np, e.Name, msg))
			}
		}
		seen[e.Name] = true
		if e.ValueFrom == nil {
			continue
		}
		vp := p.Child("valueFrom")
		if e.Value != "" {
			allErrs = append(allErrs, field.Invalid(p.Child("value"), e.Value, "may not be set together with valueFrom"))
		}
		const mgmt = "would read an object in the management namespace, which the tenant does not own"
		if e.ValueFrom.SecretKeyRef != nil {
			allErrs = append(allErrs, field.Forbidden(vp.Child("secretKeyRef"), mgmt))
		}
		if e.ValueFrom.ConfigMapKeyRef != nil {
			allErrs = append(allErrs, field.Forbidden(vp.Child("configMapKeyRef"), mgmt))
		}
		if e.ValueFrom.FileKeyRef != nil {
			allErrs = append(allErrs, field.Forbidden(vp.Child("fileKeyRef"), "only value, fieldRef and resourceFieldRef are supported"))
		}
		if r := e.ValueFrom.FieldRef; r != nil && r.FieldPath == "" {
			allErrs = append(allErrs, field.Required(vp.Child("fieldRef", "fieldPath"), ""))
		}
		if r := e.ValueFrom.ResourceFieldRef; r != nil && r.Resource == "" {
			allErrs = append(allErrs, field.Required(vp.Child("resourceFieldRef", "resource"), ""))
		}
	}
	return allErrs
}

// validateResources is deliberately shallow: the kubelet and the pod
// validation of the management cluster are the authorities; this only stops
// values that could never be scheduled.
func validateResources(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, l := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range sortedResourceNames(l.list) {
			if q := l.list[name]; q.Sign() < 0 {
				allErrs = append(allErrs, field.Invalid(fldPath.Child(l.name).Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for _, name := range sortedResourceNames(r.Requests) {
		req := r.Requests[name]
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return allErrs
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
