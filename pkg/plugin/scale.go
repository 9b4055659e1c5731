package plugin

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// scalable maps --component to the spec field a merge patch sets; the
// apiserver goes through /scale instead.
var scalable = map[string]string{
	"controller-manager": "controllerManager",
	"scheduler":          "scheduler",
}

type scaleOptions struct {
	*common
	component string
	replicas  int32
	print     genericPrintFlags
}

func newCmdScale(c *common) *cobra.Command {
	o := &scaleOptions{common: c, print: printFlags("scaled")}
	cmd := &cobra.Command{
		Use:   "scale NAME --component=apiserver|controller-manager|scheduler --replicas=N",
		Short: "Set the replicas of one control-plane component",
		Long: "Set the replicas of one control-plane component. The apiserver is scaled through the\n" +
			"/scale subresource (a stale read surfaces as a conflict); the controller-manager and\n" +
			"scheduler get a JSON merge patch of spec.<component>.replicas. etcd replicas are immutable.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("replicas") {
				return fmt.Errorf("--replicas is required")
			}
			return o.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&o.component, "component", "apiserver", "Component to scale: apiserver, controller-manager or scheduler")
	cmd.Flags().Int32Var(&o.replicas, "replicas", 0, "The new number of replicas (required)")
	o.print.AddFlags(cmd)
	return cmd
}

func (o *scaleOptions) run(ctx context.Context, name string) error {
	field, patched := scalable[o.component]
	switch {
	case o.component == "etcd":
		return fmt.Errorf("etcd replicas are immutable: spec.etcd.managed.replicas is fixed when the NestedCluster is created (etcd membership changes are not supported)")
	case o.component != "apiserver" && !patched:
		return fmt.Errorf("unknown --component %q: must be apiserver, controller-manager or scheduler", o.component)
	}
	printer, err := o.print.ToPrinter()
	if err != nil {
		return err
	}
	cs, ns, err := o.client()
	if err != nil {
		return err
	}
	ncs := cs.CapnV1alpha1().NestedClusters(ns)

	var result runtime.Object
	if patched {
		patch := fmt.Sprintf(`{"spec":{%q:{"replicas":%d}}}`, field, o.replicas)
		result, err = ncs.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			return err
		}
	} else {
		// The read resourceVersion goes back with the update, so a concurrent
		// change makes the server answer Conflict rather than being overwritten.
		scale, err := ncs.GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = o.replicas
		scale, err = ncs.UpdateScale(ctx, name, scale, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		result = scale
		if outputIsName(o.print) {
			result = nameOnly(name, ns)
		}
	}
	return printer.PrintObj(result, o.Out)
}
