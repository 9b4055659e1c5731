// Package nestedcluster is the REST storage of nestedclusters and its
// subresources. The strategies here decide which fields each kind of write
// may change; /status, /scale and /upgrade are views over one store.
package nestedcluster

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/validation"
)

// nestedClusterStrategy governs writes to the main resource: users own spec,
// the provisioner owns status.
type nestedClusterStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	policy Policy
}

// NewStrategy returns the strategy for spec writes.
func NewStrategy(typer runtime.ObjectTyper, policy Policy) nestedClusterStrategy {
	return nestedClusterStrategy{typer, names.SimpleNameGenerator, policy}
}

func (nestedClusterStrategy) NamespaceScoped() bool { return true }

// GetResetFields tells server-side apply that status is never owned through
// the main resource, so a user's apply cannot claim or clear it.
func (nestedClusterStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"capn.dev/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (s nestedClusterStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	nc := obj.(*capn.NestedCluster)
	nc.Status = capn.NestedClusterStatus{}
	nc.Generation = 1
	s.policy.DataPlane.prepareOnCreate(nc)
	if d := s.policy.DefaultSleepAfterInactivity; d > 0 && !nc.Spec.Sleep.Asleep && nc.Spec.Sleep.AfterInactivity == nil {
		nc.Spec.Sleep.AfterInactivity = &metav1.Duration{Duration: d}
	}
}

func (nestedClusterStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newNC, oldNC := obj.(*capn.NestedCluster), old.(*capn.NestedCluster)
	newNC.Status = oldNC.Status
	// Generation counts spec changes only, so observedGeneration tells the
	// user whether the provisioner has seen what they asked for.
	if !apiequality.Semantic.DeepEqual(newNC.Spec, oldNC.Spec) {
		newNC.Generation = oldNC.Generation + 1
	}
}

func (s nestedClusterStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	nc := obj.(*capn.NestedCluster)
	errs := append(validation.ValidateNestedCluster(nc), s.policy.DataPlane.errors(nc, nil)...)
	errs = append(errs, s.policy.poolErrors(ctx, nc, nil)...)
	errs = append(errs, s.policy.restoreErrors(ctx, nc)...)
	return append(errs, s.policy.secretErrors(ctx, nc, nil)...)
}

func (nestedClusterStrategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return specWarnings(obj.(*capn.NestedCluster))
}

func (nestedClusterStrategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (nestedClusterStrategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (nestedClusterStrategy) Canonicalize(runtime.Object) {}

func (s nestedClusterStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newNC, oldNC := obj.(*capn.NestedCluster), old.(*capn.NestedCluster)
	errs := validation.ValidateNestedClusterUpdate(newNC, oldNC)
	errs = append(errs, s.policy.finalizerErrors(ctx, newNC, oldNC)...)
	errs = append(errs, s.policy.DataPlane.errors(newNC, oldNC)...)
	return append(errs, s.policy.secretErrors(ctx, newNC, oldNC)...)
}

func (nestedClusterStrategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return specWarnings(obj.(*capn.NestedCluster))
}

// specWarnings flags choices that are valid but easy to regret.
func specWarnings(nc *capn.NestedCluster) []string {
	var w []string
	if m := nc.Spec.Etcd.Managed; m != nil && m.Storage.Type == capn.EtcdStorageMemory {
		w = append(w, "spec.etcd.managed.storage.type: Memory keeps etcd data in tmpfs; all tenant state is lost when an etcd pod restarts")
	}
	return w
}

// nestedClusterStatusStrategy governs /status writes: the provisioner may
// change status and nothing else.
type nestedClusterStatusStrategy struct {
	nestedClusterStrategy
}

// NewStatusStrategy returns the strategy for /status writes.
func NewStatusStrategy(s nestedClusterStrategy) nestedClusterStatusStrategy {
	return nestedClusterStatusStrategy{s}
}

func (nestedClusterStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"capn.dev/v1alpha1": fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "labels"),
		),
	}
}

func (nestedClusterStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newNC, oldNC := obj.(*capn.NestedCluster), old.(*capn.NestedCluster)
	newNC.Spec = oldNC.Spec
	newNC.Labels = oldNC.Labels
}

func (s nestedClusterStatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newNC, oldNC := obj.(*capn.NestedCluster), old.(*capn.NestedCluster)
	// /status keeps metadata writable, so it needs the finalizer guard too.
	return append(validation.ValidateNestedClusterStatusUpdate(newNC, oldNC), s.policy.finalizerErrors(ctx, newNC, oldNC)...)
}

func (nestedClusterStatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns the labels and fields that list/watch selectors match on.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	nc, ok := obj.(*capn.NestedCluster)
	if !ok {
		return nil, nil, fmt.Errorf("given object is not a NestedCluster: %T", obj)
	}
	fs := generic.ObjectMetaFieldsSet(&nc.ObjectMeta, true)
	fs["status.phase"] = string(nc.Status.Phase)
	return labels.Set(nc.Labels), fs, nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
