package builders

import (
	corev1 "k8s.io/api/core/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

// PKISecretTemplateRevision is the first revision whose pods mount their
// PKI from their component's Secret (provisioner.ComponentPKISecret)
// instead of from the logical Secrets, one per key pair: a new cluster's
// PKI is five or six writes instead of fourteen or fifteen.
const PKISecretTemplateRevision = 7

// PKISecret is one Secret of the PKI layout and what it holds.
type PKISecret struct {
	Name  string
	Files []PKIFile
}

// PKIFile is one key of a PKI Secret: its name there (Key, the file name
// its component sees) and the logical Secret and key it holds a copy of.
type PKIFile struct{ Key, Logical, LogicalKey string }

// rootFiles are the roots' keys in provisioner.SecretPKIRoots.
var rootFiles = []file{
	{provisioner.SecretCA, corev1.TLSCertKey, provisioner.RootKeyCACert},
	{provisioner.SecretCA, corev1.TLSPrivateKeyKey, provisioner.RootKeyCAKey},
	{provisioner.SecretEtcdCA, corev1.TLSCertKey, provisioner.RootKeyEtcdCACert},
	{provisioner.SecretEtcdCA, corev1.TLSPrivateKeyKey, provisioner.RootKeyEtcdCAKey},
	{provisioner.SecretFrontProxyCA, corev1.TLSCertKey, provisioner.RootKeyFrontProxyCACert},
	{provisioner.SecretFrontProxyCA, corev1.TLSPrivateKeyKey, provisioner.RootKeyFrontProxyCAKey},
	{provisioner.SecretServiceAccount, provisioner.SecretKeySAPrivate, provisioner.RootKeySAPrivate},
	{provisioner.SecretServiceAccount, provisioner.SecretKeySAPublic, provisioner.RootKeySAPublic},
}

// IsRoot reports whether a logical Secret is a root: stored in
// SecretPKIRoots, and only copied into component Secrets.
func IsRoot(logical string) bool {
	for _, f := range rootFiles {
		if f.secret == logical {
			return true
		}
	}
	return false
}

// copiedSecrets are Secrets capn copies from elsewhere (an external etcd's,
// a pool's) rather than issues: they stay Secrets of their own.
var copiedSecrets = map[string]bool{
	provisioner.SecretExternalEtcdCA: true, provisioner.SecretExternalEtcdClient: true, provisioner.SecretPoolEtcdClient: true,
}

// PKILayout is where nc's PKI is stored from PKISecretTemplateRevision on:
// the roots, then one Secret per component holding exactly the files its
// pods mount. The files come from the lists the builders mount, so what a
// pod sees cannot drift from what is stored for it.
func PKILayout(nc *v1alpha1.NestedCluster) []PKISecret {
	out := []PKISecret{{Name: provisioner.SecretPKIRoots, Files: pkiFiles(rootFiles)}}
	for _, c := range pkiComponents(nc) {
		var own []file
		for _, f := range c.files {
			if !copiedSecrets[f.secret] {
				own = append(own, f)
			}
		}
		out = append(out, PKISecret{Name: provisioner.ComponentPKISecret(c.component), Files: pkiFiles(own)})
	}
	return out
}

func pkiFiles(fs []file) []PKIFile {
	out := make([]PKIFile, len(fs))
	for i, f := range fs {
		out[i] = PKIFile{Key: f.path, Logical: f.secret, LogicalKey: f.key}
	}
	return out
}

type componentFiles struct {
	component string
	files     []file
}

// pkiComponents are nc's components that mount PKI, with their files.
func pkiComponents(nc *v1alpha1.NestedCluster) []componentFiles {
	var out []componentFiles
	if nc.Spec.Etcd.Managed != nil {
		out = append(out, componentFiles{v1alpha1.ComponentEtcd, etcdFiles})
	}
	out = append(out,
		componentFiles{v1alpha1.ComponentAPIServer, apiserverFiles(nc)},
		componentFiles{v1alpha1.ComponentControllerManager, controllerManagerFiles},
		componentFiles{v1alpha1.ComponentScheduler, schedulerFiles})
	if shared(nc) {
		out = append(out, componentFiles{v1alpha1.ComponentSyncer, syncerFiles})
	}
	return out
}

// pkiVolume is component's "pki" volume at rev: its files from the logical
// Secrets before PKISecretTemplateRevision, from its own Secret since.
func pkiVolume(component string, rev int, files []file) corev1.Volume {
	if rev < PKISecretTemplateRevision {
		return projectedSecrets("pki", files)
	}
	out := make([]file, len(files))
	for i, f := range files {
		if !copiedSecrets[f.secret] {
			f = file{provisioner.ComponentPKISecret(component), f.path, f.path}
		}
		out[i] = f
	}
	return projectedSecrets("pki", out)
}

var etcdFiles = []file{
	{provisioner.SecretEtcdCA, corev1.TLSCertKey, profiles.FileCACert},
	{provisioner.SecretEtcdServer, corev1.TLSCertKey, profiles.FileEtcdServerCert},
	{provisioner.SecretEtcdServer, corev1.TLSPrivateKeyKey, profiles.FileEtcdServerKey},
	{provisioner.SecretEtcdPeer, corev1.TLSCertKey, profiles.FileEtcdPeerCert},
	{provisioner.SecretEtcdPeer, corev1.TLSPrivateKeyKey, profiles.FileEtcdPeerKey},
}

// controllerManagerFiles: its kubeconfig and serving certificate, the
// cluster CA key (it signs CSRs) and the service-account key.
var controllerManagerFiles = []file{
	{provisioner.SecretControllerManagerKC, provisioner.SecretKeyKubeconfig, profiles.FileKubeconfig},
	{provisioner.SecretControllerManagerServing, corev1.TLSCertKey, profiles.FileServingCert},
	{provisioner.SecretControllerManagerServing, corev1.TLSPrivateKeyKey, profiles.FileServingKey},
	{provisioner.SecretCA, corev1.TLSCertKey, profiles.FileCACert},
	{provisioner.SecretCA, corev1.TLSPrivateKeyKey, profiles.FileCAKey},
	{provisioner.SecretFrontProxyCA, corev1.TLSCertKey, profiles.FileFrontProxyCACert},
	{provisioner.SecretServiceAccount, provisioner.SecretKeySAPrivate, profiles.FileSAPrivate},
}

var schedulerFiles = []file{
	{provisioner.SecretSchedulerKC, provisioner.SecretKeyKubeconfig, profiles.FileKubeconfig},
	{provisioner.SecretSchedulerServing, corev1.TLSCertKey, profiles.FileServingCert},
	{provisioner.SecretSchedulerServing, corev1.TLSPrivateKeyKey, profiles.FileServingKey},
}

var syncerFiles = []file{{provisioner.SecretSyncerKC, provisioner.SecretKeyKubeconfig, profiles.FileKubeconfig}}

// apiserverFiles: never a CA key. The etcd files have the same names
// whichever etcd it is; only the Secrets behind them differ.
func apiserverFiles(nc *v1alpha1.NestedCluster) []file {
	etcdCA := file{provisioner.SecretEtcdCA, corev1.TLSCertKey, profiles.FileEtcdCACert}
	etcdClient := provisioner.SecretAPIServerEtcdClient
	switch {
	case nc.Spec.Etcd.External != nil:
		etcdCA = file{provisioner.SecretExternalEtcdCA, corev1.ServiceAccountRootCAKey, profiles.FileEtcdCACert}
		etcdClient = provisioner.SecretExternalEtcdClient
	case nc.Spec.Etcd.Pool != "":
		etcdCA = file{provisioner.SecretPoolEtcdClient, corev1.ServiceAccountRootCAKey, profiles.FileEtcdCACert}
		etcdClient = provisioner.SecretPoolEtcdClient
	}
	return []file{
		{provisioner.SecretCA, corev1.TLSCertKey, profiles.FileCACert},
		{provisioner.SecretAPIServerServing, corev1.TLSCertKey, profiles.FileAPIServerCert},
		{provisioner.SecretAPIServerServing, corev1.TLSPrivateKeyKey, profiles.FileAPIServerKey},
		{provisioner.SecretAPIServerKubeletClient, corev1.TLSCertKey, profiles.FileAPIServerKubeletCert},
		{provisioner.SecretAPIServerKubeletClient, corev1.TLSPrivateKeyKey, profiles.FileAPIServerKubeletKey},
		{provisioner.SecretFrontProxyCA, corev1.TLSCertKey, profiles.FileFrontProxyCACert},
		{provisioner.SecretFrontProxyClient, corev1.TLSCertKey, profiles.FileFrontProxyClientCert},
		{provisioner.SecretFrontProxyClient, corev1.TLSPrivateKeyKey, profiles.FileFrontProxyClientKey},
		{provisioner.SecretServiceAccount, provisioner.SecretKeySAPublic, profiles.FileSAPublic},
		{provisioner.SecretServiceAccount, provisioner.SecretKeySAPrivate, profiles.FileSAPrivate},
		etcdCA,
		{etcdClient, corev1.TLSCertKey, profiles.FileAPIServerEtcdClientCert},
		{etcdClient, corev1.TLSPrivateKeyKey, profiles.FileAPIServerEtcdClientKey},
	}
}
