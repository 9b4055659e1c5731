package profiles

import (
	"net/netip"
	"path"
	"strconv"
	"strings"

	"capn.dev/capn/pkg/provisioner"
)

func pki(file string) string  { return path.Join(PKIDir, file) }
func conf(file string) string { return path.Join(ConfigDir, file) }
func etcdPKI(f string) string { return path.Join(EtcdPKIDir, f) }
func port(p int) string       { return strconv.Itoa(p) }

// apiServerFlags is the shared kube-apiserver table.
func apiServerFlags(in Params) Flags {
	f := Flags{
		// Bind everywhere in the pod: the Service, the kubelet's probes and
		// the other components all arrive on the pod IP.
		"bind-address": "0.0.0.0",
		"secure-port":  port(APIServerPort),
		// The pod IP from the downward API: what the tenant's "kubernetes"
		// Endpoints publish, and reachable without DNS.
		"advertise-address": "$(" + EnvPodIP + ")",

		"etcd-servers":  strings.Join(in.EtcdServers, ","),
		"etcd-prefix":   in.EtcdPrefix,
		"etcd-cafile":   pki(FileEtcdCACert),
		"etcd-certfile": pki(FileAPIServerEtcdClientCert),
		"etcd-keyfile":  pki(FileAPIServerEtcdClientKey),

		"tls-cert-file":        pki(FileAPIServerCert),
		"tls-private-key-file": pki(FileAPIServerKey),
		"client-ca-file":       pki(FileCACert),
		// Anonymous requests are limited to /livez, /readyz and /healthz by
		// this file (the kubelet's probes carry no credentials); the
		// owned --anonymous-auth stays unset because the two conflict.
		"authentication-config": conf(FileAuthenticationConfig),
		"authorization-mode":    "Node,RBAC",

		"kubelet-client-certificate":      pki(FileAPIServerKubeletCert),
		"kubelet-client-key":              pki(FileAPIServerKubeletKey),
		"kubelet-preferred-address-types": "InternalIP,ExternalIP,Hostname",

		// Front proxy, so aggregated APIs work inside the tenant.
		"requestheader-client-ca-file":       pki(FileFrontProxyCACert),
		"requestheader-allowed-names":        provisioner.FrontProxyClientCommonName,
		"requestheader-username-headers":     "X-Remote-User",
		"requestheader-uid-headers":          "X-Remote-Uid",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"proxy-client-cert-file":             pki(FileFrontProxyClientCert),
		"proxy-client-key-file":              pki(FileFrontProxyClientKey),
		// The tenant has no kube-proxy of its own in the management
		// cluster, so its Service IPs lead nowhere from the apiserver pod:
		// the aggregator must dial endpoints directly.
		"enable-aggregator-routing": "true",

		"service-account-issuer":           "https://kubernetes.default.svc." + in.DNSDomain,
		"service-account-key-file":         pki(FileSAPublic),
		"service-account-signing-key-file": pki(FileSAPrivate),
		"service-cluster-ip-range":         in.ServiceCIDR,

		"allow-privileged":         "true",
		"enable-admission-plugins": "NodeRestriction",
		"profiling":                "false",

		// Rolling the apiserver must not fail a tenant request. On SIGTERM
		// it keeps serving while /readyz fails, long enough for the
		// Service to drop the pod (kube-proxy syncs within ~1s), and then
		// answers late requests with 429 + Retry-After, which clients retry,
		// instead of resetting them. The pod's grace period (30s) covers it.
		"shutdown-delay-duration":   "5s",
		"shutdown-send-retry-after": "true",
	}
	// A Shared tenant's service range is the management cluster's, so
	// its kubernetes Service has the management kubernetes Service's IP.
	// Publishing the tenant apiserver's pod IP behind it would mean
	// nothing on the host; tenant pods get the tenant apiserver's own
	// Service address instead (the syncer's KUBERNETES_SERVICE_HOST).
	if in.SharedDataPlane {
		f["endpoint-reconciler-type"] = "none"
	}
	// Real nodes join with a bootstrap token (nestedclusters/jointoken):
	// kube-controller-manager's bootstrapsigner and tokencleaner, its
	// cluster-signing CA, and the tenant RBAC (access/join.go) do the
	// rest. The token authenticator is independent of
	// --authentication-config in both supported minors.
	if in.NodeJoin {
		f["enable-bootstrap-token-auth"] = "true"
	}
	if in.EtcdCompactionDisabled {
		f["etcd-compaction-interval"] = "0"
	}
	if in.WebhookClientCert {
		f["admission-control-config-file"] = conf(FileAdmissionConfig)
	}
	return f
}

