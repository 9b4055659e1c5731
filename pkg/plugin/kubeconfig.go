package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

type kubeconfigRequest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		ExpirationSeconds int64 `json:"expirationSeconds,omitempty"`
	} `json:"spec"`
}

type kubeconfigResponse struct {
	Status struct {
		Kubeconfig string `json:"kubeconfig"`
	} `json:"status"`
}

type kubeconfigOptions struct {
	*common
	expiration time.Duration
}

func newCmdKubeconfig(c *common) *cobra.Command {
	o := &kubeconfigOptions{common: c}
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME [--expiration DURATION]",
		Short: "Print a kubeconfig for the tenant cluster (POST nestedclusters/NAME/kubeconfig)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().DurationVar(&o.expiration, "expiration", 0, "Requested lifetime of the credentials, e.g. 24h (0: the server's default)")
	return cmd
}

func (o *kubeconfigOptions) run(ctx context.Context, name string) error {
	if o.expiration < 0 {
		return fmt.Errorf("--expiration must not be negative")
	}
	cs, ns, err := o.client()
	if err != nil {
		return err
	}
	req := kubeconfigRequest{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NestedClusterKubeconfigRequest"}
	req.Spec.ExpirationSeconds = int64(o.expiration / time.Second)
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	res := cs.CapnV1alpha1().RESTClient().Post().
		Namespace(ns).Resource("nestedclusters").Name(name).SubResource("kubeconfig").
		SetHeader("Content-Type", "application/json").
		Body(body).Do(ctx)
	// Error (unlike Raw) decodes a Status body into the server's own error.
	if err := res.Error(); err != nil {
		// A 404 means either no such NestedCluster (passed on unchanged) or
		// a server without the subresource: the NestedCluster tells which.
		if apierrors.IsNotFound(err) {
			if _, getErr := cs.CapnV1alpha1().NestedClusters(ns).Get(ctx, name, metav1.GetOptions{}); getErr == nil {
				return fmt.Errorf("this capn-apiserver does not serve nestedclusters/kubeconfig yet (%s exists; the server answered: %v)", objectName(name), err)
			}
		}
		return err
	}
	raw, err := res.Raw()
	if err != nil {
		return err
	}
	var resp kubeconfigResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("decoding the kubeconfig response: %w", err)
	}
	if resp.Status.Kubeconfig == "" {
		return fmt.Errorf("the server returned no status.kubeconfig")
	}
	_, err = fmt.Fprint(o.Out, resp.Status.Kubeconfig)
	return err
}
