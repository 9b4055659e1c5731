package plugin

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

type statusOptions struct {
	*common
	print genericPrintFlags
}

func newCmdStatus(c *common) *cobra.Command {
	o := &statusOptions{common: c, print: printFlags("")}
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show a NestedCluster's per-component rollout, phase, endpoint and conditions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0])
		},
	}
	o.print.AddFlags(cmd)
	return cmd
}

func (o *statusOptions) run(ctx context.Context, name string) error {
	cs, ns, err := o.client()
	if err != nil {
		return err
	}
	nc, err := cs.CapnV1alpha1().NestedClusters(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if f := o.print.OutputFormat; f != nil && *f != "" {
		printer, err := o.print.ToPrinter()
		if err != nil {
			return err
		}
		return printer.PrintObj(nc, o.Out)
	}
	return printStatus(o.Out, nc)
}

func printStatus(out io.Writer, nc *v1alpha1.NestedCluster) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "COMPONENT\tDESIRED\tREADY\tUPDATED\tVERSION\tIMAGE")
	row := func(name string, desired *int32, s v1alpha1.ComponentStatus) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\n", name, ptr.Deref(desired, 1), s.ReadyReplicas, s.UpdatedReplicas, dash(s.Version), dash(s.Image))
	}
	switch {
	case nc.Spec.Etcd.External != nil:
		fmt.Fprintf(w, "etcd\texternal\t-\t-\t-\t-\n")
	case nc.Spec.Etcd.Pool != "":
		fmt.Fprintf(w, "etcd\tpool %s\t-\t-\t-\t-\n", nc.Spec.Etcd.Pool)
	default:
		var desired *int32
		if m := nc.Spec.Etcd.Managed; m != nil {
			desired = m.Replicas
		}
		row("etcd", desired, nc.Status.Etcd)
	}
	row(v1alpha1.ComponentAPIServer, nc.Spec.APIServer.Replicas, nc.Status.APIServer)
	row(v1alpha1.ComponentControllerManager, nc.Spec.ControllerManager.Replicas, nc.Status.ControllerManager)
	row(v1alpha1.ComponentScheduler, nc.Spec.Scheduler.Replicas, nc.Status.Scheduler)
	if err := w.Flush(); err != nil {
		return err
	}

	lines := []string{
		"",
		"Version:   " + dash(nc.Spec.Version),
		"Phase:     " + dash(string(nc.Status.Phase)),
		"Endpoint:  " + dash(nc.Status.Endpoint),
	}
	if err := printLines(out, lines); err != nil {
		return err
	}
	shown, err := printUpgrade(out, nc)
	if err != nil {
		return err
	}
	lines = nil
	for _, c := range nc.Status.Conditions {
		if shown && (c.Type == v1alpha1.ConditionProgressing || c.Type == v1alpha1.ConditionDegraded) {
			continue // in the upgrade section
		}
		lines = append(lines, "  "+c.Type+"="+describeCondition(&c))
	}
	if len(lines) == 0 {
		return printLines(out, []string{"Conditions: <none>"})
	}
	return printLines(out, append([]string{"Conditions:"}, lines...))
}

func printLines(out io.Writer, lines []string) error {
	for _, l := range lines {
		if _, err := fmt.Fprintln(out, l); err != nil {
			return err
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
