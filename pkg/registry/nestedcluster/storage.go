package nestedcluster

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"capn.dev/capn/pkg/apis/capn"
)

// Storage holds the main resource and every subresource; all of them share
// one genericregistry.Store so they read and write the same etcd key.
type Storage struct {
	NestedCluster *REST
	Status        *StatusREST
	Scale         *ScaleREST
	Upgrade       *UpgradeREST
}

// NewStorage builds the etcd-backed storage for nestedclusters.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, policy Policy) (Storage, error) {
	policy, err := policy.complete()
	if err != nil {
		return Storage{}, err
	}
	strategy := NewStrategy(scheme, policy)
	statusStrategy := NewStatusStrategy(strategy)

	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &capn.NestedCluster{} },
		NewListFunc:               func() runtime.Object { return &capn.NestedClusterList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  capn.Resource("nestedclusters"),
		SingularQualifiedResource: capn.Resource("nestedcluster"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return Storage{}, err
	}

	statusStore := *store
	statusStore.UpdateStrategy = statusStrategy
	statusStore.ResetFieldsStrategy = statusStrategy

	return Storage{
		NestedCluster: &REST{store},
		Status:        &StatusREST{store: &statusStore},
		Scale:         &ScaleREST{store: store},
		Upgrade:       &UpgradeREST{store: store},
	}, nil
}

// REST is the main nestedclusters resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets users type `kubectl get nc`.
func (*REST) ShortNames() []string { return []string{"nc"} }

// Categories lets users type `kubectl get capn`.
func (*REST) Categories() []string { return []string{"capn"} }

// StatusREST is the /status subresource.
type StatusREST struct {
	store *genericregistry.Store
}

var _ = rest.Patcher(&StatusREST{})

func (r *StatusREST) New() runtime.Object { return &capn.NestedCluster{} }

// Destroy is a no-op: the store is shared with REST, which owns its lifetime.
func (r *StatusREST) Destroy() {}

func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update changes status only; the status strategy restores spec and labels.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Status writes never create: there is nothing to report on for an object
	// that does not exist.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
