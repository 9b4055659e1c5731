// Package placement parses the provider's placement flags, shared by
// capn-apiserver (control-plane pods) and capn-syncer (tenant pods).
package placement

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseToleration reads "key[=value][:Effect]": with a value the operator
// is Equal, without one Exists; no effect tolerates every effect.
func ParseToleration(s string) (corev1.Toleration, error) {
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
