package pki

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/tenant/names"
)

// Data is the data of the management namespace's PKI Secrets:
// Secret name → key → value, in the layout naming.go documents.
type Data map[string]map[string][]byte

// Common names of the clients capn issues certificates to. The API server
// maps CN to the user and O to groups.
const (
	APIServerCommonName   = "kube-apiserver"
	EtcdClientCommonName  = "kube-apiserver-etcd-client"
	ControllerManagerUser = names.ControllerManagerUser
	SchedulerUser         = "system:kube-scheduler"
	// SyncerUser is capn-syncer's tenant identity, bound to the tenant
	// ClusterRole capn:syncer (access.Bootstrap): no group, so nothing but
	// that role.
	SyncerUser                 = names.SyncerUser
	etcdServerCommonName       = "etcd"
	etcdPeerCommonName         = "etcd-peer"
	controllerManagerServingCN = v1alpha1.ComponentControllerManager
	schedulerServingCN         = v1alpha1.ComponentScheduler
)

// Inputs are what the certificates depend on besides the CAs. Every SAN
// comes from the provisioner package's addresses, the names the builders
// render too.
type Inputs struct {
	ClusterName    string // CA subjects only
	APIServerURL   string // server of the kcm and scheduler kubeconfigs
	APIServerSANs  provisioner.SANs
	EtcdServerSANs provisioner.SANs
	EtcdPeerSANs   provisioner.SANs
	// ManagedEtcd: capn runs etcd, so it issues the etcd CA and certs. With
	// an external etcd the controller copies the user's Secrets instead.
	ManagedEtcd bool
	// Syncer: the cluster runs capn-syncer (Shared data plane), which
	// gets a kubeconfig of its own.
	Syncer bool
	// LeafValidity of every leaf; zero means DefaultLeafValidity.
	LeafValidity time.Duration
}

// InputsFor derives Inputs from a defaulted NestedCluster and the
// addresses the controller knows (builders.Params.Addresses).
func InputsFor(nc *v1alpha1.NestedCluster, a provisioner.Addresses) Inputs {
	return Inputs{
		ClusterName:    nc.Namespace + "/" + nc.Name,
		APIServerURL:   provisioner.APIServerURL(nc, a),
		APIServerSANs:  provisioner.APIServerSANs(nc, a),
		EtcdServerSANs: provisioner.EtcdServerSANs(nc, a),
		EtcdPeerSANs:   provisioner.EtcdPeerSANs(nc, a),
		ManagedEtcd:    nc.Spec.Etcd.Managed != nil,
		Syncer:         nc.Spec.DataPlane.Mode == v1alpha1.DataPlaneShared,
	}
}

func (in Inputs) validity() time.Duration {
	if in.LeafValidity > 0 {
		return in.LeafValidity
	}
	return DefaultLeafValidity
}

// leaf is one leaf Secret: which CA signs it and how it is stored.
type leaf struct {
	secret string
	ca     string // Secret name of the signing CA
	spec   LeafSpec
	// kubeconfig: stored under SecretKeyKubeconfig as a kubeconfig for
	// spec.CommonName, rather than as tls.crt/tls.key.
	kubeconfig bool
}

