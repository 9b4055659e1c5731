package validation

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/tenant/names"
)

// The pod template is a strategic-merge patch over a pod capn generates and
// runs in the management cluster's nodes, under the provider's account. It
// is checked against an allow-list: only the fields below may be set, and a
// field Kubernetes adds to PodSpec tomorrow is refused until it is listed
// here. What is left out is what would give the tenant more than its
// control plane: scheduling and placement (nodeSelector, affinity,
// tolerations, priority, runtime and scheduler names, topology spread: the
// provider's to set), host access, identities, Secrets and ConfigMaps of
// the management namespace, storage the nodes would mount or claim, and pod
// metadata that changes the pod's lifecycle (finalizers, owners, names).
//
// The merge itself cannot weaken capn's hardening either: the builders
// re-impose it after merging (builders.customize).

// rule is one node of the allow-list: an object with the listed fields,
// a list whose items follow items, a map with free keys whose values follow
// values, or a leaf (check validates its value, if set).
type rule struct {
	fields   map[string]*rule
	items    *rule
	maxItems int
	values   *rule
	check    func(v any, p *field.Path) field.ErrorList
}

func leaf() *rule { return &rule{} }

func object(fields map[string]*rule) *rule { return &rule{fields: fields} }

func list(max int, items *rule) *rule { return &rule{items: items, maxItems: max} }

// Bounds: a component's pod runs beside other tenants' on the provider's
// nodes, so none of it may be unbounded.
const (
	maxContainers      = 8 // including the component's own
	maxInitContainers  = 4
	maxVolumes         = 16
	maxVolumeMounts    = 16
	maxEnv             = 64
	maxPorts           = 8
	maxCommandArgs     = 64
	maxTemplateMetaLen = 16 << 10 // labels and annotations, bytes
)

