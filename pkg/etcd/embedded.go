// Package etcd runs the etcd that capn-apiserver stores NestedClusters in
// when no --etcd-servers is given, so the server runs alone on a fresh
// machine.
package etcd

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// Embedded is an in-process, single-member etcd.
type Embedded struct {
	etcd *embed.Etcd
	// ClientURL is where the storage layer connects.
	ClientURL string
}

// Start runs etcd on dataDir and waits until it serves. Its listeners bind
// 127.0.0.1 on kernel-chosen ports: nothing outside this host (or pod) can
// reach it and two servers on one machine never collide.
func Start(ctx context.Context, dataDir string) (*Embedded, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd data dir: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "capn"
	cfg.Dir = dataDir
	// Port 0 everywhere: the member's identity is derived from its peer URL,
	// so keeping it constant (":0") also keeps a reused data dir valid.
	local := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{local}
	cfg.AdvertiseClientUrls = []url.URL{local}
	cfg.ListenPeerUrls = []url.URL{local}
	cfg.AdvertisePeerUrls = []url.URL{local}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ListenMetricsUrls = nil
	cfg.LogLevel = "error"
	// History is only needed for watch resumption; compaction by the
	// apiserver keeps it bounded, this is a second guard.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "1h"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", dataDir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s was not ready within 60s", dataDir)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	addr := e.Clients[0].Addr().String()
	klog.InfoS("Embedded etcd ready", "dataDir", dataDir, "address", addr)
	return &Embedded{etcd: e, ClientURL: "http://" + addr}, nil
}

// Stop shuts etcd down and waits for it.
func (e *Embedded) Stop() { e.etcd.Close() }
