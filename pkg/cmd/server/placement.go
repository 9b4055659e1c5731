package server

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	capnvalidation "capn.dev/capn/pkg/apis/capn/validation"
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
	// CPURequestFloor and MemoryRequestFloor map a component to the least
	// it requests (builders.Placement.RequestFloor).
	CPURequestFloor, MemoryRequestFloor map[string]string
}

// Flags of the provider's request floors.
const (
	FlagCPURequestFloor    = "control-plane-cpu-request-floor"
	FlagMemoryRequestFloor = "control-plane-memory-request-floor"
)

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
	for _, f := range []struct {
		flag     string
		resource corev1.ResourceName
		values   map[string]string
	}{{FlagCPURequestFloor, corev1.ResourceCPU, o.CPURequestFloor}, {FlagMemoryRequestFloor, corev1.ResourceMemory, o.MemoryRequestFloor}} {
		if err := addRequestFloor(&out, f.flag, f.resource, f.values); err != nil {
			return out, err
		}
	}
	return out, nil
}

// addRequestFloor parses one floor flag (component=quantity,...) into
// out.RequestFloor.
func addRequestFloor(out *builders.Placement, flag string, name corev1.ResourceName, values map[string]string) error {
	components := append(v1alpha1.Components(), v1alpha1.ComponentSyncer)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, component := range keys {
		if !slices.Contains(components, component) {
			return fmt.Errorf("--%s: unknown component %q (one of %s)", flag, component, strings.Join(components, ", "))
		}
		q, err := resource.ParseQuantity(values[component])
		if err != nil || q.Sign() < 0 {
			return fmt.Errorf("--%s: %s=%q: not a non-negative quantity", flag, component, values[component])
		}
		if max := capnvalidation.MaxResources()[name]; q.Cmp(max) > 0 {
			return fmt.Errorf("--%s: %s=%s: above the %s any container may request (%s)", flag, component, q.String(), name, max.String())
		}
		if out.RequestFloor == nil {
			out.RequestFloor = map[string]corev1.ResourceList{}
		}
		if out.RequestFloor[component] == nil {
			out.RequestFloor[component] = corev1.ResourceList{}
		}
		out.RequestFloor[component][name] = q
	}
	return nil
}
