package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// EmbeddedEtcdLease is the Lease that makes one capn-apiserver at a time
// open its embedded etcd. Two replicas with an embedded etcd each would be
// two different truths behind one APIService, and two on one data
// directory would corrupt it; so the second waits, unready, until the first
// is gone. More replicas need a real etcd (--etcd-servers).
const EmbeddedEtcdLease = "capn-embedded-etcd"

// Lock timings. A replica that dies without releasing the lock (SIGKILL,
// a lost node) holds it for at most embeddedLeaseDuration.
const (
	embeddedLeaseDuration = 15 * time.Second
	embeddedRenewDeadline = 10 * time.Second
	embeddedRetryPeriod   = 2 * time.Second
)

// errEmbeddedLockLost ends a server that could no longer renew the lock:
// another replica may be about to open its own etcd.
var errEmbeddedLockLost = errors.New("lost the embedded-etcd lock (Lease " + EmbeddedEtcdLease + "): stopping, so that only one replica serves from an embedded etcd")

// holdEmbeddedEtcdLock blocks until this process holds the lock. It
// returns a context that ends when the lock is lost (or ctx ends), and
// release, which gives the Lease up and must run after etcd has stopped.
// The lock lives in the kube-apiserver that serves capn's APIService (the
// core API's --kubeconfig, else in-cluster), in LeaderElectNamespace.
func (o *Options) holdEmbeddedEtcdLock(ctx context.Context) (context.Context, func(), error) {
	cfg, err := o.coreConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("embedded-etcd lock: %w", err)
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, EmbeddedEtcdLease))
	if err != nil {
		return nil, nil, fmt.Errorf("embedded-etcd lock: %w", err)
	}
	host, _ := os.Hostname()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaderElectNamespace, Name: EmbeddedEtcdLease},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())},
	}
	held := make(chan struct{})
	locked, unlock := context.WithCancelCause(ctx)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            EmbeddedEtcdLease,
		LeaseDuration:   embeddedLeaseDuration,
		RenewDeadline:   embeddedRenewDeadline,
		RetryPeriod:     embeddedRetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(held) },
			OnStoppedLeading: func() { unlock(errEmbeddedLockLost) },
			OnNewLeader: func(identity string) {
				if identity != lock.Identity() {
					klog.InfoS("Waiting for the embedded-etcd lock: another replica serves from its embedded etcd; run more than one replica only with --etcd-servers",
						"lease", o.LeaderElectNamespace+"/"+EmbeddedEtcdLease, "holder", identity)
				}
			},
		},
	})
	if err != nil {
		unlock(err)
		return nil, nil, fmt.Errorf("embedded-etcd lock: %w", err)
	}
	// The elector has its own context: the server's shutdown (ctx) must
	// not give the Lease up before etcd has stopped; release does.
	electorCtx, stopElector := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		elector.Run(electorCtx)
	}()
	release := func() {
		stopElector()
		<-done
		unlock(context.Canceled)
	}
	select {
	case <-held:
		klog.InfoS("Holding the embedded-etcd lock", "lease", o.LeaderElectNamespace+"/"+EmbeddedEtcdLease, "identity", lock.Identity())
		return locked, release, nil
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
}

// coreConfig reaches the kube-apiserver whose APIService fronts capn.
func (o *Options) coreConfig() (*rest.Config, error) {
	if p := o.Recommended.CoreAPI.CoreAPIKubeconfigPath; p != "" {
		return clientcmd.BuildConfigFromFlags("", p)
	}
	return rest.InClusterConfig()
}
