package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

type joinOptions struct {
	*common
	ttl                 time.Duration
	bootstrapKubeconfig string
	print               genericPrintFlags
}

// joinClock is the clock of the summary's "in 15m0s"; tests fix it.
var joinClock = time.Now

func newCmdJoin(c *common) *cobra.Command {
	o := &joinOptions{common: c, print: printFlags("")}
	cmd := &cobra.Command{
		Use:   "join NAME [--ttl DURATION] [--bootstrap-kubeconfig FILE] [-o yaml|json]",
		Short: "Create a bootstrap token that lets a real node join the tenant (POST nestedclusters/NAME/jointoken)",
		Long: "Create a short-lived bootstrap token in the tenant cluster (POST nestedclusters/NAME/jointoken)\n" +
			"and print what a kubelet joins with: the tenant apiserver's endpoint, the cluster CA's hash\n" +
			"and a bootstrap kubeconfig for kubelet --bootstrap-kubeconfig.\n\n" +
			"Without --bootstrap-kubeconfig the kubeconfig goes to stdout and the summary to stderr, so\n" +
			"`kubectl nested join demo > bootstrap.kubeconfig` works. With it, the kubeconfig is written\n" +
			"to FILE (mode 0600) and the summary to stdout. -o yaml|json prints the whole answer.\n\n" +
			"The token is a credential: until it expires, whoever holds it can register nodes in the\n" +
			"tenant. Revoke it early by deleting its Secret in the tenant (the summary says which).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().DurationVar(&o.ttl, "ttl", 0, "Lifetime of the token, e.g. 30m (0: the server's default, 15m or its maximum if shorter)")
	cmd.Flags().StringVar(&o.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "Write the bootstrap kubeconfig to this file (mode 0600) instead of stdout")
	o.print.AddFlags(cmd)
	return cmd
}

func (o *joinOptions) run(ctx context.Context, name string) error {
	if o.ttl < 0 || o.ttl%time.Second != 0 {
		return fmt.Errorf("--ttl must be a whole, positive number of seconds")
	}
	cs, ns, err := o.client()
	if err != nil {
		return err
	}
	req := &v1alpha1.NestedClusterJoinTokenRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NestedClusterJoinTokenRequest"},
	}
	if o.ttl > 0 {
		s := int64(o.ttl / time.Second)
		req.Spec.ExpirationSeconds = &s
	}
	ncs := cs.CapnV1alpha1().NestedClusters(ns)
	out, err := ncs.JoinToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		// A 404 is either no such NestedCluster (passed on unchanged) or
		// a server without the subresource: the NestedCluster tells which.
		if apierrors.IsNotFound(err) {
			if _, getErr := ncs.Get(ctx, name, metav1.GetOptions{}); getErr == nil {
				return fmt.Errorf("this capn-apiserver does not serve nestedclusters/jointoken yet (%s exists; the server answered: %v)", objectName(name), err)
			}
		}
		return err
	}
	if out.Status.Token == "" || out.Status.BootstrapKubeconfig == "" {
		return fmt.Errorf("the server returned no token")
	}
	if o.bootstrapKubeconfig != "" {
		if err := writePrivate(o.bootstrapKubeconfig, []byte(out.Status.BootstrapKubeconfig)); err != nil {
			return err
		}
	}
	if !outputIsName(o.print) {
		printer, err := o.print.ToPrinter()
		if err != nil {
			return err
		}
		return printer.PrintObj(out, o.Out)
	}
	summary := o.Out
	if o.bootstrapKubeconfig == "" {
		if _, err := fmt.Fprint(o.Out, out.Status.BootstrapKubeconfig); err != nil {
			return err
		}
		summary = o.ErrOut
	}
	return o.summarize(summary, name, out)
}

// summarize tells a person what they got and how to use and revoke it.
func (o *joinOptions) summarize(w io.Writer, name string, out *v1alpha1.NestedClusterJoinTokenRequest) error {
	id, _, _ := strings.Cut(out.Status.Token, ".")
	expires := out.Status.ExpirationTimestamp.Time
	kubeconfig := o.bootstrapKubeconfig
	if kubeconfig == "" {
		kubeconfig = "<the kubeconfig above, saved to a file>"
	}
	_, err := fmt.Fprintf(w, `Join token for %s, expires %s (in %s).
  endpoint:       %s
  CA cert hash:   %s
  token:          %s
  bootstrap kubeconfig: %s

On the node (a container runtime is yours to install), start the kubelet with
  --bootstrap-kubeconfig=%s --kubeconfig=/var/lib/kubelet/kubeconfig --cert-dir=/var/lib/kubelet/pki
and rotateCertificates: true in its configuration. Its client certificate is approved
automatically; kube-proxy and a CNI plugin are yours to run (see docs/join.md).
Revoke the token early in the tenant: kubectl -n kube-system delete secret bootstrap-token-%s
`, objectName(name), expires.UTC().Format(time.RFC3339), expires.Sub(joinClock()).Round(time.Second),
		out.Status.Endpoint, strings.Join(out.Status.CACertHashes, ", "), out.Status.Token, kubeconfig, kubeconfig, id)
	return err
}

// writePrivate writes data to path readable by its owner only: it holds a
// credential.
func writePrivate(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
