package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/etcd"
)

// NewCommand returns the capn-apiserver command.
func NewCommand(ctx context.Context, o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "capn-apiserver",
		Short: "Serve nestedclusters.capn.dev: Kubernetes control planes as a Kubernetes API",
		Long: `capn-apiserver serves the capn.dev API group. It normally runs behind
kube-apiserver's aggregator (an APIService), which authenticates users and
forwards their identity. With --standalone it serves alone for local use.
Without --etcd-servers it stores its objects in an embedded etcd.`,
		SilenceUsage: true,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	return cmd
}

// Run starts the embedded etcd when needed, then serves until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	var etcdURL string
	if o.UseEmbeddedEtcd() {
		if !o.Standalone {
			locked, release, err := o.holdEmbeddedEtcdLock(ctx)
			if err != nil {
				return err
			}
			// Deferred first, so it runs last: the Lease goes only once
			// the server has drained and etcd has stopped.
			defer release()
			ctx = locked
		}
		e, err := etcd.Start(ctx, o.EmbeddedEtcdDataDir)
		if err != nil {
			return err
		}
		// Stopped after the server has drained, so in-flight writes land.
		defer e.Stop()
		etcdURL = e.ClientURL
	}
	cfg, err := o.Config(etcdURL)
	if err != nil {
		return err
	}
	srv, err := cfg.Complete().New()
	if err != nil {
		return fmt.Errorf("building server: %w", err)
	}
	if o.Standalone {
		klog.InfoS("Standalone mode: admin kubeconfig written", "path", o.AdminKubeconfig)
	}
	if o.Provisioner != ProvisionerNone {
		klog.InfoS("Provisioner enabled (experimental)", "provisioner", o.Provisioner,
			"leaderElect", o.LeaderElect, "leaseNamespace", o.LeaderElectNamespace)
	}
	err = srv.GenericAPIServer.PrepareRun().RunWithContext(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, errEmbeddedLockLost) {
		return cause
	}
	return err
}
