package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster synced before is taken ahead of queued creations: its
// observation must not wait for every creation queued before it.
func TestClustersQueueTakesObservationsBeforeCreations(t *testing.T) {
	seen := &keySet{}
	q := newClustersQueue("", seen.has)
	defer q.ShutDown()
	seen.add("ns/old")
	for _, k := range []string{"ns/new-1", "ns/new-2", "ns/old"} {
		q.Add(k)
	}
	got, _ := q.Get()
	assert.Equal(t, "ns/old", got, "the synced cluster waited behind creations")
	q.Done(got)
	got, _ = q.Get()
	assert.Equal(t, "ns/new-1", got, "creations keep their order")
	q.Done(got)
}

// While both lanes hold keys, one pop in creationShare is a creation.
func TestLaneQueueDoesNotStarveCreations(t *testing.T) {
	known := map[string]bool{}
	q := &laneQueue{known: func(k string) bool { return known[k] }}
	for _, k := range []string{"s1", "s2", "s3", "s4", "s5", "s6", "s7"} {
		known[k] = true
		q.Push(k)
	}
	q.Push("f1")
	q.Push("f2")
	var order []string
	for q.Len() > 0 {
		order = append(order, q.Pop())
	}
	require.Len(t, order, 9)
	assert.Equal(t, []string{"s1", "s2", "s3", "f1", "s4", "s5", "s6", "f2", "s7"}, order)
}

// A deleted cluster leaves the set, so a cluster created again under the
// same name is a creation again.
func TestSyncOfAGoneClusterForgetsIt(t *testing.T) {
	f := newFixture(t, testCluster())
	key := f.nc.Namespace + "/" + f.nc.Name
	f.sync()
	require.True(t, f.c.seen.has(key), "a synced cluster is not in the first lane")
	require.NoError(t, f.indexer.Delete(f.nc))
	_, err := f.c.sync(t.Context(), key)
	require.NoError(t, err)
	assert.False(t, f.c.seen.has(key))
}
