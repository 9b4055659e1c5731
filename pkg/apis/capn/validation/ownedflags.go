package validation

import (
	"strings"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	cmdsyncer "capn.dev/capn/pkg/cmd/syncer"
)

// Reasons shared by several flags, so one wording explains one mechanism.
const (
	whyServingCert  = "it points at the serving certificate capn issues (add names with spec.apiServer.certSANs)"
	whyOwnCert      = "it points at the serving certificate capn issues for the component"
	whyClusterCA    = "it points at the cluster CA capn issues"
	whyFrontProxy   = "it configures front-proxy authentication against the CA capn issues"
	whyEtcdPKI      = "it points at the etcd client certificates capn mounts"
	whySecurePort   = "capn's Service and probes target the port it sets"
	whyBindAddress  = "capn's Service and probes must reach the component"
	whyKubeconfig   = "it points at the kubeconfig capn issues for the component"
	whyLeaderElect  = "capn turns leader election on whenever replicas > 1"
	whyServiceRange = "it is set from spec.clusterNetwork.serviceCIDR"
	whySigner       = "it points at the cluster CA capn issues for signing certificates"
	whyServiceAcct  = "service account flags are tied to the signing keys capn generates for the cluster"
	whySyncerScope  = "it is a provider setting (capn-apiserver's --tenant-* and --data-plane-* flags) that confines the tenant's pods"
	// capn runs kube-scheduler with --config; these flags would be ignored
	// silently, so refusing them is the honest answer.
	whyIgnoredWithConfig = "kube-scheduler ignores it because capn passes --config (set it in the scheduler configuration instead)"
)

