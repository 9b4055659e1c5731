package pki

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// kubeconfigCluster names the cluster entry, as kubeadm does; users who
	// merge several tenants' kubeconfigs rename it anyway.
	kubeconfigCluster = "kubernetes"

	// DefaultTenantKubeconfigTTL applies when a request gives no TTL.
	DefaultTenantKubeconfigTTL = time.Hour
	// MaxTenantKubeconfigTTL caps any requested TTL. Kubernetes cannot
	// revoke a client certificate, so a leaked one is valid until it
	// expires: keep that window short and make clients ask again.
	MaxTenantKubeconfigTTL = 24 * time.Hour
)

// Kubeconfig renders a kubeconfig that authenticates as kp to server,
// trusting caPEM. Only certificates and kp's own key are embedded.
func Kubeconfig(server string, caPEM []byte, user string, kp *KeyPair) ([]byte, error) {
	if server == "" || user == "" || len(caPEM) == 0 || kp == nil {
		return nil, errors.New("kubeconfig: server, CA, user and key pair are required")
	}
	ctx := user + "@" + kubeconfigCluster
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeconfigCluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts[ctx] = &clientcmdapi.Context{Cluster: kubeconfigCluster, AuthInfo: user}
	cfg.CurrentContext = ctx
	return clientcmd.Write(*cfg)
}

// TenantKubeconfig is for the nestedclusters/kubeconfig subresource: a
// freshly signed client certificate for user/groups, valid for ttl (zero
// means DefaultTenantKubeconfigTTL; more than MaxTenantKubeconfigTTL is
// clamped). clusterCA's key signs but is never embedded: the output holds
// the CA certificate and the new client key only.
//
// Deciding whether the requester may have user and groups (system:masters
// above all) is the caller's authorization check, not this function's.
func TenantKubeconfig(server string, clusterCA *CA, user string, groups []string, ttl time.Duration, now time.Time) ([]byte, error) {
	if user == "" {
		return nil, errors.New("tenant kubeconfig: user is required")
	}
	if clusterCA == nil {
		return nil, errors.New("tenant kubeconfig: cluster CA is required")
	}
	switch {
	case ttl <= 0:
		ttl = DefaultTenantKubeconfigTTL
	case ttl > MaxTenantKubeconfigTTL:
		ttl = MaxTenantKubeconfigTTL
	}
	kp, err := Issue(clusterCA, LeafSpec{CommonName: user, Organization: groups, Usage: UsageClient, Validity: ttl}, now)
	if err != nil {
		return nil, err
	}
	return Kubeconfig(server, clusterCA.CertPEM, user, kp)
}

// kubeconfigKeyPair reads back a kubeconfig Kubeconfig wrote and returns its
// client key pair, or an error when it no longer points at server or no
// longer trusts caPEM (either means it must be rewritten).
func kubeconfigKeyPair(data []byte, server string, caPEM []byte) (*KeyPair, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return nil, fmt.Errorf("kubeconfig: no current context %q", cfg.CurrentContext)
	}
	cluster, auth := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || auth == nil {
		return nil, errors.New("kubeconfig: current context has no cluster or user")
	}
	if cluster.Server != server {
		return nil, fmt.Errorf("kubeconfig: server %q, want %q", cluster.Server, server)
	}
	if !bytes.Equal(cluster.CertificateAuthorityData, caPEM) {
		return nil, errors.New("kubeconfig: CA differs from the cluster CA")
	}
	return ParseKeyPair(auth.ClientCertificateData, auth.ClientKeyData)
}
