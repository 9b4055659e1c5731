package nestedcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	scalescheme "k8s.io/client-go/scale/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// replicasPaths maps each served version to the field /scale writes, so
// server-side apply ownership moves between Scale and NestedCluster intact.
var replicasPaths = managedfields.ResourcePathMappings{
	"capn.dev/v1alpha1": fieldpath.MakePathOrDie("spec", "apiServer", "replicas"),
}

// ScaleREST serves autoscaling/v1 Scale over spec.apiServer.replicas, so
// `kubectl scale` and HPA work on nestedclusters.
type ScaleREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
)

// GroupVersionKind makes discovery advertise autoscaling/v1 Scale, which is
// what kubectl and the HPA controller look for.
func (r *ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
}

func (r *ScaleREST) New() runtime.Object { return &scalescheme.Scale{} }

// Destroy is a no-op: the store is shared with REST, which owns its lifetime.
func (r *ScaleREST) Destroy() {}

func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return scaleFromNestedCluster(obj.(*capn.NestedCluster)), nil
}

// Update goes through store.Update so preconditions, conflicts, admission
// and the NestedCluster validation (replica bounds) all apply.
func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name,
		&scaleUpdatedObjectInfo{name: name, reqObjInfo: objInfo},
		toScaleCreateValidation(createValidation),
		toScaleUpdateValidation(updateValidation),
		false, options)
	if err != nil {
		return nil, false, err
	}
	return scaleFromNestedCluster(obj.(*capn.NestedCluster)), false, nil
}

// ConvertToTable renders Scales (`kubectl get --subresource=scale`); the
// store's convertor only knows NestedClusters.
func (r *ScaleREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return rest.NewDefaultTableConvertor(capn.Resource("nestedclusters/scale")).ConvertToTable(ctx, object, tableOptions)
}

// Admission sees the Scale, as it does for built-in scalable resources.
func toScaleCreateValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		return f(ctx, scaleFromNestedCluster(obj.(*capn.NestedCluster)))
	}
}

func toScaleUpdateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		return f(ctx, scaleFromNestedCluster(obj.(*capn.NestedCluster)), scaleFromNestedCluster(old.(*capn.NestedCluster)))
	}
}

func scaleFromNestedCluster(nc *capn.NestedCluster) *scalescheme.Scale {
	// Before the provisioner has reported, the selector is still knowable;
	// HPA needs one to resolve the target at all.
	selector := metav1.SetAsLabelSelector(APIServerSelector(nc.Name))
	if nc.Status.Selector != "" {
		if parsed, err := metav1.ParseToLabelSelector(nc.Status.Selector); err == nil {
			selector = parsed
		}
	}
	return &scalescheme.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              nc.Name,
			Namespace:         nc.Namespace,
			UID:               nc.UID,
			ResourceVersion:   nc.ResourceVersion,
			CreationTimestamp: nc.CreationTimestamp,
		},
		Spec:   scalescheme.ScaleSpec{Replicas: ptr.Deref(nc.Spec.APIServer.Replicas, 0)},
		Status: scalescheme.ScaleStatus{Replicas: nc.Status.Replicas, Selector: selector},
	}
}

// APIServerSelector is the label set on every tenant apiserver pod of a
// NestedCluster; the provisioner stamps it and /scale reports it.
func APIServerSelector(clusterName string) labels.Set {
	return v1alpha1.ComponentSelector(clusterName, v1alpha1.ComponentAPIServer)
}

// scaleUpdatedObjectInfo turns old NestedCluster -> old Scale -> new Scale
// (the user's change) -> new NestedCluster.
type scaleUpdatedObjectInfo struct {
	name       string
	reqObjInfo rest.UpdatedObjectInfo
}

func (i *scaleUpdatedObjectInfo) Preconditions() *metav1.Preconditions {
	return i.reqObjInfo.Preconditions()
}

func (i *scaleUpdatedObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	nc := oldObj.DeepCopyObject().(*capn.NestedCluster)
	if nc.ResourceVersion == "" {
		return nil, apierrors.NewNotFound(capn.Resource("nestedclusters/scale"), i.name)
	}

	handler := managedfields.NewScaleHandler(nc.ManagedFields, schema.GroupVersion{Group: capn.GroupName, Version: "v1alpha1"}, replicasPaths)
	oldScale := scaleFromNestedCluster(nc)
	scaleManaged, err := handler.ToSubresource()
	if err != nil {
		return nil, err
	}
	oldScale.ManagedFields = scaleManaged

	newObj, err := i.reqObjInfo.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	scale, ok := newObj.(*scalescheme.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but got %T", newObj))
	}

	if errs := validateScale(scale); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, nc.Name, errs)
	}
	if scale.UID != "" && scale.UID != nc.UID {
		return nil, apierrors.NewConflict(capn.Resource("nestedclusters/scale"), nc.Name,
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, nc.UID))
	}

	nc.Spec.APIServer.Replicas = ptr.To(scale.Spec.Replicas)
	// The Scale's resourceVersion is the NestedCluster's, so a stale one
	// fails with a Conflict in the store like any other update.
	nc.ResourceVersion = scale.ResourceVersion
	if nc.ManagedFields, err = handler.ToParent(scale.ManagedFields); err != nil {
		return nil, err
	}
	return nc, nil
}

// validateScale checks what belongs to the Scale itself; replica bounds
// belong to NestedCluster validation, which store.Update runs next.
func validateScale(scale *scalescheme.Scale) field.ErrorList {
	errs := metav1validation.ValidateManagedFields(scale.ManagedFields, field.NewPath("metadata", "managedFields"))
	if scale.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0"))
	}
	return errs
}
