package nestedcluster

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/registry/subresource"
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
		Status:        &StatusREST{Store: &statusStore},
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
type StatusREST = subresource.StatusREST
