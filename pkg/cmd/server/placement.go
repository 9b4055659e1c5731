package server

import (
	"fmt"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/placement"
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
		t, err := placement.ParseToleration(s)
		if err != nil {
			return out, fmt.Errorf("--control-plane-tolerations %w", err)
		}
		out.Tolerations = append(out.Tolerations, t)
	}
	return out, nil
}
