package nestedclusterbackup

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/registry/subresource"
)

// Storage is the backups' REST storage and its /status.
type Storage struct {
	Backup *REST
	Status *StatusREST
}

// NewStorage returns the storage; adminGroups may remove the finalizer
// besides capn.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, adminGroups []string) (Storage, error) {
	strategy := backupStrategy{scheme, names.SimpleNameGenerator, adminGroups}
	status := statusStrategy{strategy}
	store, statusREST, err := subresource.Stores(&genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &capn.NestedClusterBackup{} },
		NewListFunc:               func() runtime.Object { return &capn.NestedClusterBackupList{} },
		PredicateFunc:             match,
		DefaultQualifiedResource:  capn.Resource("nestedclusterbackups"),
		SingularQualifiedResource: capn.Resource("nestedclusterbackup"),
		TableConvertor:            tableConvertor{},
	}, strategy, status, optsGetter, getAttrs)
	if err != nil {
		return Storage{}, err
	}
	return Storage{Backup: &REST{store}, Status: statusREST}, nil
}

// REST is the main resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.CategoriesProvider = &REST{}
	_ rest.ShortNamesProvider = &REST{}
)

// Categories puts backups in `kubectl get capn`.
func (*REST) Categories() []string { return []string{"capn"} }

// ShortNames: `kubectl get ncb`.
func (*REST) ShortNames() []string { return []string{"ncb"} }

// StatusREST is /status.
type StatusREST = subresource.StatusREST

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the backup."},
	{Name: "Cluster", Type: "string", Description: "The NestedCluster backed up (spec.clusterName)."},
	{Name: "Phase", Type: "string", Description: "Pending, Completed or Failed (status.phase)."},
	{Name: "Keys", Type: "integer", Description: "etcd keys in the backup (status.keys)."},
	{Name: "Size", Type: "string", Description: "Size in the store (status.sizeBytes)."},
	{Name: "Age", Type: "string", Description: "Time since creation."},
	{Name: "Revision", Type: "integer", Priority: 1, Description: "etcd revision the keys were read at (status.revision)."},
	{Name: "Message", Type: "string", Priority: 1, Description: "Why it is Pending or Failed (status.message)."},
}

type tableConvertor struct{}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := subresource.NewTable(obj, columns)
	var items []capn.NestedClusterBackup
	switch t := obj.(type) {
	case *capn.NestedClusterBackup:
		items = []capn.NestedClusterBackup{*t}
	case *capn.NestedClusterBackupList:
		items = t.Items
	default:
		return nil, apierrors.NewInternalError(fmt.Errorf("cannot convert %T to a table", obj))
	}
	for i := range items {
		b := &items[i]
		size := ""
		if b.Status.SizeBytes > 0 {
			size = fmt.Sprintf("%.1fKi", float64(b.Status.SizeBytes)/(1<<10))
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Object: runtime.RawExtension{Object: b},
			Cells: []interface{}{b.Name, b.Spec.ClusterName, string(b.Status.Phase), b.Status.Keys, size,
				duration.HumanDuration(time.Since(b.CreationTimestamp.Time)), b.Status.Revision, b.Status.Message},
		})
	}
	return table, nil
}