// OwnedFlags lists, per component, the flags capn sets itself and a tenant
// may not override through extraArgs, each with the reason shown to the user.
// They wire a component to its PKI, etcd, kubeconfig or network ranges; an
// override would break the control plane or widen what it trusts. Flags with
// the prefix "service-account-" are also owned for kube-apiserver and
// kube-controller-manager (see OwnedFlag).
var OwnedFlags = map[string]map[string]string{
	v1alpha1.ComponentAPIServer: {
		"etcd-servers":                       "it wires kube-apiserver to its etcd",
		"etcd-cafile":                        whyEtcdPKI,
		"etcd-certfile":                      whyEtcdPKI,
		"etcd-keyfile":                       whyEtcdPKI,
		"etcd-prefix":                        "it is set from spec.etcd (external.prefix, or /registry for managed etcd)",
		"tls-cert-file":                      whyServingCert,
		"tls-private-key-file":               whyServingCert,
		"cert-dir":                           "capn mounts the apiserver's certificates at a fixed path",
		"client-ca-file":                     whyClusterCA,
		"kubelet-client-certificate":         "it points at the kubelet client certificate capn issues",
		"kubelet-client-key":                 "it points at the kubelet client certificate capn issues",
		"proxy-client-cert-file":             "it points at the front-proxy client certificate capn issues",
		"proxy-client-key-file":              "it points at the front-proxy client certificate capn issues",
		"requestheader-client-ca-file":       whyFrontProxy,
		"requestheader-allowed-names":        whyFrontProxy,
		"requestheader-username-headers":     whyFrontProxy,
		"requestheader-uid-headers":          whyFrontProxy,
		"requestheader-group-headers":        whyFrontProxy,
		"requestheader-extra-headers-prefix": whyFrontProxy,
		"service-cluster-ip-range":           whyServiceRange,
		"secure-port":                        whySecurePort,
		"bind-address":                       whyBindAddress,
		"authorization-mode":                 "tenant clusters always authorize with Node,RBAC, which capn's own access relies on",
		"anonymous-auth":                     "anonymous access stays off on an apiserver reachable from the management cluster",
		"authentication-config":              "capn's authentication config limits anonymous access to the health endpoints the kubelet probes and kube-public/cluster-info",
		"endpoint-reconciler-type":           "in Shared data-plane mode the tenant's kubernetes Service would otherwise publish the tenant apiserver's pod IP behind an IP that is the management cluster's own kubernetes Service",
		"token-auth-file":                    "static token files are not supported: the file would live in capn's pod",
	},
	v1alpha1.ComponentControllerManager: {
		"kubeconfig":                                      whyKubeconfig,
		"authentication-kubeconfig":                       whyKubeconfig,
		"authorization-kubeconfig":                        whyKubeconfig,
		"root-ca-file":                                    whyClusterCA,
		"client-ca-file":                                  whyClusterCA,
		"requestheader-client-ca-file":                    whyFrontProxy,
		"cluster-signing-cert-file":                       whySigner,
		"cluster-signing-key-file":                        whySigner,
		"cluster-signing-kubelet-serving-cert-file":       whySigner,
		"cluster-signing-kubelet-serving-key-file":        whySigner,
		"cluster-signing-kubelet-client-cert-file":        whySigner,
		"cluster-signing-kubelet-client-key-file":         whySigner,
		"cluster-signing-kube-apiserver-client-cert-file": whySigner,
		"cluster-signing-kube-apiserver-client-key-file":  whySigner,
		"cluster-signing-legacy-unknown-cert-file":        whySigner,
		"cluster-signing-legacy-unknown-key-file":         whySigner,
		"cluster-cidr":                                    "it is set from spec.clusterNetwork.podCIDR",
		"service-cluster-ip-range":                        whyServiceRange,
		"leader-elect":                                    whyLeaderElect,
		"tls-cert-file":                                   whyOwnCert,
		"tls-private-key-file":                            whyOwnCert,
		"secure-port":                                     whySecurePort,
		"bind-address":                                    whyBindAddress,
	},
	v1alpha1.ComponentScheduler: {
		"profiling":                 whyIgnoredWithConfig,
		"contention-profiling":      whyIgnoredWithConfig,
		"kube-api-content-type":     whyIgnoredWithConfig,
		"kube-api-qps":              whyIgnoredWithConfig,
		"kube-api-burst":            whyIgnoredWithConfig,
		"kubeconfig":                whyKubeconfig,
		"authentication-kubeconfig": whyKubeconfig,
		"authorization-kubeconfig":  whyKubeconfig,
		"leader-elect":              whyLeaderElect,
		"config":                    "capn generates the scheduler's configuration file",
		"secure-port":               whySecurePort,
		"bind-address":              whyBindAddress,
		"tls-cert-file":             whyOwnCert,
		"tls-private-key-file":      whyOwnCert,
	},
	// Everything that scopes the syncer is the provider's: a tenant that
	// could point it at another namespace, widen its node selector or
	// tolerations, or lower the Pod Security level would escape its
	// workload namespace. Left to the tenant: -v, workers, qps and burst.
	v1alpha1.ComponentSyncer: {
		cmdsyncer.FlagTenantKubeconfig:          whyKubeconfig,
		cmdsyncer.FlagHostKubeconfig:            "the syncer reaches the management cluster with its own ServiceAccount only",
		cmdsyncer.FlagWorkloadNamespace:         whySyncerScope,
		cmdsyncer.FlagTenantAPIServerAddress:    "it is the tenant apiserver's Service address capn allocates",
		cmdsyncer.FlagTenantNameserver:          "it is the tenant DNS address capn allocates",
		cmdsyncer.FlagDNSAddon:                  "it is set from spec.dns.mode",
		cmdsyncer.FlagDNSImage:                  "it is set from spec.dns.image",
		cmdsyncer.FlagDNSUpstreams:              "it is the provider's --tenant-dns-upstreams: whether tenant DNS queries may leave the cluster",
		cmdsyncer.FlagTenantDNSDomain:           "it is set from spec.clusterNetwork.dnsDomain",
		cmdsyncer.FlagTenantPodSecurity:         whySyncerScope,
		cmdsyncer.FlagHostNodeSelector:          "it is the provider's selector ANDed with spec.dataPlane.nodeSelector",
		cmdsyncer.FlagHostTolerations:           whySyncerScope,
		cmdsyncer.FlagAllowedRuntimeClasses:     whySyncerScope,
		cmdsyncer.FlagMaxTerminationGracePeriod: whySyncerScope,
		cmdsyncer.FlagAllowNetRaw:               whySyncerScope,
		cmdsyncer.FlagLeaderElect:               whyLeaderElect,
		cmdsyncer.FlagLeaderElectNamespace:      whyLeaderElect,
		cmdsyncer.FlagHealthAddress:             "capn's probes read it",
		cmdsyncer.FlagWebhookBindAddress:        whySyncerWebhook,
		cmdsyncer.FlagWebhookAdvertiseAddress:   whySyncerWebhook,
		cmdsyncer.FlagKubeletBindAddress:        whySyncerWebhook,
		cmdsyncer.FlagKubeletAdvertiseAddress:   whySyncerWebhook,
	},
}

// whySyncerWebhook: the tenant apiserver calls the syncer's Service
// webhook at the pod address capn sets, and the NetworkPolicy admits
// exactly that port.
const whySyncerWebhook = "capn sets where the tenant apiserver calls the syncer (its Service webhook and the virtual Nodes' kubelet API)"

// OwnedFlag reports whether flag (without leading dashes) is set by capn for
// component ("kube-apiserver", "kube-controller-manager", "kube-scheduler"),
// and why.
func OwnedFlag(component, flag string) (reason string, owned bool) {
	if reason, owned := OwnedFlags[component][flag]; owned {
		return reason, true
	}
	// A prefix rather than a list: every service-account-* flag (keys,
	// issuer, token lifetimes) must agree between the two components and
	// with the keys capn generates, and new ones appear across releases.
	if (component == v1alpha1.ComponentAPIServer || component == v1alpha1.ComponentControllerManager) &&
		strings.HasPrefix(flag, "service-account-") {
		return whyServiceAcct, true
	}
	return "", false
}
