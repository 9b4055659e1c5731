// Package nestedclusterbackup is the REST storage of NestedClusterBackups:
// spec and status apart, the spec fixed at create, and the finalizer that
// makes capn delete a backup's data before its object goes.
package nestedclusterbackup

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
	"capn.dev/capn/pkg/registry/authz"
)

type backupStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	// adminGroups may remove the finalizer besides capn (break glass).
	adminGroups []string
}

func (backupStrategy) NamespaceScoped() bool { return true }

func (backupStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"capn.dev/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// PrepareForCreate sets the finalizer here, not in the provisioner: the
// data a backup will have must be cleaned up even if capn first sees the
// backup only when it is already being deleted.
func (backupStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	b := obj.(*capn.NestedClusterBackup)
	b.Status = capn.NestedClusterBackupStatus{}
	b.Generation = 1
	if !slices.Contains(b.Finalizers, v1alpha1.BackupFinalizer) {
		b.Finalizers = append(b.Finalizers, v1alpha1.BackupFinalizer)
	}
}

func (backupStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newB, oldB := obj.(*capn.NestedClusterBackup), old.(*capn.NestedClusterBackup)
	newB.Status = oldB.Status
}

func (backupStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateNestedClusterBackup(obj.(*capn.NestedClusterBackup))
}

func (s backupStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newB, oldB := obj.(*capn.NestedClusterBackup), old.(*capn.NestedClusterBackup)
	return append(validation.ValidateNestedClusterBackupUpdate(newB, oldB), s.finalizerErrors(ctx, newB, oldB)...)
}

// finalizerErrors keeps the finalizer for capn to remove: a tenant that
// dropped it would leave the data in the provider's store for good.
func (s backupStrategy) finalizerErrors(ctx context.Context, newB, oldB *capn.NestedClusterBackup) field.ErrorList {
	if !slices.Contains(oldB.Finalizers, v1alpha1.BackupFinalizer) || slices.Contains(newB.Finalizers, v1alpha1.BackupFinalizer) ||
		authz.IsCapnOrAdmin(ctx, s.adminGroups) {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
		v1alpha1.BackupFinalizer+" is removed by capn once the backup's data is deleted")}
}

func (backupStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (backupStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (backupStrategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (backupStrategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (backupStrategy) Canonicalize(runtime.Object) {}

type statusStrategy struct {
	backupStrategy
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"capn.dev/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels")),
	}
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newB, oldB := obj.(*capn.NestedClusterBackup), old.(*capn.NestedClusterBackup)
	newB.Spec = oldB.Spec
	newB.Labels = oldB.Labels
}

func (s statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newB, oldB := obj.(*capn.NestedClusterBackup), old.(*capn.NestedClusterBackup)
	return append(validation.ValidateNestedClusterBackupStatusUpdate(newB, oldB), s.finalizerErrors(ctx, newB, oldB)...)
}

func getAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	b, ok := obj.(*capn.NestedClusterBackup)
	if !ok {
		return nil, nil, fmt.Errorf("given object is not a NestedClusterBackup: %T", obj)
	}
	return labels.Set(b.Labels), generic.ObjectMetaFieldsSet(&b.ObjectMeta, true), nil
}

func match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: getAttrs}
}
