package backup

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEtcd runs a real etcd for one test, on loopback.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.Logger, cfg.ZapLoggerBuilder = "zap", embed.NewZapLoggerBuilder(zap.NewNop())
	local := func() url.URL { return url.URL{Scheme: "http", Host: "127.0.0.1:0"} }
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{local()}, []url.URL{local()}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{local()}, []url.URL{local()}
	cfg.InitialCluster = cfg.Name + "=" + cfg.AdvertisePeerUrls[0].String()
	e, err := embed.StartEtcd(cfg)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("etcd did not start")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Clients[0].Addr().String()}, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func all(t *testing.T, cli *clientv3.Client, prefix string) map[string]string {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}

func TestSnapshotAndRestoreMoveOnePrefix(t *testing.T) {
	ctx := context.Background()
	cli := startEtcd(t)
	// More keys than a page, a value larger than a batch's share, and a
	// sibling prefix ("/a" is a prefix of "/ab") that is not the tenant's.
	want := map[string]string{}
	for i := range 1234 {
		k := fmt.Sprintf("configmaps/ns/cm-%04d", i)
		want[k] = fmt.Sprintf("value %d", i)
		_, err := cli.Put(ctx, "/a/"+k, want[k])
		require.NoError(t, err)
	}
	big := string(bytes.Repeat([]byte("x"), 900<<10))
	want["secrets/ns/big"] = big
	_, err := cli.Put(ctx, "/a/secrets/ns/big", big)
	require.NoError(t, err)
	_, err = cli.Put(ctx, "/ab/secrets/ns/other-tenant", "not yours")
	require.NoError(t, err)

	var buf bytes.Buffer
	s, err := Snapshot(ctx, cli, "/a/", &buf)
	require.NoError(t, err)
	assert.Equal(t, int64(len(want)), s.Keys)
	assert.Equal(t, int64(buf.Len()), s.Bytes)
	// A write after the backup is not in it.
	_, err = cli.Put(ctx, "/a/configmaps/ns/later", "after")
	require.NoError(t, err)

	v, err := Verify(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, s, v)

	r, err := Restore(ctx, cli, "/restored/", bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, s, r)
	got := all(t, cli, "/restored/")
	require.Len(t, got, len(want))
	for k, v := range want {
		assert.Equal(t, v, got["/restored/"+k], k)
	}
	// Running it again (a restore retried after a crash) changes nothing.
	_, err = Restore(ctx, cli, "/restored/", bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Len(t, all(t, cli, "/restored/"), len(want))
}

func TestReadRefusesWhatIsNotAWholeBackup(t *testing.T) {
	var buf bytes.Buffer
	w := newWriter(&buf)
	require.NoError(t, w.put([]byte("k1"), []byte("v1")))
	require.NoError(t, w.put([]byte("k2"), []byte("v2")))
	_, err := w.close(7)
	require.NoError(t, err)
	good := buf.Bytes()
	s, err := Verify(bytes.NewReader(good))
	require.NoError(t, err)
	assert.Equal(t, Summary{Revision: 7, Keys: 2, Bytes: int64(len(good))}, s)

	flipped := bytes.Clone(good)
	flipped[len(magic)+2] ^= 1
	huge := append([]byte(magic), 0xff, 0xff, 0xff, 0xff, 0x0f) // a 4 GiB key
	for name, data := range map[string][]byte{
		"empty":              nil,
		"not a backup":       []byte("hello world, this is not it\n"),
		"truncated":          good[:len(good)-5],
		"no trailer":         good[:len(good)-40],
		"a flipped bit":      flipped,
		"data after the sum": append(bytes.Clone(good), 0),
		"an oversized field": huge,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(data))
			assert.ErrorIs(t, err, ErrCorrupt)
		})
	}
}

func TestDirStore(t *testing.T) {
	ctx := context.Background()
	d := Dir{Root: t.TempDir()}
	key := Key("team-a", "0f6c2d9e-1b2a-4c3d-8e9f-001122334455")

	p, err := d.Create(ctx, key)
	require.NoError(t, err)
	_, err = p.Write([]byte("data"))
	require.NoError(t, err)
	_, err = d.Open(ctx, key)
	require.ErrorIs(t, err, os.ErrNotExist, "visible only after Close")
	require.NoError(t, p.Close())
	r, err := d.Open(ctx, key)
	require.NoError(t, err)
	_ = r.Close()

	aborted, err := d.Create(ctx, Key("team-a", "aaaa"))
	require.NoError(t, err)
	aborted.Abort()
	left, err := filepath.Glob(filepath.Join(d.Root, "team-a", "*"))
	require.NoError(t, err)
	assert.Len(t, left, 1, "an aborted backup leaves nothing")

	require.NoError(t, d.Delete(ctx, key))
	require.NoError(t, d.Delete(ctx, key), "deleting twice is not an error")
	for _, bad := range []string{"../etc/passwd", "team-a/../../x", "Team/abc", "team-a/abc/def", "/abs/abc"} {
		_, err := d.Create(ctx, bad)
		assert.Error(t, err, bad)
	}
}
