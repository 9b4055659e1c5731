package validation

import (
	"encoding/csv"
	"fmt"
	"slices"
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
		"admission-control-config-file":      "capn's admission config gives webhooks the apiserver's client certificate, which capn-syncer's Service webhook requires",
		"endpoint-reconciler-type":           "in Shared data-plane mode the tenant's kubernetes Service would otherwise publish the tenant apiserver's pod IP behind an IP that is the management cluster's own kubernetes Service",
		"token-auth-file":                    "static token files are not supported: the file would live in capn's pod",
		"etcd-servers-overrides":             "it would store resources in an etcd other than the one capn wires kube-apiserver to",
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
		cmdsyncer.FlagPullAlways:                whySyncerScope,
		cmdsyncer.FlagCachedImages:              whySyncerScope,
		cmdsyncer.FlagMaxEmptyDirSize:           whySyncerScope,
		cmdsyncer.FlagMaxCopiedBytes:            whySyncerScope,
		cmdsyncer.FlagLeaderElect:               whyLeaderElect,
		cmdsyncer.FlagLeaderElectNamespace:      whyLeaderElect,
		cmdsyncer.FlagHealthAddress:             "capn's probes read it",
		cmdsyncer.FlagWebhookBindAddress:        whySyncerWebhook,
		cmdsyncer.FlagWebhookAdvertiseAddress:   whySyncerWebhook,
		cmdsyncer.FlagWebhookRequireClientCert:  "capn sets it once the tenant apiserver presents its client certificate to webhooks",
		cmdsyncer.FlagKubeletBindAddress:        whySyncerWebhook,
		cmdsyncer.FlagKubeletAdvertiseAddress:   whySyncerWebhook,
		cmdsyncer.FlagMetricsAddon:              "it is set from spec.metrics.mode",
		cmdsyncer.FlagMetricsImage:              "it is set from spec.metrics.image",
		cmdsyncer.FlagKubeletMetricsBindAddress: "capn sets where the tenant's metrics-server scrapes the virtual Nodes, and the syncer's NetworkPolicy admits exactly that port",
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

// nodeRestriction is the admission plugin weakeningValue keeps on.
const nodeRestriction = "NodeRestriction"

// serviceAccountTokens are the names kube-controller-manager's
// --controllers knows the token controller by: its canonical name and
// the alias it had before controller names ended in -controller.
var serviceAccountTokens = []string{"serviceaccount-token-controller", "serviceaccount-token"}

// weakeningValue reports why value, given to flag of component through
// extraArgs, weakens the tenant's own control plane, for flags a tenant
// may set but not to every value. The components parse these flags as
// CSV (pflag's string slices), quotes and all, and so does this: a list
// it cannot read is refused rather than guessed at.
func weakeningValue(component, flag, value string) (reason string, weakens bool) {
	var list func([]string) (string, bool)
	switch {
	case component == v1alpha1.ComponentAPIServer && flag == "disable-admission-plugins":
		list = func(plugins []string) (string, bool) {
			return "must not name " + nodeRestriction + ": it confines each node, and each join token's holder, to its own Node and pods",
				slices.Contains(plugins, nodeRestriction)
		}
	case component == v1alpha1.ComponentAPIServer && flag == "enable-admission-plugins":
		// Replaces capn's value, and NodeRestriction is not on by default.
		list = func(plugins []string) (string, bool) {
			return "must name " + nodeRestriction + ", which is not enabled by default: it confines each node, and each join token's holder, to its own Node and pods",
				!slices.Contains(plugins, nodeRestriction)
		}
	case component == v1alpha1.ComponentControllerManager && flag == "controllers":
		list = func(controllers []string) (string, bool) {
			return "must not disable " + serviceAccountTokens[0] + ": it fills ServiceAccount token Secrets and removes those of deleted ServiceAccounts",
				!controllerEnabled(serviceAccountTokens, controllers)
		}
	default:
		return "", false
	}
	items, err := readCSV(value)
	if err != nil {
		return fmt.Sprintf("must be a comma-separated list: %v", err), true
	}
	return list(items)
}

// readCSV is how pflag reads a string-slice flag.
func readCSV(value string) ([]string, error) {
	if value == "" {
		return nil, nil
	}
	return csv.NewReader(strings.NewReader(value)).Read()
}

// controllerEnabled is kube-controller-manager's reading of --controllers
// for a controller on by default, known by any of names: the first
// mention wins, else "*".
func controllerEnabled(names []string, controllers []string) bool {
	for _, c := range controllers {
		if slices.Contains(names, strings.TrimPrefix(c, "-")) {
			return !strings.HasPrefix(c, "-")
		}
	}
	return slices.Contains(controllers, "*")
}
