// Package nestedetcdpool is the REST storage of nestedetcdpools, the
// provider's shared etcds. The provider owns spec; the provisioner owns
// status through /status.
package nestedetcdpool

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/registry/authz"
)

type poolStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	authorizer authorizer.Authorizer
}

func (poolStrategy) NamespaceScoped() bool { return false }

func (poolStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"capn.dev/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (poolStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	p := obj.(*capn.NestedEtcdPool)
	p.Status = capn.NestedEtcdPoolStatus{}
	p.Generation = 1
}

func (poolStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newP, oldP := obj.(*capn.NestedEtcdPool), old.(*capn.NestedEtcdPool)
	newP.Status = oldP.Status
	if !apiequality.Semantic.DeepEqual(newP.Spec, oldP.Spec) {
		newP.Generation = oldP.Generation + 1
	}
}

func (s poolStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	p := obj.(*capn.NestedEtcdPool)
	return append(validation.ValidateNestedEtcdPool(p), s.secretErrors(ctx, p, nil)...)
}

func (s poolStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newP, oldP := obj.(*capn.NestedEtcdPool), old.(*capn.NestedEtcdPool)
	return append(validation.ValidateNestedEtcdPoolUpdate(newP, oldP), s.secretErrors(ctx, newP, oldP)...)
}

// secretErrors: whoever points a pool at a Secret must be able to read it,
// or writing a pool would let them have capn use root credentials they
// cannot see. Checked when the reference is new or changed.
func (s poolStrategy) secretErrors(ctx context.Context, newP, oldP *capn.NestedEtcdPool) field.ErrorList {
	ref := newP.Spec.CredentialsSecretRef
	if ref.Name == "" || ref.Namespace == "" || (oldP != nil && oldP.Spec.CredentialsSecretRef == ref) {
		return nil
	}
	if msg := authz.CanGetSecret(ctx, s.authorizer, ref.Namespace, ref.Name); msg != "" {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "credentialsSecretRef"), msg)}
	}
	return nil
}

func (poolStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (poolStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (poolStrategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (poolStrategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (poolStrategy) Canonicalize(runtime.Object) {}

// statusStrategy lets the provisioner write status and nothing else.
type statusStrategy struct {
	poolStrategy
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"capn.dev/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels")),
	}
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newP, oldP := obj.(*capn.NestedEtcdPool), old.(*capn.NestedEtcdPool)
	newP.Spec = oldP.Spec
	newP.Labels = oldP.Labels
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateNestedEtcdPoolStatusUpdate(obj.(*capn.NestedEtcdPool), old.(*capn.NestedEtcdPool))
}

// getAttrs returns the labels and fields that list/watch selectors match on.
func getAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	p, ok := obj.(*capn.NestedEtcdPool)
	if !ok {
		return nil, nil, fmt.Errorf("given object is not a NestedEtcdPool: %T", obj)
	}
	return labels.Set(p.Labels), generic.ObjectMetaFieldsSet(&p.ObjectMeta, false), nil
}

func match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: getAttrs}
}
