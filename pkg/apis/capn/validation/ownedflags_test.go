package validation

import (
	"strings"
	"testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func TestOwnedFlag(t *testing.T) {
	// The flags the control plane cannot work without capn's value for;
	// a regression here is a tenant able to rewire its own control plane.
	mustOwn := map[string][]string{
		v1alpha1.ComponentAPIServer: {
			"etcd-servers", "etcd-cafile", "etcd-certfile", "etcd-keyfile", "etcd-prefix",
			"tls-cert-file", "tls-private-key-file", "client-ca-file",
			"kubelet-client-certificate", "kubelet-client-key",
			"proxy-client-cert-file", "proxy-client-key-file",
			"requestheader-client-ca-file", "requestheader-allowed-names",
			"service-account-key-file", "service-account-signing-key-file", "service-account-issuer",
			"service-cluster-ip-range", "secure-port", "bind-address", "cert-dir",
			"authorization-mode", "anonymous-auth", "token-auth-file",
		},
		v1alpha1.ComponentControllerManager: {
			"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "root-ca-file",
			"service-account-private-key-file", "cluster-signing-cert-file", "cluster-signing-key-file",
			"cluster-cidr", "service-cluster-ip-range", "leader-elect",
			"tls-cert-file", "tls-private-key-file", "secure-port", "bind-address",
		},
		v1alpha1.ComponentScheduler: {
			"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "leader-elect",
			"config", "secure-port", "bind-address", "tls-cert-file", "tls-private-key-file",
		},
	}
	for component, flags := range mustOwn {
		for _, flag := range flags {
			reason, owned := OwnedFlag(component, flag)
			if !owned || reason == "" {
				t.Errorf("OwnedFlag(%q, %q) = %q, %v; want owned with a reason", component, flag, reason, owned)
			}
		}
	}
	for component, flags := range OwnedFlags {
		for flag, reason := range flags {
			if strings.TrimSpace(reason) == "" {
				t.Errorf("OwnedFlags[%q][%q] has no reason", component, flag)
			}
			if strings.HasPrefix(flag, "-") || strings.Contains(flag, "=") {
				t.Errorf("OwnedFlags[%q][%q]: keys are bare flag names", component, flag)
			}
		}
	}

	cases := []struct {
		component, flag string
		owned           bool
		reason          string
	}{
		{v1alpha1.ComponentAPIServer, "etcd-servers", true, "it wires kube-apiserver to its etcd"},
		{v1alpha1.ComponentAPIServer, "service-account-max-token-expiration", true, "service account"},
		{v1alpha1.ComponentControllerManager, "service-account-anything", true, "service account"},
		{v1alpha1.ComponentScheduler, "service-account-anything", false, ""},
		{v1alpha1.ComponentAPIServer, "audit-log-path", false, ""},
		{v1alpha1.ComponentAPIServer, "v", false, ""},
		{v1alpha1.ComponentAPIServer, "leader-elect", false, ""},
		{v1alpha1.ComponentControllerManager, "use-service-account-credentials", false, ""},
		{v1alpha1.ComponentControllerManager, "cluster-signing-duration", false, ""},
		{v1alpha1.ComponentControllerManager, "cluster-signing-kubelet-client-key-file", true, ""},
		{v1alpha1.ComponentScheduler, "leader-elect", true, "replicas > 1"},
		{v1alpha1.ComponentScheduler, "etcd-servers", false, ""},
		{"etcd", "etcd-servers", false, ""},
		{v1alpha1.ComponentSyncer, "allow-net-raw", true, "provider setting"},
	}
	for _, tc := range cases {
		reason, owned := OwnedFlag(tc.component, tc.flag)
		if owned != tc.owned || !strings.Contains(reason, tc.reason) {
			t.Errorf("OwnedFlag(%q, %q) = %q, %v; want owned=%v reason ~ %q", tc.component, tc.flag, reason, owned, tc.owned, tc.reason)
		}
	}
}
