package server

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/provisioner/builders"
)

// PlacementOptions are the provider's scheduling of control-plane pods.
// Tenants cannot set any of it: their podTemplates may not name nodes,
// tolerations or priorities.
type PlacementOptions struct {
	NodeSelector      map[string]string
	Tolerations       []string
	PriorityClassName string
}

// parseToleration reads "key[=value][:Effect]": with a value the operator
// is Equal, without one Exists; no effect tolerates every effect.
func parseToleration(s string) (corev1.Toleration, error) {
	var t corev1.Toleration
	rest, effect, hasEffect := strings.Cut(s, ":")
	if hasEffect {
		switch e := corev1.TaintEffect(effect); e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			t.Effect = e
		default:
			return t, fmt.Errorf("%q: effect must be NoSchedule, PreferNoSchedule or NoExecute", s)
		}
	}
	key, value, hasValue := strings.Cut(rest, "=")
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		return t, fmt.Errorf("%q: key %s", s, strings.Join(msgs, "; "))
	}
	t.Key, t.Operator = key, corev1.TolerationOpExists
	if hasValue {
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return t, fmt.Errorf("%q: value %s", s, strings.Join(msgs, "; "))
		}
		t.Value, t.Operator = value, corev1.TolerationOpEqual
	}
	return t, nil
}

// Placement validates the flags and returns what the builders apply.
func (o PlacementOptions) Placement() (builders.Placement, error) {
	out := builders.Placement{NodeSelector: o.NodeSelector, PriorityClassName: o.PriorityClassName}
	if errs := metav1validation.ValidateLabels(o.NodeSelector, field.NewPath("--control-plane-node-selector")); len(errs) > 0 {
		return out, errs.ToAggregate()
	}
	if n := o.PriorityClassName; n != "" {
		if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
			return out, fmt.Errorf("--control-plane-priority-class %q: %s", n, strings.Join(msgs, "; "))
		}
	}
	for _, s := range o.Tolerations {
		t, err := parseToleration(s)
		if err != nil {
			return out, fmt.Errorf("--control-plane-tolerations %w", err)
		}
		out.Tolerations = append(out.Tolerations, t)
	}
	return out, nil
}
