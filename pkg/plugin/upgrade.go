package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	typedv1alpha1 "capn.dev/capn/pkg/generated/clientset/versioned/typed/capn/v1alpha1"
)

type upgradeOptions struct {
	*common
	to      string
	wait    bool
	timeout time.Duration
	print   genericPrintFlags
}

func newCmdUpgrade(c *common) *cobra.Command {
	o := &upgradeOptions{common: c, print: printFlags("")}
	cmd := &cobra.Command{
		Use:   "upgrade NAME --to VERSION [--wait] [--timeout DURATION]",
		Short: "Request an ordered upgrade of a NestedCluster's control plane",
		Long: "Request an ordered upgrade (POST nestedclusters/NAME/upgrade). The server applies the\n" +
			"skew policy. With --wait, follow status.upgrade until every component runs VERSION,\n" +
			"printing a line as each component's step starts and finishes, then a summary. The wait\n" +
			"fails at once if the Degraded condition turns True or the upgrade is rolled back.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.to == "" {
				return fmt.Errorf("--to is required")
			}
			return o.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&o.to, "to", "", "Target Kubernetes version, e.g. v1.37.2 (required)")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "Wait until the upgrade has finished")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 15*time.Minute, "How long --wait waits")
	o.print.AddFlags(cmd)
	return cmd
}

func (o *upgradeOptions) run(ctx context.Context, name string) error {
	o.print.NamePrintFlags.Operation = fmt.Sprintf("upgrade to %s requested", o.to)
	printer, err := o.print.ToPrinter()
	if err != nil {
		return err
	}
	cs, ns, err := o.client()
	if err != nil {
		return err
	}
	ncs := cs.CapnV1alpha1().NestedClusters(ns)
	req := &v1alpha1.NestedClusterUpgrade{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NestedClusterUpgrade"},
		Version:  o.to,
	}
	nc, err := ncs.Upgrade(ctx, name, req, metav1.CreateOptions{})
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
	return waitForUpgrade(ctx, ncs, nc, o.to, func(format string, a ...any) { fmt.Fprintf(o.Out, format, a...) })
}

// waitForUpgrade follows the NestedCluster from nc (the answer to the
// upgrade request) on, printing a line as each component's step starts and
// finishes, until status.upgrade has finished and every upgraded component
// runs target. It stops early, with an error, when the Degraded condition
// turns True or the upgrade is rolled back.
func waitForUpgrade(ctx context.Context, ncs typedv1alpha1.NestedClusterInterface, nc *v1alpha1.NestedCluster, target string, printf func(string, ...any)) error {
	p := newUpgradeProgress(nc, target, printf)
	return watchUntil(ctx, ncs, nc, p.observe, "the upgrade", fmt.Sprintf("reach %s", target))
}

// watchUntil follows the NestedCluster from nc on (nc included) until
// observe reports done or fails. what and until name the wait in errors:
// "<what>" in "was deleted while waiting for <what>", "<until>" in
// "timed out waiting for NAME to <until>".
func watchUntil(ctx context.Context, ncs typedv1alpha1.NestedClusterInterface, nc *v1alpha1.NestedCluster,
	observe func(*v1alpha1.NestedCluster) (bool, error), what, until string) error {
	if done, err := observe(nc); done || err != nil {
		return err
	}
	timedOut := func() error {
		return fmt.Errorf("timed out waiting for %s to %s", objectName(nc.Name), until)
	}
	rv := nc.ResourceVersion
	for {
		w, err := ncs.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", nc.Name).String(),
			ResourceVersion: rv,
		})
		if err != nil {
			if ctx.Err() != nil {
				return timedOut()
			}
			return err
		}
		done, err := func() (bool, error) {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return false, timedOut()
				case ev, ok := <-w.ResultChan():
					if !ok {
						return false, nil // closed: watch again from rv
					}
					switch ev.Type {
					case watch.Error:
						if st := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(st) || apierrors.IsGone(st) {
							rv = ""
							return false, nil
						}
						return false, apierrors.FromObject(ev.Object)
					case watch.Deleted:
						return false, fmt.Errorf("%s was deleted while waiting for %s", objectName(nc.Name), what)
					}
					cur, ok := ev.Object.(*v1alpha1.NestedCluster)
					if !ok {
						continue
					}
					rv = cur.ResourceVersion
					if done, err := observe(cur); done || err != nil {
						return done, err
					}
				}
			}
		}()
		if done || err != nil {
			return err
		}
	}
}

// upgradeDone: status.upgrade targets the version and has finished, and every
// component an upgrade rolls reports it (etcd is never upgraded).
func upgradeDone(nc *v1alpha1.NestedCluster, target string) bool {
	u := nc.Status.Upgrade
	if u == nil || u.To != target || u.FinishedAt == nil {
		return false
	}
	return allRun(nc, target)
}
