// Package plugin implements `kubectl nested`, a kubectl plugin for capn's
// NestedClusters: per-component scaling, ordered upgrades, status, tenant
// kubeconfigs and node join tokens.
package plugin

import (
	"fmt"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
)

// resourceName is how outputs name the resource, as kubectl does.
const resourceName = "nestedcluster.capn.dev"

// scheme lets the printers set apiVersion/kind on what the server returned.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilMust(v1alpha1.AddToScheme(s))
	utilMust(autoscalingv1.AddToScheme(s))
	return s
}()

func utilMust(err error) {
	if err != nil {
		panic(err)
	}
}

// ClientFunc returns a clientset and the namespace to work in.
type ClientFunc func() (versioned.Interface, string, error)

// common is what every subcommand shares.
type common struct {
	genericiooptions.IOStreams
	client ClientFunc
}

// NewCmdNested is the root command, wired to the kubeconfig through the
// standard kubectl flags (--kubeconfig, --context, --namespace, ...).
func NewCmdNested(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	client := func() (versioned.Interface, string, error) {
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			return nil, "", err
		}
		ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, "", err
		}
		cs, err := versioned.NewForConfig(cfg)
		if err != nil {
			return nil, "", err
		}
		return cs, ns, nil
	}
	cmd := NewCmdNestedWithClient(streams, client)
	flags.AddFlags(cmd.PersistentFlags())
	return cmd
}

// NewCmdNestedWithClient builds the command tree around a given client
// (tests pass a fake clientset).
func NewCmdNestedWithClient(streams genericiooptions.IOStreams, client ClientFunc) *cobra.Command {
	c := &common{IOStreams: streams, client: client}
	cmd := &cobra.Command{
		Use:   "nested",
		Short: "Manage capn NestedClusters: scale components, upgrade, sleep and wake, status, kubeconfig, join nodes",
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl nested",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.AddCommand(
		newCmdScale(c),
		newCmdUpgrade(c),
		newCmdKubeconfig(c),
		newCmdJoin(c),
		newCmdSleep(c),
		newCmdWake(c),
		newCmdStatus(c),
		newCmdVersions(c),
	)
	return cmd
}

// printFlags are kubectl's -o json|yaml|name (and templates) for a command
// that returns an object; without -o it prints "nestedcluster.capn.dev/NAME <operation>".
func printFlags(operation string) *genericclioptions.PrintFlags {
	return genericclioptions.NewPrintFlags(operation).WithTypeSetter(scheme)
}

// nameOnly is a NestedCluster carrying only what the name printer needs.
func nameOnly(name, namespace string) *v1alpha1.NestedCluster {
	nc := &v1alpha1.NestedCluster{}
	nc.Name, nc.Namespace = name, namespace
	return nc
}

func objectName(name string) string { return fmt.Sprintf("%s/%s", resourceName, name) }

type genericPrintFlags = *genericclioptions.PrintFlags

// outputIsName reports whether the output is the default message or -o name.
func outputIsName(p genericPrintFlags) bool {
	return p.OutputFormat == nil || *p.OutputFormat == "" || *p.OutputFormat == "name"
}