// controllerManagerFlags is the shared kube-controller-manager table.
func controllerManagerFlags(in Params) Flags {
	kc := pki(FileKubeconfig)
	return Flags{
		"bind-address":         "0.0.0.0", // probed by the kubelet on the pod IP
		"secure-port":          port(ControllerManagerPort),
		"tls-cert-file":        pki(FileServingCert),
		"tls-private-key-file": pki(FileServingKey),

		"kubeconfig":                kc,
		"authentication-kubeconfig": kc,
		"authorization-kubeconfig":  kc,
		// Both CA files given (as kubeadm does), kube-controller-manager
		// does not read them from the tenant's extension-apiserver-
		// authentication ConfigMap at start: that lookup fails until the
		// tenant apiserver is up, and it is fatal for this component
		// (kube-scheduler tolerates it), so it crash-looped on every new
		// control plane.
		"client-ca-file":               pki(FileCACert),
		"requestheader-client-ca-file": pki(FileFrontProxyCACert),
		"leader-elect":                 strconv.FormatBool(in.LeaderElect),

		"root-ca-file":                     pki(FileCACert),
		"cluster-signing-cert-file":        pki(FileCACert),
		"cluster-signing-key-file":         pki(FileCAKey),
		"service-account-private-key-file": pki(FileSAPrivate),
		"use-service-account-credentials":  "true",

		"cluster-cidr":             in.PodCIDR,
		"allocate-node-cidrs":      strconv.FormatBool(allocateNodeCIDRs(in.PodCIDR)),
		"service-cluster-ip-range": in.ServiceCIDR,

		// kubeadm's set: the bootstrap-token controllers let nodes join.
		"controllers": "*,bootstrapsigner,tokencleaner",
		"profiling":   "false",
	}
}

// allocateNodeCIDRs reports whether node IPAM can split podCIDR into the
// default per-node ranges (/24 for IPv4, /64 for IPv6). kube-controller-
// manager refuses to start when the pod range is smaller than one node
// range, or, for IPv6, more than 2^16 node ranges; the API accepts such
// ranges, so IPAM is left off for them rather than crash-looping (a user
// can turn it on with node-cidr-mask-size through extraArgs).
func allocateNodeCIDRs(podCIDR string) bool {
	p, err := netip.ParsePrefix(podCIDR)
	switch {
	case err != nil:
		return false
	case p.Addr().Is4():
		return p.Bits() <= 24
	default:
		return p.Bits() >= 64-16 && p.Bits() <= 64
	}
}

// schedulerFlags is the shared kube-scheduler table. Its client connection
// lives in the config file (SchedulerConfig): --kubeconfig is deprecated
// and ignored once --config is given.
func schedulerFlags(in Params) Flags {
	kc := pki(FileKubeconfig)
	return Flags{
		"config":                    conf(FileSchedulerConfig),
		"bind-address":              "0.0.0.0",
		"secure-port":               port(SchedulerPort),
		"tls-cert-file":             pki(FileServingCert),
		"tls-private-key-file":      pki(FileServingKey),
		"authentication-kubeconfig": kc,
		"authorization-kubeconfig":  kc,
		// A flag rather than the config file so the leader-elect rule
		// reads the same for both controllers; it overrides the file.
		"leader-elect": strconv.FormatBool(in.LeaderElect),
	}
}

