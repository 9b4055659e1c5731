package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"capn.dev/capn/pkg/tenant/names"
)

// Only the objects the syncer made go: a tenant's own object of the same
// name stays, and one already gone is no error.
func TestRemoveAddonDeletesOnlyTheSyncers(t *testing.T) {
	var deleted []string
	obj := func(name string, mine bool) addonObject {
		m := &metav1.ObjectMeta{Name: name}
		if mine {
			m.Labels = map[string]string{managedByLabel: names.ManagedByValue}
		}
		return addonObject{func() (metav1.Object, error) { return m, nil }, func() error { deleted = append(deleted, name); return nil }}
	}
	gone := addonObject{
		func() (metav1.Object, error) {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "gone")
		},
		func() error { t.Fatal("deleted an object that is not there"); return nil }}
	require.NoError(t, removeAddon("test", []addonObject{obj("capn", true), gone, obj("tenants-own", false), obj("sa", true)}))
	assert.Equal(t, []string{"capn", "sa"}, deleted)
}
