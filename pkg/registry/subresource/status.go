// Package subresource holds what every capn resource's REST storage shares:
// the /status view over the resource's own store, and table metadata.
package subresource

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// StatusREST is a /status subresource: the main resource's store with a
// status strategy, so both read and write the same key.
type StatusREST struct {
	Store *genericregistry.Store
}

var _ = rest.Patcher(&StatusREST{})

func (r *StatusREST) New() runtime.Object { return r.Store.NewFunc() }

// Destroy is a no-op: the store is shared with the main resource, which
// owns its lifetime.
func (r *StatusREST) Destroy() {}

func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.Store.Get(ctx, name, options)
}

// Update changes status only; the status strategy restores the rest.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Status writes never create: there is nothing to report on for an
	// object that does not exist.
	return r.Store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.Store.GetResetFields()
}

func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.Store.ConvertToTable(ctx, object, tableOptions)
}

// NewTable starts a table for obj (one object or a list) with its
// resource version and paging fields filled in.
func NewTable(obj runtime.Object, columns []metav1.TableColumnDefinition) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: columns}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table
}

// Strategy is what a capn resource's store needs of its strategy.
type Strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
	rest.RESTDeleteStrategy
	rest.ResetFieldsStrategy
}

// StatusStrategy is the /status view's strategy.
type StatusStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// Stores completes the store of one capn resource, with strategy for the
// main resource, and returns it with its /status view, which shares the
// store's keys and uses status for updates.
func Stores(store *genericregistry.Store, strategy Strategy, status StatusStrategy, optsGetter generic.RESTOptionsGetter, attrs storage.AttrFunc) (*genericregistry.Store, *StatusREST, error) {
	store.CreateStrategy, store.UpdateStrategy, store.DeleteStrategy, store.ResetFieldsStrategy = strategy, strategy, strategy, strategy
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: attrs}); err != nil {
		return nil, nil, err
	}
	statusStore := *store
	statusStore.UpdateStrategy = status
	statusStore.ResetFieldsStrategy = status
	return store, &StatusREST{Store: &statusStore}, nil
}