// EtcdFlags renders etcd's flags. They belong to no Profile on purpose: a
// version upgrade never touches etcd, so its flags must not depend on the
// Kubernetes minor (a per-minor change would roll etcd on upgrade).
func EtcdFlags(in Params) Flags {
	f := Flags{
		"name":     "$(" + EnvPodName + ")",
		"data-dir": EtcdDataDir,

		"listen-client-urls":          "https://0.0.0.0:" + port(EtcdClientPort),
		"listen-peer-urls":            "https://0.0.0.0:" + port(EtcdPeerPort),
		"listen-metrics-urls":         "http://0.0.0.0:" + port(EtcdMetricsPort),
		"advertise-client-urls":       in.EtcdAdvertiseClientURLs,
		"initial-advertise-peer-urls": in.EtcdInitialAdvertisePeerURLs,
		"initial-cluster":             in.EtcdInitialCluster,
		"initial-cluster-state":       "new",
		"initial-cluster-token":       in.EtcdClusterToken,

		"client-cert-auth":      "true",
		"trusted-ca-file":       etcdPKI(FileCACert),
		"cert-file":             etcdPKI(FileEtcdServerCert),
		"key-file":              etcdPKI(FileEtcdServerKey),
		"peer-client-cert-auth": "true",
		"peer-trusted-ca-file":  etcdPKI(FileCACert),
		"peer-cert-file":        etcdPKI(FileEtcdPeerCert),
		"peer-key-file":         etcdPKI(FileEtcdPeerKey),
	}
	if in.EtcdQuotaBackendBytes > 0 {
		f["quota-backend-bytes"] = strconv.FormatInt(in.EtcdQuotaBackendBytes, 10)
	}
	return f
}

// AuthenticationConfig is kube-apiserver's --authentication-config file:
// no authenticators beyond certificates, service-account tokens (and,
// with NodeJoin, bootstrap tokens), and anonymous requests only for the
// health endpoints, which the kubelet probes without credentials and
// system:public-info-viewer already allows. With NodeJoin, also for
// exactly kube-public/cluster-info: the discovery document kubeadm-style
// joins read before they hold any credential (the cluster CA and the
// endpoint, signed by bootstrapsigner with each token); RBAC in the tenant
// grants system:anonymous get on that one ConfigMap and nothing else, and
// this file keeps anonymous requests off every other path whatever RBAC a
// tenant adds.
func (p Profile) AuthenticationConfig(in Params) string {
	s := `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /livez
  - path: /readyz
  - path: /healthz
`
	if in.NodeJoin {
		s += "  - path: " + ClusterInfoPath + "\n"
	}
	return s
}

// AdmissionConfig is kube-apiserver's --admission-control-config-file with
// WebhookClientCert: both webhook plugins read WebhookKubeconfig.
func (p Profile) AdmissionConfig() string {
	s := `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
`
	for _, plugin := range []string{"ValidatingAdmissionWebhook", "MutatingAdmissionWebhook"} {
		s += `- name: ` + plugin + `
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: ` + conf(FileWebhookKubeconfig) + "\n"
	}
	return s
}

// WebhookKubeconfig gives every webhook the apiserver calls its kubelet
// client certificate (signed by the tenant CA, common name
// provisioner.KubeletClientCommonName), which capn-syncer's webhook
// requires. "*" because the syncer's webhook is called at its leader's
// pod IP, which moves; a tenant's own webhooks see the certificate too,
// which proves only what the kubelet API already sees.
func (p Profile) WebhookKubeconfig() string {
	return `apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: ` + pki(FileAPIServerKubeletCert) + `
    client-key: ` + pki(FileAPIServerKubeletKey) + "\n"
}

// ClusterInfoPath is the one API path anonymous requests may read when
// nodes can join: the kube-public/cluster-info ConfigMap.
const ClusterInfoPath = "/api/v1/namespaces/kube-public/configmaps/cluster-info"

// SchedulerConfig is kube-scheduler's --config file. Profiling is off as it
// is for the other components (the --profiling flag is ignored with
// --config).
func (p Profile) SchedulerConfig() string {
	return `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: ` + pki(FileKubeconfig) + `
enableProfiling: false
`
}
