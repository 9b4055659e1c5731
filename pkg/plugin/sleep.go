package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

type sleepOptions struct {
	*common
	asleep  bool
	wait    bool
	timeout time.Duration
	print   genericPrintFlags
}

func newCmdSleep(c *common) *cobra.Command {
	return newCmdSleepOrWake(c, true, "sleep NAME [--wait]",
		"Put a NestedCluster's control plane to sleep",
		"Set spec.sleep.asleep: kube-apiserver, kube-controller-manager, kube-scheduler and\n"+
			"capn-syncer scale to zero and the tenant's pods stop; etcd keeps the data (see\n"+
			"docs/cost.md). With --wait, wait until the Sleeping condition says Asleep.")
}

func newCmdWake(c *common) *cobra.Command {
	return newCmdSleepOrWake(c, false, "wake NAME [--wait]",
		"Wake a sleeping NestedCluster",
		"Clear spec.sleep.asleep: the control plane comes back with the same data. With --wait,\n"+
			"wait until the cluster is Ready again.")
}

func newCmdSleepOrWake(c *common, asleep bool, use, short, long string) *cobra.Command {
	operation := "woken"
	if asleep {
		operation = "put to sleep"
	}
	o := &sleepOptions{common: c, asleep: asleep, print: printFlags(operation)}
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	cmd.Flags().BoolVar(&o.wait, "wait", false, "Wait until the cluster is asleep (sleep) or Ready (wake)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "How long --wait waits")
	o.print.AddFlags(cmd)
	return cmd
}

func (o *sleepOptions) run(ctx context.Context, name string) error {
	printer, err := o.print.ToPrinter()
	if err != nil {
		return err
	}
	cs, ns, err := o.client()
	if err != nil {
		return err
	}
	ncs := cs.CapnV1alpha1().NestedClusters(ns)
	patch := fmt.Sprintf(`{"spec":{"sleep":{"asleep":%t}}}`, o.asleep)
	nc, err := ncs.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return err
	}
	if err := printer.PrintObj(nc, o.Out); err != nil {
		return err
	}
	if !o.wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if o.asleep {
		return watchUntil(ctx, ncs, nc, asleepAt(nc.Generation), "it to sleep", "fall asleep")
	}
	return watchUntil(ctx, ncs, nc, readyAt(nc.Generation), "it to wake", "become Ready")
}

// asleepAt: the provisioner has acted on generation and says Asleep.
func asleepAt(generation int64) func(*v1alpha1.NestedCluster) (bool, error) {
	return func(nc *v1alpha1.NestedCluster) (bool, error) {
		c := meta.FindStatusCondition(nc.Status.Conditions, v1alpha1.ConditionSleeping)
		return nc.Status.ObservedGeneration >= generation && c != nil &&
			c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonAsleep, nil
	}
}

// readyAt: the provisioner has acted on generation and says Ready.
func readyAt(generation int64) func(*v1alpha1.NestedCluster) (bool, error) {
	return func(nc *v1alpha1.NestedCluster) (bool, error) {
		return nc.Status.ObservedGeneration >= generation &&
			meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionReady), nil
	}
}
