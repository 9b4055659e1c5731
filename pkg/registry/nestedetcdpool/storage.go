package nestedetcdpool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/registry/subresource"
)

// Storage is the main resource and /status over one store.
type Storage struct {
	Pool   *REST
	Status *StatusREST
}

// NewStorage builds the etcd-backed storage for nestedetcdpools. The
// authorizer is capn-apiserver's delegated one: the Secret check asks the
// management cluster's RBAC.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, a authorizer.Authorizer) (Storage, error) {
	if a == nil {
		return Storage{}, errors.New("nestedetcdpools storage needs an authorizer for Secret references")
	}
	strategy := poolStrategy{scheme, names.SimpleNameGenerator, a}
	status := statusStrategy{strategy}
	store, statusREST, err := subresource.Stores(&genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &capn.NestedEtcdPool{} },
		NewListFunc:               func() runtime.Object { return &capn.NestedEtcdPoolList{} },
		PredicateFunc:             match,
		DefaultQualifiedResource:  capn.Resource("nestedetcdpools"),
		SingularQualifiedResource: capn.Resource("nestedetcdpool"),
		TableConvertor:            tableConvertor{},
	}, strategy, status, optsGetter, getAttrs)
	if err != nil {
		return Storage{}, err
	}
	return Storage{Pool: &REST{store}, Status: statusREST}, nil
}

// REST is the main nestedetcdpools resource.
type REST struct {
	*genericregistry.Store
}

var _ rest.CategoriesProvider = &REST{}

// Categories lets `kubectl get capn` list pools too.
func (*REST) Categories() []string { return []string{"capn"} }

// StatusREST is the /status subresource.
type StatusREST = subresource.StatusREST

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the pool."},
	{Name: "Available", Type: "string", Description: "Whether capn reached the pool as root (condition Available)."},
	{Name: "Tenants", Type: "integer", Description: "NestedClusters keeping their state in the pool (status.tenants)."},
	{Name: "DB Size", Type: "string", Description: "Largest member database size (status.dbSizeBytes)."},
	{Name: "Age", Type: "string", Description: "Time since creation."},
	{Name: "Endpoints", Type: "string", Priority: 1, Description: "Member client URLs (spec.endpoints)."},
}

type tableConvertor struct{}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := subresource.NewTable(obj, columns)
	var items []capn.NestedEtcdPool
	switch t := obj.(type) {
	case *capn.NestedEtcdPool:
		items = []capn.NestedEtcdPool{*t}
	case *capn.NestedEtcdPoolList:
		items = t.Items
	default:
		return nil, apierrors.NewInternalError(fmt.Errorf("cannot convert %T to a table", obj))
	}
	for i := range items {
		p := &items[i]
		available := "Unknown"
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPoolAvailable); c != nil {
			available = string(c.Status)
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Object: runtime.RawExtension{Object: p},
			Cells: []interface{}{p.Name, available, int64(p.Status.Tenants), mebibytes(p.Status.DBSizeBytes),
				duration.HumanDuration(time.Since(p.CreationTimestamp.Time)), strings.Join(p.Spec.Endpoints, ",")},
		})
	}
	return table, nil
}

func mebibytes(b int64) string {
	if b == 0 {
		return ""
	}
	return fmt.Sprintf("%.1fMi", float64(b)/(1<<20))
}