var (
	// positive is for user and group IDs: 0 would be root.
	positive = &rule{check: func(v any, p *field.Path) field.ErrorList {
		if n, ok := v.(float64); !ok || n < 1 || n > math.MaxInt32 {
			return field.ErrorList{field.Invalid(p, v, "must be a user or group ID between 1 and 2147483647: root is not allowed")}
		}
		return nil
	}}
	mustBe = func(want bool) *rule {
		return &rule{check: func(v any, p *field.Path) field.ErrorList {
			if b, ok := v.(bool); !ok || b != want {
				return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("may only be %t: capn's hardening cannot be relaxed", want))}
			}
			return nil
		}}
	}
	fieldRef         = object(map[string]*rule{"fieldPath": leaf(), "apiVersion": leaf()})
	resourceFieldRef = object(map[string]*rule{"containerName": leaf(), "resource": leaf(), "divisor": leaf()})
	envVar           = object(map[string]*rule{
		"name": leaf(), "value": leaf(),
		"valueFrom": object(map[string]*rule{"fieldRef": fieldRef, "resourceFieldRef": resourceFieldRef}),
	})
	// Names and bounds are validateResources' to check.
	resourceList = &rule{values: leaf()}
	probe        = object(map[string]*rule{
		"httpGet":             object(map[string]*rule{"path": leaf(), "port": leaf(), "scheme": leaf()}),
		"tcpSocket":           object(map[string]*rule{"port": leaf()}),
		"grpc":                object(map[string]*rule{"port": leaf(), "service": leaf()}),
		"exec":                object(map[string]*rule{"command": list(maxCommandArgs, leaf())}),
		"initialDelaySeconds": leaf(), "periodSeconds": leaf(), "timeoutSeconds": leaf(),
		"failureThreshold": leaf(), "successThreshold": leaf(),
	})
	containerFields = map[string]*rule{
		"name": leaf(), "image": leaf(), "imagePullPolicy": leaf(),
		"command": list(maxCommandArgs, leaf()), "args": list(maxCommandArgs, leaf()), "workingDir": leaf(),
		"env":          list(maxEnv, envVar),
		"volumeMounts": list(maxVolumeMounts, object(map[string]*rule{"name": leaf(), "mountPath": leaf(), "readOnly": leaf(), "subPath": leaf()})),
		"resources":    object(map[string]*rule{"limits": resourceList, "requests": resourceList}),
		"ports":        list(maxPorts, object(map[string]*rule{"name": leaf(), "containerPort": leaf(), "protocol": leaf()})),
		"securityContext": object(map[string]*rule{
			"runAsUser": positive, "runAsGroup": positive, "runAsNonRoot": mustBe(true),
			"readOnlyRootFilesystem": mustBe(true), "allowPrivilegeEscalation": mustBe(false),
		}),
		"readinessProbe": probe, "livenessProbe": probe, "startupProbe": probe,
	}
	container     = object(containerFields)
	initContainer = object(with(containerFields, "restartPolicy", &rule{check: func(v any, p *field.Path) field.ErrorList {
		if v != string(corev1.ContainerRestartPolicyAlways) {
			return field.ErrorList{field.NotSupported(p, v, []string{string(corev1.ContainerRestartPolicyAlways)})}
		}
		return nil
	}}))
	downwardAPIItems = list(maxVolumes, object(map[string]*rule{"path": leaf(), "fieldRef": fieldRef, "resourceFieldRef": resourceFieldRef, "mode": leaf()}))
	downwardAPI      = object(map[string]*rule{"items": downwardAPIItems, "defaultMode": leaf()})
	volume           = object(map[string]*rule{
		"name": leaf(),
		"emptyDir": object(map[string]*rule{"medium": &rule{check: func(v any, p *field.Path) field.ErrorList {
			if v != "" && v != string(corev1.StorageMediumMemory) {
				return field.ErrorList{field.NotSupported(p, v, []string{"", string(corev1.StorageMediumMemory)})}
			}
			return nil
		}}, "sizeLimit": leaf()}),
		"downwardAPI": downwardAPI,
		"projected":   object(map[string]*rule{"sources": list(maxVolumes, object(map[string]*rule{"downwardAPI": downwardAPI})), "defaultMode": leaf()}),
		"image":       object(map[string]*rule{"reference": leaf(), "pullPolicy": leaf()}),
	})
	podTemplateRule = object(map[string]*rule{
		"metadata": object(map[string]*rule{"labels": {values: leaf()}, "annotations": {values: leaf()}}),
		"spec": object(map[string]*rule{
			"containers":     list(maxContainers, container),
			"initContainers": list(maxInitContainers, initContainer),
			"volumes":        list(maxVolumes, volume),
			"terminationGracePeriodSeconds": {check: func(v any, p *field.Path) field.ErrorList {
				if n, ok := v.(float64); !ok || n < 0 || n > names.MaxGracePeriodSeconds {
					return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("must be between 0 and %d seconds", names.MaxGracePeriodSeconds))}
				}
				return nil
			}},
			"securityContext": object(map[string]*rule{
				"runAsUser": positive, "runAsGroup": positive, "runAsNonRoot": mustBe(true), "fsGroup": positive,
				"supplementalGroups": list(16, positive),
			}),
		}),
	})
)

func with(m map[string]*rule, k string, r *rule) map[string]*rule {
	out := maps.Clone(m)
	out[k] = r
	return out
}

