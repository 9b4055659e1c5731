package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// certValidity bounds every test certificate; a test cluster never lives
// longer, and short lifetimes keep leaked files harmless.
const certValidity = 48 * time.Hour

// KeyPair is a certificate and its private key, in PEM and on disk.
type KeyPair struct {
	CertFile, KeyFile string
	CertPEM, KeyPEM   []byte
}

// CA signs certificates. Its certificate is written to <dir>/<name>.crt.
type CA struct {
	KeyPair
	cert *x509.Certificate
	key  crypto.Signer
	dir  string
}

// NewCA creates a self-signed CA with ECDSA P-256 keys (fast to generate,
// accepted by every Kubernetes component) and writes it to dir.
func NewCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	c, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name}, key)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA %s: %w", name, err)
	}
	ca := &CA{cert: c, key: key, dir: dir}
	ca.KeyPair, err = writeKeyPair(dir, name, c, key)
	return ca, err
}

// Issue signs a leaf certificate for cfg and writes it to <dir>/<name>.{crt,key}.
// cfg.Usages says whether it is a client or a serving certificate.
func (ca *CA) Issue(name string, cfg cert.Config) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64))
	if err != nil {
		return KeyPair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)),
		Subject:      pkix.Name{CommonName: cfg.CommonName, Organization: cfg.Organization},
		DNSNames:     cfg.AltNames.DNSNames,
		IPAddresses:  cfg.AltNames.IPs,
		// Backdated so that small clock differences between processes
		// never make a fresh certificate "not yet valid".
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: cfg.Usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing %s: %w", name, err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return KeyPair{}, err
	}
	return writeKeyPair(ca.dir, name, c, key)
}

// ClientCert issues a client certificate for user with groups as O.
func (ca *CA) ClientCert(user string, groups ...string) (KeyPair, error) {
	return ca.Issue("client-"+fileSafe(user), cert.Config{
		CommonName: user, Organization: groups,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// ServingCert issues a serving certificate valid for dnsNames and ips.
func (ca *CA) ServingCert(name string, dnsNames []string, ips []net.IP) (KeyPair, error) {
	cn := name
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	return ca.Issue(name, cert.Config{
		CommonName: cn, AltNames: cert.AltNames{DNSNames: dnsNames, IPs: ips},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

func writeKeyPair(dir, name string, c *x509.Certificate, key crypto.Signer) (KeyPair, error) {
	kp := KeyPair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	var err error
	if kp.CertPEM, err = cert.EncodeCertificates(c); err != nil {
		return kp, err
	}
	if kp.KeyPEM, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return kp, err
	}
	if err := cert.WriteCert(kp.CertFile, kp.CertPEM); err != nil {
		return kp, err
	}
	return kp, keyutil.WriteKey(kp.KeyFile, kp.KeyPEM)
}

// writeKeyFile writes a fresh ECDSA private key, e.g. for service-account
// token signing (kube-apiserver derives the public key from it).
func writeKeyFile(path string) error {
	pem, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return err
	}
	return keyutil.WriteKey(path, pem)
}

// writeKubeconfig writes a kubeconfig for server, trusting caPEM, with auth
// as its only user. Credentials are embedded so the file is self-contained.
func writeKubeconfig(path, server string, caPEM []byte, user string, auth *clientcmdapi.AuthInfo) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["capn-test"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos[user] = auth
	kc.Contexts["capn-test"] = &clientcmdapi.Context{Cluster: "capn-test", AuthInfo: user}
	kc.CurrentContext = "capn-test"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}

// fileSafe maps a user name such as system:serviceaccount:ns:sa to a name
// usable as a file name.
func fileSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ':' || c == '/' {
			b[i] = '_'
		}
	}
	return string(b)
}

// clusterPKI is every credential the control plane is started with.
type clusterPKI struct {
	CA, FrontProxyCA *CA
	// ServiceAccountKey signs and verifies service-account tokens.
	ServiceAccountKey                  string
	APIServer, FrontProxyClient, Admin KeyPair
	ControllerManager, Scheduler       KeyPair // client certificates
	KubeletClient                      KeyPair // kube-apiserver -> kubelet
	KCMServing, SchedulerServing       KeyPair
}

func newClusterPKI(dir string, nodeIP, serviceIP net.IP) (*clusterPKI, error) {
	p := &clusterPKI{ServiceAccountKey: filepath.Join(dir, "sa.key")}
	var err error
	if p.CA, err = NewCA(dir, "cluster-ca"); err != nil {
		return nil, err
	}
	// A separate CA for the front proxy, as kubeadm does: a certificate
	// from the cluster CA must never be able to assert X-Remote-User.
	if p.FrontProxyCA, err = NewCA(dir, "front-proxy-ca"); err != nil {
		return nil, err
	}
	if err = writeKeyFile(p.ServiceAccountKey); err != nil {
		return nil, err
	}
	loopback := net.ParseIP("127.0.0.1")
	steps := []struct {
		kp *KeyPair
		fn func() (KeyPair, error)
	}{
		{&p.APIServer, func() (KeyPair, error) {
			return p.CA.ServingCert("apiserver",
				[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost"},
				[]net.IP{loopback, nodeIP, serviceIP})
		}},
		{&p.FrontProxyClient, func() (KeyPair, error) { return p.FrontProxyCA.ClientCert(FrontProxyClientName) }},
		{&p.Admin, func() (KeyPair, error) { return p.CA.ClientCert("kubernetes-admin", "system:masters") }},
		// No group: what it may do on kubelets comes from the
		// system:kubelet-api-admin binding a node creates, not from
		// system:masters.
		{&p.KubeletClient, func() (KeyPair, error) { return p.CA.ClientCert(KubeletClientName) }},
		{&p.ControllerManager, func() (KeyPair, error) { return p.CA.ClientCert("system:kube-controller-manager") }},
		{&p.Scheduler, func() (KeyPair, error) { return p.CA.ClientCert("system:kube-scheduler") }},
		{&p.KCMServing, func() (KeyPair, error) {
			return p.CA.ServingCert("kcm-serving", []string{"localhost"}, []net.IP{loopback})
		}},
		{&p.SchedulerServing, func() (KeyPair, error) {
			return p.CA.ServingCert("scheduler-serving", []string{"localhost"}, []net.IP{loopback})
		}},
	}
	for _, s := range steps {
		if *s.kp, err = s.fn(); err != nil {
			return nil, err
		}
	}
	return p, nil
}