// leafSet is every leaf the builders mount (naming.go's Secret list).
func leafSet(in Inputs) []leaf {
	v := in.validity()
	spec := func(cn string, u Usage, sans provisioner.SANs) LeafSpec {
		return LeafSpec{CommonName: cn, Usage: u, DNSNames: sans.DNSNames, IPAddresses: sans.IPAddresses, Validity: v}
	}
	// kcm and scheduler serve /healthz and /metrics on the pod IP, which
	// is unknown at issue time; the kubelet's probes do not verify, and
	// in-pod clients use loopback.
	local := func(name string) provisioner.SANs {
		return provisioner.SANs{DNSNames: []string{"localhost", name}, IPAddresses: []string{"127.0.0.1"}}
	}
	none := provisioner.SANs{}
	ls := []leaf{
		{secret: provisioner.SecretAPIServerServing, ca: provisioner.SecretCA, spec: spec(APIServerCommonName, UsageServer, in.APIServerSANs)},
		{secret: provisioner.SecretAPIServerKubeletClient, ca: provisioner.SecretCA, spec: spec(names.KubeletClientCommonName, UsageClient, none)},
		{secret: provisioner.SecretFrontProxyClient, ca: provisioner.SecretFrontProxyCA, spec: spec(provisioner.FrontProxyClientCommonName, UsageClient, none)},
		{secret: provisioner.SecretControllerManagerKC, ca: provisioner.SecretCA, spec: spec(ControllerManagerUser, UsageClient, none), kubeconfig: true},
		{secret: provisioner.SecretSchedulerKC, ca: provisioner.SecretCA, spec: spec(SchedulerUser, UsageClient, none), kubeconfig: true},
		{secret: provisioner.SecretControllerManagerServing, ca: provisioner.SecretCA, spec: spec(controllerManagerServingCN, UsageServer, local(controllerManagerServingCN))},
		{secret: provisioner.SecretSchedulerServing, ca: provisioner.SecretCA, spec: spec(schedulerServingCN, UsageServer, local(schedulerServingCN))},
	}
	if in.Syncer {
		ls = append(ls, leaf{secret: provisioner.SecretSyncerKC, ca: provisioner.SecretCA, spec: spec(SyncerUser, UsageClient, none), kubeconfig: true})
	}
	if in.ManagedEtcd {
		ls = append(ls,
			leaf{secret: provisioner.SecretAPIServerEtcdClient, ca: provisioner.SecretEtcdCA, spec: spec(EtcdClientCommonName, UsageClient, none)},
			leaf{secret: provisioner.SecretEtcdServer, ca: provisioner.SecretEtcdCA, spec: spec(etcdServerCommonName, UsagePeer, in.EtcdServerSANs)},
			leaf{secret: provisioner.SecretEtcdPeer, ca: provisioner.SecretEtcdCA, spec: spec(etcdPeerCommonName, UsagePeer, in.EtcdPeerSANs)},
		)
	}
	return ls
}

// caRoles are the CAs: their Secret, subject CN and field in CAs.
var caRoles = []struct {
	secret, commonName string
	field              func(*CAs) **CA
}{
	{provisioner.SecretCA, "kubernetes-ca", func(c *CAs) **CA { return &c.Cluster }},
	{provisioner.SecretEtcdCA, "etcd-ca", func(c *CAs) **CA { return &c.Etcd }},
	{provisioner.SecretFrontProxyCA, "front-proxy-ca", func(c *CAs) **CA { return &c.FrontProxy }},
}

// bySecret maps a CA Secret name to the CA; nil when absent.
func (c *CAs) bySecret(name string) *CA {
	for _, r := range caRoles {
		if r.secret == name {
			return *r.field(c)
		}
	}
	return nil
}

// data renders the CA and service-account Secrets. These are the only
// Secrets holding CA keys; they stay in the management namespace. The etcd
// CA is left out unless etcd is managed: an unused CA key is only a risk.
func (c *CAs) data(managedEtcd bool) Data {
	d := Data{}
	for _, r := range caRoles {
		if r.secret == provisioner.SecretEtcdCA && !managedEtcd {
			continue
		}
		if ca := *r.field(c); ca != nil {
			d[r.secret] = tlsData(&ca.KeyPair)
		}
	}
	if sa := c.ServiceAccount; sa != nil {
		d[provisioner.SecretServiceAccount] = map[string][]byte{
			provisioner.SecretKeySAPrivate: sa.PrivatePEM,
			provisioner.SecretKeySAPublic:  sa.PublicPEM,
		}
	}
	return d
}

func tlsData(kp *KeyPair) map[string][]byte {
	return map[string][]byte{corev1.TLSCertKey: kp.CertPEM, corev1.TLSPrivateKeyKey: kp.KeyPEM}
}

// Secrets renders every PKI Secret of a new cluster: cas as they are and
// freshly issued leaves. Reconcile is the incremental form.
func Secrets(cas *CAs, in Inputs, now time.Time) (Data, error) {
	d := cas.data(in.ManagedEtcd)
	for _, l := range leafSet(in) {
		v, err := issueLeaf(cas, l, in, now)
		if err != nil {
			return nil, err
		}
		d[l.secret] = v
	}
	return d, nil
}

func issueLeaf(cas *CAs, l leaf, in Inputs, now time.Time) (map[string][]byte, error) {
	ca := cas.bySecret(l.ca)
	if ca == nil {
		return nil, fmt.Errorf("%s: CA Secret %q is missing", l.secret, l.ca)
	}
	kp, err := Issue(ca, l.spec, now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.secret, err)
	}
	if !l.kubeconfig {
		return tlsData(kp), nil
	}
	kc, err := Kubeconfig(in.APIServerURL, ca.CertPEM, l.spec.CommonName, kp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.secret, err)
	}
	return map[string][]byte{provisioner.SecretKeyKubeconfig: kc}, nil
}