func validatePodTemplate(tpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	if tpl == nil {
		return nil
	}
	data, err := json.Marshal(tpl)
	if err != nil {
		return field.ErrorList{field.InternalError(fldPath, err)}
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return field.ErrorList{field.InternalError(fldPath, err)}
	}
	allErrs := podTemplateRule.walk(doc, fldPath)

	mp := fldPath.Child("metadata")
	allErrs = append(allErrs, metav1validation.ValidateLabels(tpl.Labels, mp.Child("labels"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(tpl.Annotations, mp.Child("annotations"))...)
	allErrs = append(allErrs, validateReservedKeys(tpl.Labels, mp.Child("labels"))...)
	allErrs = append(allErrs, validateReservedKeys(tpl.Annotations, mp.Child("annotations"))...)
	if n := metaSize(tpl.Labels) + metaSize(tpl.Annotations); n > maxTemplateMetaLen {
		allErrs = append(allErrs, field.TooLong(mp, n, maxTemplateMetaLen))
	}

	sp := fldPath.Child("spec")
	for _, cs := range []struct {
		name string
		list []corev1.Container
	}{{"initContainers", tpl.Spec.InitContainers}, {"containers", tpl.Spec.Containers}} {
		for i := range cs.list {
			cp := sp.Child(cs.name).Index(i)
			if cs.list[i].Name == "" {
				allErrs = append(allErrs, field.Required(cp.Child("name"), "the patch merges containers by name"))
			}
			allErrs = append(allErrs, validateEnv(cs.list[i].Env, cp.Child("env"))...)
			allErrs = append(allErrs, validateResources(&cs.list[i].Resources, cp.Child("resources"))...)
		}
	}
	for i, v := range tpl.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && v.EmptyDir.SizeLimit.Cmp(maxEmptyDir) > 0 {
			allErrs = append(allErrs, field.Invalid(sp.Child("volumes").Index(i).Child("emptyDir", "sizeLimit"),
				v.EmptyDir.SizeLimit.String(), "must be at most "+maxEmptyDir.String()))
		}
	}
	return allErrs
}

// walk checks v against r, reporting every field r does not allow.
func (r *rule) walk(v any, p *field.Path) field.ErrorList {
	if v == nil {
		return nil // JSON null: unset (e.g. metadata.creationTimestamp)
	}
	var allErrs field.ErrorList
	switch {
	case r.fields != nil:
		m, ok := v.(map[string]any)
		if !ok {
			return field.ErrorList{field.Invalid(p, v, "must be an object")}
		}
		for _, k := range sortedKeys(m) {
			child, ok := r.fields[k]
			if !ok {
				if m[k] == nil {
					continue
				}
				allErrs = append(allErrs, field.Forbidden(p.Child(k), "may not be set in a pod template; allowed here: "+strings.Join(sortedKeys(r.fields), ", ")))
				continue
			}
			allErrs = append(allErrs, child.walk(m[k], p.Child(k))...)
		}
	case r.items != nil:
		l, ok := v.([]any)
		if !ok {
			return field.ErrorList{field.Invalid(p, v, "must be a list")}
		}
		if len(l) > r.maxItems {
			return field.ErrorList{field.TooMany(p, len(l), r.maxItems)}
		}
		for i, item := range l {
			allErrs = append(allErrs, r.items.walk(item, p.Index(i))...)
		}
	case r.values != nil:
		m, ok := v.(map[string]any)
		if !ok {
			return field.ErrorList{field.Invalid(p, v, "must be a map")}
		}
		for _, k := range sortedKeys(m) {
			allErrs = append(allErrs, r.values.walk(m[k], p.Key(k))...)
		}
	case r.check != nil:
		allErrs = r.check(v, p)
	}
	return allErrs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// reservedDomains are label and annotation prefixes that tell the
// management cluster's own machinery (kubelet, kubectl, the autoscaler,
// Pod Security, capn itself) what to do with a pod; a tenant may not set
// them on a pod that runs under the provider's account.
var reservedDomains = []string{"kubernetes.io", "k8s.io", "capn.dev"}

func validateReservedKeys(m map[string]string, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, k := range sortedKeys(m) {
		prefix, _, ok := strings.Cut(k, "/")
		if !ok {
			continue
		}
		for _, d := range reservedDomains {
			if prefix == d || strings.HasSuffix(prefix, "."+d) {
				allErrs = append(allErrs, field.Forbidden(p.Key(k), "keys under "+d+" are reserved for the management cluster and capn"))
				break
			}
		}
	}
	return allErrs
}

func metaSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}
