package profiles

// Where the builders mount files and which ports they expose. The flags
// reference these and the builders mount and probe them, so both read the
// same constants.
const (
	// PKIDir holds the certificates, keys and kubeconfig of a kube-*
	// component, projected from several Secrets with kubeadm's file names.
	PKIDir = "/etc/kubernetes/pki"
	// ConfigDir holds generated config files (from a ConfigMap).
	ConfigDir = "/etc/kubernetes/config"
	// EtcdPKIDir holds etcd's CA, server and peer certificates.
	EtcdPKIDir = "/etc/etcd/pki"
	// EtcdDataMount is the data volume's mount point. etcd gets a
	// subdirectory (EtcdDataDir) so it can create it with the 0700 mode it
	// insists on, whatever mode the volume root has.
	EtcdDataMount = "/var/lib/etcd"
	EtcdDataDir   = EtcdDataMount + "/data"
)

// File names inside PKIDir (kube-* components) and EtcdPKIDir (etcd).
const (
	FileCACert                  = "ca.crt"
	FileCAKey                   = "ca.key"
	FileAPIServerCert           = "apiserver.crt"
	FileAPIServerKey            = "apiserver.key"
	FileAPIServerKubeletCert    = "apiserver-kubelet-client.crt"
	FileAPIServerKubeletKey     = "apiserver-kubelet-client.key"
	FileAPIServerEtcdClientCert = "apiserver-etcd-client.crt"
	FileAPIServerEtcdClientKey  = "apiserver-etcd-client.key"
	FileEtcdCACert              = "etcd-ca.crt"
	FileFrontProxyCACert        = "front-proxy-ca.crt"
	FileFrontProxyClientCert    = "front-proxy-client.crt"
	FileFrontProxyClientKey     = "front-proxy-client.key"
	FileSAPrivate               = "sa.key"
	FileSAPublic                = "sa.pub"
	FileKubeconfig              = "kubeconfig"
	FileServingCert             = "serving.crt" // kcm's or scheduler's own
	FileServingKey              = "serving.key"

	FileEtcdServerCert = "server.crt"
	FileEtcdServerKey  = "server.key"
	FileEtcdPeerCert   = "peer.crt"
	FileEtcdPeerKey    = "peer.key"

	FileAuthenticationConfig = "authentication-config.yaml"
	FileAdmissionConfig      = "admission-config.yaml"
	FileWebhookKubeconfig    = "webhook-kubeconfig.yaml"
	FileSchedulerConfig      = "scheduler-config.yaml"
)

// Secure ports, the components' upstream defaults: Services, probes and
// --secure-port agree on them.
const (
	APIServerPort         = 6443
	ControllerManagerPort = 10257
	SchedulerPort         = 10259
	EtcdClientPort        = 2379
	EtcdPeerPort          = 2380
	// EtcdMetricsPort serves /metrics, /livez and /readyz over plain HTTP so
	// the kubelet can probe without a client certificate.
	EtcdMetricsPort = 2381
)

// Container environment the builders set from the downward API and the
// flags expand as $(NAME). Prefixed so a user's env cannot collide by
// accident; the builders refuse a collision.
const (
	EnvPodIP   = "CAPN_POD_IP"
	EnvPodName = "CAPN_POD_NAME"
)
