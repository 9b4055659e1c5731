package netprobe

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDial(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	open := l.Addr().String()
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l2.Addr().String()
	require.NoError(t, l2.Close())
	got := Dial(context.Background(), []string{open, closed}, time.Second)
	require.NoError(t, l.Close())
	assert.Equal(t, Open, got[open])
	assert.Equal(t, Refused, got[closed])
	assert.True(t, Blocked(Refused))
	assert.True(t, Blocked(Dropped))
	assert.False(t, Blocked(Open))
	assert.False(t, Blocked("error: no such host"))
	assert.Equal(t, Dropped, Verdict(context.DeadlineExceeded))
}
