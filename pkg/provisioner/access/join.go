package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// Real nodes join a tenant the way they join a kubeadm cluster: a kubelet
// with a bootstrap token asks for a node client certificate (a CSR), the
// tenant's kube-controller-manager approves and signs it, and the kubelet
// registers its Node with it. What capn adds to the tenant for that:
//
//   - kube-apiserver: bootstrap-token authentication and anonymous reads
//     of kube-public/cluster-info (profiles, template revision 3);
//   - kube-controller-manager: bootstrapsigner, tokencleaner and the
//     cluster CA as its signer (profiles);
//   - the RBAC below, applied by Bootstrap;
//   - the cluster-info ConfigMap and each token, written by JoinIssuer
//     when nestedclusters/NAME/jointoken is asked for.
//
// Kubelet serving certificates are not approved by anything capn sets up:
// the kubelet's own self-signed serving certificate is the default, and a
// kubelet with serverTLSBootstrap asks for one that the tenant admin
// approves (kubectl certificate approve) after checking its names — an
// approver that signs whatever names a node claims would let any node
// impersonate another's address.

// JoinGroup is the extra group of every bootstrap token capn creates
// (kubeadm's is system:bootstrappers:kubeadm:default-node-token). The
// RBAC that lets tokens join nodes is granted to this group, not to all
// of system:bootstrappers, so a token a tenant makes for something else
// joins nothing.
const JoinGroup = "system:bootstrappers:capn:default-node-token"

// The discovery document in the tenant.
const (
	ClusterInfoNamespace = metav1.NamespacePublic
	ClusterInfoName      = "cluster-info"
	// ClusterInfoRole lets system:anonymous get exactly cluster-info.
	ClusterInfoRole = "capn:bootstrap-signer-clusterinfo"
)

// joinFieldManager owns cluster-info's kubeconfig.
const joinFieldManager = "capn-join"

// Bootstrap tokens, as kube-apiserver and kube-controller-manager read
// them (k8s.io/cluster-bootstrap/token/api).
const (
	bootstrapTokenSecretPrefix = "bootstrap-token-"
	bootstrapTokenIDBytes      = 6
	bootstrapTokenSecretBytes  = 16
	bootstrapTokenChars        = "0123456789abcdefghijklmnopqrstuvwxyz"
)

// joinBindings are the ClusterRoleBindings of node join (kubeadm's
// kubeadm:kubelet-bootstrap, kubeadm:node-autoapprove-bootstrap and
// kubeadm:node-autoapprove-certificate-rotation, under capn's names):
// JoinGroup may create CSRs and have node-client CSRs auto-approved by
// kube-controller-manager, and nodes may renew their own client
// certificates. Nothing else: no get on Nodes, no Secrets.
func joinBindings() []*rbacac.ClusterRoleBindingApplyConfiguration {
	bind := func(name, role, kind, subject string) *rbacac.ClusterRoleBindingApplyConfiguration {
		return rbacac.ClusterRoleBinding(name).WithLabels(managedBy()).
			WithRoleRef(rbacac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(role)).
			WithSubjects(rbacac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(kind).WithName(subject))
	}
	return []*rbacac.ClusterRoleBindingApplyConfiguration{
		bind("capn:kubelet-bootstrap", "system:node-bootstrapper", rbacv1.GroupKind, JoinGroup),
		bind("capn:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", rbacv1.GroupKind, JoinGroup),
		bind("capn:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", rbacv1.GroupKind, "system:nodes"),
	}
}

// joinRoles: anonymous may get the cluster-info ConfigMap, by name; the
// apiserver's authentication config lets anonymous requests reach that one
// path only.
func joinRoles() []*rbacac.RoleApplyConfiguration {
	return []*rbacac.RoleApplyConfiguration{
		rbacac.Role(ClusterInfoRole, ClusterInfoNamespace).WithLabels(managedBy()).WithRules(
			rule("", []string{"configmaps"}, "get").WithResourceNames(ClusterInfoName)),
	}
}

