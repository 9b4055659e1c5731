package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/backup"
)

// A cluster from a backup waits (Ready False, Restoring) until a sync has
// written the backup, records that in Restored, and never waits again.
func TestRestoreWaitsUntilRecorded(t *testing.T) {
	nc := &v1alpha1.NestedCluster{Spec: v1alpha1.NestedClusterSpec{RestoreFrom: &v1alpha1.RestoreSource{Backup: "b1"}}}
	nc.Generation = 1
	r := planRestore(nc)
	assert.True(t, r.pending)
	c, ok := restoredCondition(nc, r)
	assert.True(t, ok)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1alpha1.ReasonRestoring, c.Reason)

	r.done = &backup.Summary{Keys: 321, Revision: 99}
	c, ok = restoredCondition(nc, r)
	assert.True(t, ok)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, "321 keys from NestedClusterBackup b1 (etcd revision 99 of the backed-up cluster)", c.Message)

	meta.SetStatusCondition(&nc.Status.Conditions, c)
	r = planRestore(nc)
	assert.False(t, r.pending, "recorded: the components start")
	_, ok = restoredCondition(nc, r)
	assert.False(t, ok, "the recorded condition is left as it is")

	plain := &v1alpha1.NestedCluster{}
	assert.False(t, planRestore(plain).pending)
	_, ok = restoredCondition(plain, planRestore(plain))
	assert.False(t, ok)
}
