package clusterapi

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	capnv1alpha1 "capn.dev/capn/pkg/apis/capn/v1alpha1"
	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
	"capn.dev/capn/pkg/provisioner/access"
)

// KubeconfigTTL is the lifetime of the client certificate in the kubeconfig
// Secret: /kubeconfig's default. The contract asks for short-lived
// credentials renewed before they expire; capn renews at two thirds of the
// lifetime (renewAt), so Cluster API keeps working through a capn restart
// of up to twenty minutes.
const KubeconfigTTL = time.Hour

// kubeconfigSecret is the Secret the contract names: <cluster>-kubeconfig,
// its type and label, the kubeconfig under "value", ncp as controller so it
// goes when the control plane does.
func kubeconfigSecret(ncp *controlplanev1alpha1.NestedControlPlane, cluster string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: cluster + KubeconfigSuffix, Namespace: ncp.Namespace,
			Labels:          map[string]string{ClusterNameLabel: cluster},
			OwnerReferences: []metav1.OwnerReference{controllerRef(ncp)}},
		Type: SecretType,
		Data: map[string][]byte{KubeconfigKey: kubeconfig},
	}
}

// renewAt is when the kubeconfig's client certificate is two thirds through
// its life. It is read from the certificate itself, not from an annotation,
// and the Secret's readers can write it too: a kubeconfig that does not
// point at server, or whose certificate is not capn's user's, is an error,
// and the caller issues a new one.
func renewAt(kubeconfig []byte, server string) (time.Time, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return time.Time{}, fmt.Errorf("kubeconfig: %w", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return time.Time{}, errors.New("kubeconfig: no current context")
	}
	if got := cfg.Clusters[ctx.Cluster].Server; got != server {
		return time.Time{}, fmt.Errorf("kubeconfig points at %q, not %q", got, server)
	}
	block, _ := pem.Decode(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	if block == nil {
		return time.Time{}, errors.New("kubeconfig holds no client certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, fmt.Errorf("client certificate: %w", err)
	}
	if cert.Subject.CommonName != KubeconfigUser {
		return time.Time{}, fmt.Errorf("client certificate is %q's, not %q's", cert.Subject.CommonName, KubeconfigUser)
	}
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(life * 2 / 3), nil
}

// ensureKubeconfig writes or renews the kubeconfig Secret, signed as
// /kubeconfig signs (access.Issuer, the tenant's CA). It returns when to
// look again. A Secret of that name that ncp does not control is left as it
// is.
func (c *Controller) ensureKubeconfig(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, cluster string,
	nc *capnv1alpha1.NestedCluster) (time.Duration, *failure) {
	name := cluster + KubeconfigSuffix
	live, err := c.secrets.Secrets(ncp.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return 0, retry(err)
	case !controlledBy(live, ncp):
		return 0, &failure{reason: ReasonSecretInUse, terminal: true,
			message: fmt.Sprintf("Secret %s exists and this NestedControlPlane does not own it; capn does not overwrite it", name)}
	}
	now := c.now()
	if live != nil {
		if at, err := renewAt(live.Data[KubeconfigKey], nc.Status.Endpoint); err == nil && now.Before(at) {
			return at.Sub(now), nil
		}
	}
	data, _, err := c.issuer.Issue(ctx, nc, KubeconfigUser, KubeconfigTTL)
	if errors.Is(err, access.ErrNotProvisioned) {
		// The CA and Service come with the first syncs of the NestedCluster.
		return notProvisionedRetry, nil
	}
	if err != nil {
		return 0, retry(fmt.Errorf("issuing kubeconfig: %w", err))
	}
	at, err := renewAt(data, nc.Status.Endpoint)
	if err != nil {
		// The issuer read an address the NestedCluster's status does not
		// show yet; writing it would be replaced at the next sync, and that
		// write would bring the next sync. Its status update comes first.
		return notProvisionedRetry, nil
	}
	want := kubeconfigSecret(ncp, cluster, data)
	secrets := c.kube.CoreV1().Secrets(ncp.Namespace)
	if live == nil {
		_, err = secrets.Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache: someone else's, without the label.
			return 0, &failure{reason: ReasonSecretInUse, terminal: true,
				message: fmt.Sprintf("Secret %s exists and this NestedControlPlane does not own it; capn does not overwrite it", name)}
		}
	} else {
		update := live.DeepCopy()
		update.Type, update.Data, update.Labels = want.Type, want.Data, mergeLabels(live.Labels, want.Labels)
		_, err = secrets.Update(ctx, update, metav1.UpdateOptions{FieldManager: FieldManager})
	}
	if err != nil {
		return 0, retry(fmt.Errorf("writing Secret %s: %w", name, err))
	}
	return at.Sub(now), nil
}

// notProvisionedRetry is how soon to look again for a tenant CA that the
// NestedCluster's first syncs are writing.
const notProvisionedRetry = 5 * time.Second

func mergeLabels(have, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}