func joinRoleBindings() []*rbacac.RoleBindingApplyConfiguration {
	return []*rbacac.RoleBindingApplyConfiguration{
		rbacac.RoleBinding(ClusterInfoRole, ClusterInfoNamespace).WithLabels(managedBy()).
			WithRoleRef(rbacac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(ClusterInfoRole)).
			WithSubjects(rbacac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.UserKind).WithName("system:anonymous")),
	}
}

// Errors of JoinIssuer beyond ErrNotProvisioned.
var (
	// ErrJoinUnsupported: the tenant apiserver runs pods rendered before
	// template revision 3, so it refuses bootstrap tokens.
	ErrJoinUnsupported = errors.New("the tenant apiserver does not accept bootstrap tokens yet")
	// ErrTenantUnavailable wraps a failed tenant request; the text after
	// it is DescribeTenantError's, never the tenant's.
	ErrTenantUnavailable = errors.New("the tenant apiserver could not be reached")
)

// TenantClientFunc builds an admin client for a tenant apiserver signed by
// its CA; BootstrapClient is the real one.
type TenantClientFunc func(server string, ca *pki.CA, now time.Time) (kubernetes.Interface, error)

// JoinIssuer creates bootstrap tokens in tenants for
// nestedclusters/NAME/jointoken. Each request signs a 10-minute admin
// certificate in memory (BootstrapClient), writes cluster-info and one
// token Secret, and forgets the client: capn keeps no tenant credential.
type JoinIssuer struct {
	Management kubernetes.Interface
	// TenantClient is BootstrapClient when nil.
	TenantClient TenantClientFunc
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// JoinToken is what a node joins with.
type JoinToken struct {
	// Endpoint is the tenant apiserver's URL for nodes (status.endpoint).
	Endpoint string
	// CACertHashes are kubeadm-style hashes of the cluster CA's key.
	CACertHashes []string
	// Token is the bootstrap token, <id>.<secret>.
	Token   string
	Expires time.Time
	// BootstrapKubeconfig is the kubelet's --bootstrap-kubeconfig.
	BootstrapKubeconfig []byte
}

// Issue creates a bootstrap token in nc's tenant that expires after ttl.
// requester is recorded in the token's description. The token is never
// logged.
func (j *JoinIssuer) Issue(ctx context.Context, nc *v1alpha1.NestedCluster, requester string, ttl time.Duration) (*JoinToken, error) {
	addr, err := resolveTenant(ctx, j.Management, nc)
	if err != nil {
		return nil, err
	}
	dep, err := j.Management.AppsV1().Deployments(addr.namespace).Get(ctx, provisioner.APIServerName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: no apiserver Deployment", ErrNotProvisioned)
	case err != nil:
		return nil, fmt.Errorf("reading the apiserver Deployment: %w", err)
	case !builders.SupportsJoin(dep):
		return nil, ErrJoinUnsupported
	}
	now := time.Now()
	if j.Now != nil {
		now = j.Now()
	}
	newClient := j.TenantClient
	if newClient == nil {
		newClient = BootstrapClient
	}
	tenant, err := newClient(addr.internal, addr.ca, now)
	if err != nil {
		return nil, err
	}
	caData := addr.ca.CertPEM
	if _, err := tenant.CoreV1().ConfigMaps(ClusterInfoNamespace).Apply(ctx, ClusterInfo(addr.endpoint, caData),
		metav1.ApplyOptions{FieldManager: joinFieldManager, Force: true}); err != nil {
		return nil, fmt.Errorf("%w: writing %s/%s: %s", ErrTenantUnavailable, ClusterInfoNamespace, ClusterInfoName, DescribeTenantError(err))
	}
	expires := now.Add(ttl).UTC().Truncate(time.Second)
	var token string
	// A clash of random 6-character ids (one in 2 billion) gets one more try.
	for attempt := 0; ; attempt++ {
		id, secret, err := newBootstrapToken()
		if err != nil {
			return nil, err
		}
		_, err = tenant.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, bootstrapTokenSecret(id, secret, expires, requester), metav1.CreateOptions{})
		if err == nil {
			token = id + "." + secret
			break
		}
		if !apierrors.IsAlreadyExists(err) || attempt > 0 {
			return nil, fmt.Errorf("%w: creating the bootstrap token: %s", ErrTenantUnavailable, DescribeTenantError(err))
		}
	}
	kubeconfig, err := BootstrapKubeconfig(nc.Name, addr.endpoint, caData, token)
	if err != nil {
		return nil, err
	}
	hash, err := CACertHash(addr.ca.Cert.RawSubjectPublicKeyInfo)
	if err != nil {
		return nil, err
	}
	return &JoinToken{Endpoint: addr.endpoint, CACertHashes: []string{hash}, Token: token, Expires: expires, BootstrapKubeconfig: kubeconfig}, nil
}

