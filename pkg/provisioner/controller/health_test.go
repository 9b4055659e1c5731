package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHealthFailsOnlyAWedgedLeader(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := NewHealth()
	h.now = func() time.Time { return now }
	require.NoError(t, h.Check(nil), "not leading is healthy: the replica still serves the API")

	h.startLeading()
	now = now.Add(StuckAfter)
	require.NoError(t, h.Check(nil), "caches may take a while to sync")
	now = now.Add(time.Second)
	assert.ErrorContains(t, h.Check(nil), "caches not synced")

	queued := 0
	h.cachesSynced(func() int { return queued })
	now = now.Add(time.Hour)
	require.NoError(t, h.Check(nil), "an idle queue is not a stuck one")
	queued = 3
	assert.ErrorContains(t, h.Check(nil), "3 NestedClusters queued, no sync finished for 1h0m0s")
	h.syncDone()
	require.NoError(t, h.Check(nil), "a finished sync is progress")

	now = now.Add(time.Hour)
	h.stopLeading()
	require.NoError(t, h.Check(nil), "a replica that lost the lease is not wedged")
	var none *Health
	require.NoError(t, none.Check(nil))
}
