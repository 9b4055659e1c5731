package nestedcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
)

// UpgradeREST serves POST nestedclusters/NAME/upgrade. It records intent
// (spec.version) after checking the skew policy; the provisioner acts on it.
// RBAC grants it as `create` on nestedclusters/upgrade, so an operator can
// allow upgrades without allowing arbitrary spec edits.
type UpgradeREST struct {
	store *genericregistry.Store
}

var (
	_ rest.NamedCreater    = &UpgradeREST{}
	_ rest.StorageMetadata = &UpgradeREST{}
)

func (r *UpgradeREST) New() runtime.Object { return &capn.NestedClusterUpgrade{} }

// Destroy is a no-op: the store is shared with REST, which owns its lifetime.
func (r *UpgradeREST) Destroy() {}

// ProducesMIMETypes and ProducesObject document in OpenAPI that the answer is
// the updated NestedCluster, not the request.
func (r *UpgradeREST) ProducesMIMETypes(string) []string { return nil }

func (r *UpgradeREST) ProducesObject(string) interface{} { return v1alpha1.NestedCluster{} }

func (r *UpgradeREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*capn.NestedClusterUpgrade)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a NestedClusterUpgrade, got %T", obj))
	}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q does not match the NestedCluster %q in the URL", req.Name, name))
	}
	if errs := validation.ValidateUpgradeRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(capn.Kind("NestedClusterUpgrade"), name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, req); err != nil {
			return nil, err
		}
	}

	updated, _, err := r.store.Update(ctx, name,
		rest.DefaultUpdatedObjectInfo(nil, setVersion(name, req)),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false,
		&metav1.UpdateOptions{DryRun: options.DryRun, FieldManager: options.FieldManager})
	if err != nil {
		return nil, err
	}
	return updated, nil
}

// setVersion builds the new NestedCluster from the stored one. It checks the
// skew here, against the object read inside the update, so the error names
// the request's field; the strategy checks the same rule again on spec.version.
func setVersion(name string, req *capn.NestedClusterUpgrade) rest.TransformFunc {
	return func(_ context.Context, _, oldObj runtime.Object) (runtime.Object, error) {
		nc := oldObj.DeepCopyObject().(*capn.NestedCluster)
		if nc.ResourceVersion == "" {
			return nil, apierrors.NewNotFound(capn.Resource("nestedclusters"), name)
		}
		if req.UID != "" && req.UID != nc.UID {
			return nil, apierrors.NewConflict(capn.Resource("nestedclusters/upgrade"), name,
				fmt.Errorf("precondition failed: UID in request: %v, UID of the NestedCluster: %v", req.UID, nc.UID))
		}
		errs := validation.ValidateVersionChange(field.NewPath("version"), nc.Spec.Version, req.Version, nc.Status.Upgrade)
		errs = append(errs, validation.ValidateAwakeForUpgrade(field.NewPath("version"), nc.Spec.Version, req.Version, nc.Spec.Sleep.Asleep)...)
		if len(errs) > 0 {
			return nil, apierrors.NewInvalid(capn.Kind("NestedClusterUpgrade"), name, errs)
		}
		nc.Spec.Version = req.Version
		// A resourceVersion in the request is an optimistic-concurrency
		// precondition: the store returns Conflict when it is stale.
		if req.ResourceVersion != "" {
			nc.ResourceVersion = req.ResourceVersion
		}
		return nc, nil
	}
}
