package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/reference"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// sweepFixture is a controller whose namespace cache and management
// cluster hold the given namespaces, with a clock the test moves.
type sweepFixture struct {
	*fixture
	clock time.Time
	s     *orphanSweep
}

func newSweepFixture(t *testing.T, cfg SweepConfig, namespaces ...*corev1.Namespace) *sweepFixture {
	f := &sweepFixture{fixture: newFixture(t, testCluster()), clock: testNow}
	f.c.now = func() time.Time { return f.clock }
	f.c.namespaces = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, ns := range namespaces {
		created, err := f.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, f.c.namespaces.Add(created))
	}
	f.s = &orphanSweep{SweepConfig: Settings{Sweep: cfg}.Complete().Sweep, absentSince: map[string]time.Time{}}
	return f
}

// sweepAt sweeps at testNow+d and, as the informer would, drops what it
// deleted from the cache.
func (f *sweepFixture) sweepAt(d time.Duration) []string {
	f.clock = testNow.Add(d)
	deleted := f.c.sweep(context.Background(), f.s)
	for _, name := range deleted {
		require.NoError(f.t, f.c.namespaces.Delete(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	}
	return deleted
}

func (f *sweepFixture) exists(name string) bool {
	_, err := f.kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(f.t, err)
	return true
}

func managementNS(name, ownerUID string) *corev1.Namespace {
	l := map[string]string{provisioner.ManagedByLabel: provisioner.ManagedByValue, v1alpha1.ClusterLabel: "x", provisioner.ClusterNamespaceLabel: "team-x"}
	if ownerUID != "" {
		l[provisioner.OwnerUIDLabel] = ownerUID
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, UID: types.UID("ns-" + name)}}
}

func TestSweepDeletesOnlyOrphansPastTheGracePeriod(t *testing.T) {
	grace := 10 * time.Minute
	f := newSweepFixture(t, SweepConfig{GracePeriod: grace},
		managementNS("owned", testUID),
		managementNS("orphan", "0a0a0a0a-gone"),
		managementNS("legacy", ""), // before UID-named namespaces: matched by name, never swept by UID
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-capns", Labels: map[string]string{provisioner.OwnerUIDLabel: "0a0a0a0a-gone"}}},
	)
	assert.Empty(t, f.sweepAt(0), "the first sighting only starts the clock")
	assert.Empty(t, f.sweepAt(grace-time.Second))
	assert.Equal(t, []string{"orphan"}, f.sweepAt(grace))

	assert.False(t, f.exists("orphan"))
	for _, name := range []string{"owned", "legacy", "not-capns"} {
		assert.True(t, f.exists(name), name)
	}
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning OrphanDeleted deleted management namespace orphan: no NestedCluster with UID 0a0a0a0a-gone has existed for 10m0s")
}

func TestSweepForgetsAnOwnerThatReturns(t *testing.T) {
	grace := 10 * time.Minute
	f := newSweepFixture(t, SweepConfig{GracePeriod: grace}, managementNS("late", "late-uid"))
	f.sweepAt(0)
	// The owner shows up (e.g. a restarting informer saw it late).
	other := testCluster()
	other.Name, other.UID = "late", "late-uid"
	require.NoError(t, f.indexer.Add(other))
	assert.Empty(t, f.sweepAt(grace))
	require.NoError(t, f.indexer.Delete(other))
	assert.Empty(t, f.sweepAt(grace+time.Minute), "the clock restarts when the owner disappears again")
	assert.Equal(t, []string{"late"}, f.sweepAt(2*grace+time.Minute))
}

// A lost or replaced store must not erase every tenant.
func TestSweepNeverRunsOnAnEmptyStore(t *testing.T) {
	f := newSweepFixture(t, SweepConfig{GracePeriod: time.Minute}, managementNS("a", "uid-a"))
	require.NoError(t, f.indexer.Delete(f.nc))
	for _, at := range []time.Duration{0, time.Hour, 2 * time.Hour} {
		assert.Empty(t, f.sweepAt(at))
	}
	assert.True(t, f.exists("a"))
}

func TestSweepBrakes(t *testing.T) {
	var nss []*corev1.Namespace
	for i := range 5 {
		nss = append(nss, managementNS(fmt.Sprintf("orphan-%d", i), fmt.Sprintf("gone-%d", i)))
	}
	for i := range 20 {
		nss = append(nss, managementNS(fmt.Sprintf("owned-%d", i), testUID))
	}
	f := newSweepFixture(t, SweepConfig{GracePeriod: time.Minute, MaxDeletions: 2}, nss...)
	f.sweepAt(0)
	assert.Len(t, f.sweepAt(time.Minute), 2)
	assert.Len(t, f.sweepAt(2*time.Minute), 2)
	assert.Len(t, f.sweepAt(3*time.Minute), 1)
}

// Half the namespaces orphaned at once looks like a damaged store: hold.
func TestSweepHoldsWhenTooManyLookOrphaned(t *testing.T) {
	nss := []*corev1.Namespace{managementNS("owned", testUID)}
	for i := range 4 {
		nss = append(nss, managementNS(fmt.Sprintf("orphan-%d", i), fmt.Sprintf("gone-%d", i)))
	}
	f := newSweepFixture(t, SweepConfig{GracePeriod: time.Minute, MaxDeletions: 2}, nss...)
	f.sweepAt(0)
	assert.Empty(t, f.sweepAt(time.Hour))
	for _, ns := range nss {
		assert.True(t, f.exists(ns.Name), ns.Name)
	}
}

// The real recorder drops an Event whose object's kind its scheme does not
// know; the sweep's Events are on Namespaces.
func TestEventSchemeKnowsSweptNamespaces(t *testing.T) {
	for _, obj := range []runtime.Object{managementNS("a", "uid"), testCluster()} {
		_, err := reference.GetReference(eventScheme, obj)
		assert.NoError(t, err, "%T", obj)
	}
}

// A swept Shared cluster's syncer ClusterRoleBinding goes with its
// namespace, unless it carries another owner's UID (its name alone proves
// nothing).
func TestSweepDeletesTheOrphansSyncerBinding(t *testing.T) {
	const gone = "0a0a0a0a-gone"
	for owner, wantDeleted := range map[string]bool{gone: true, "0b0b0b0b-other": false} {
		f := newSweepFixture(t, SweepConfig{GracePeriod: time.Minute}, managementNS("orphan", gone))
		name := provisioner.SyncerClusterRoleBinding(&v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{UID: gone}})
		_, err := f.kube.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{provisioner.OwnerUIDLabel: owner}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		f.sweepAt(0)
		require.Equal(t, []string{"orphan"}, f.sweepAt(time.Minute))
		_, err = f.kube.RbacV1().ClusterRoleBindings().Get(context.Background(), name, metav1.GetOptions{})
		assert.Equal(t, wantDeleted, apierrors.IsNotFound(err), "binding labelled for %s: %v", owner, err)
	}
}