// bootstrapTokenSecret is the tenant Secret that makes id.secret a
// bootstrap token: it authenticates as system:bootstrap:<id> in
// system:bootstrappers and JoinGroup, signs cluster-info (so kubeadm-style
// discovery can check the CA), and expires at expires, when kube-apiserver
// stops accepting it and kube-controller-manager's tokencleaner deletes it.
func bootstrapTokenSecret(id, secret string, expires time.Time, requester string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapTokenSecretPrefix + id, Namespace: metav1.NamespaceSystem, Labels: managedBy()},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id":                       id,
			"token-secret":                   secret,
			"expiration":                     expires.Format(time.RFC3339),
			"usage-bootstrap-authentication": "true",
			"usage-bootstrap-signing":        "true",
			"auth-extra-groups":              JoinGroup,
			"description":                    fmt.Sprintf("node join token created by capn for %q (nestedclusters/jointoken)", requester),
		},
	}
}

// newBootstrapToken draws an id ([a-z0-9]{6}) and a secret ([a-z0-9]{16})
// uniformly from crypto/rand.
func newBootstrapToken() (id, secret string, err error) {
	draw := func(n int) (string, error) {
		b := make([]byte, n)
		max := big.NewInt(int64(len(bootstrapTokenChars)))
		for i := range b {
			v, err := rand.Int(rand.Reader, max)
			if err != nil {
				return "", fmt.Errorf("reading random bytes: %w", err)
			}
			b[i] = bootstrapTokenChars[v.Int64()]
		}
		return string(b), nil
	}
	if id, err = draw(bootstrapTokenIDBytes); err != nil {
		return "", "", err
	}
	if secret, err = draw(bootstrapTokenSecretBytes); err != nil {
		return "", "", err
	}
	return id, secret, nil
}

// ClusterInfo is kube-public/cluster-info as kubeadm writes it: a
// kubeconfig with only the cluster (endpoint and CA), which the
// bootstrapsigner signs with every token that allows signing.
func ClusterInfo(endpoint string, caPEM []byte) *coreac.ConfigMapApplyConfiguration {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: endpoint, CertificateAuthorityData: caPEM}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		panic(fmt.Sprintf("serializing cluster-info: %v", err)) // a static shape
	}
	return coreac.ConfigMap(ClusterInfoName, ClusterInfoNamespace).WithLabels(managedBy()).
		WithData(map[string]string{"kubeconfig": string(data)})
}

// BootstrapKubeconfig is a kubelet's --bootstrap-kubeconfig for the tenant.
func BootstrapKubeconfig(clusterName, endpoint string, caPEM []byte, token string) ([]byte, error) {
	const user = "tls-bootstrap-token-user"
	ctx := user + "@" + clusterName
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: endpoint, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[ctx] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	cfg.CurrentContext = ctx
	return clientcmd.Write(*cfg)
}

// CACertHash is kubeadm's public-key pin of a CA:
// sha256:<hex of the SHA-256 of its DER SubjectPublicKeyInfo>.
func CACertHash(spki []byte) (string, error) {
	if len(spki) == 0 {
		return "", errors.New("the CA certificate has no public key info")
	}
	sum := sha256.Sum256(spki)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
