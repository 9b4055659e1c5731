package validation

import (
	"strings"
	"testing"
)

func TestOwnedFlag(t *testing.T) {
	// The flags the control plane cannot work without capn's value for;
	// a regression here is a tenant able to rewire its own control plane.
	mustOwn := map[string][]string{
		componentAPIServer: {
			"etcd-servers", "etcd-cafile", "etcd-certfile", "etcd-keyfile", "etcd-prefix",
			"tls-cert-file", "tls-private-key-file", "client-ca-file",
			"kubelet-client-certificate", "kubelet-client-key",
			"proxy-client-cert-file", "proxy-client-key-file",
			"requestheader-client-ca-file", "requestheader-allowed-names",
			"service-account-key-file", "service-account-signing-key-file", "service-account-issuer",
			"service-cluster-ip-range", "secure-port", "bind-address", "cert-dir",
			"authorization-mode", "anonymous-auth", "token-auth-file",
		},
		componentControllerManager: {
			"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "root-ca-file",
			"service-account-private-key-file", "cluster-signing-cert-file", "cluster-signing-key-file",
			"cluster-cidr", "service-cluster-ip-range", "leader-elect",
			"tls-cert-file", "tls-private-key-file", "secure-port", "bind-address",
		},
		componentScheduler: {
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
		{componentAPIServer, "etcd-servers", true, "it wires kube-apiserver to its etcd"},
		{componentAPIServer, "service-account-max-token-expiration", true, "service account"},
		{componentControllerManager, "service-account-anything", true, "service account"},
		{componentScheduler, "service-account-anything", false, ""},
		{componentAPIServer, "audit-log-path", false, ""},
		{componentAPIServer, "v", false, ""},
		{componentAPIServer, "leader-elect", false, ""},
		{componentControllerManager, "use-service-account-credentials", false, ""},
		{componentControllerManager, "cluster-signing-duration", false, ""},
		{componentControllerManager, "cluster-signing-kubelet-client-key-file", true, ""},
		{componentScheduler, "leader-elect", true, "replicas > 1"},
		{componentScheduler, "etcd-servers", false, ""},
		{"etcd", "etcd-servers", false, ""},
	}
	for _, tc := range cases {
		reason, owned := OwnedFlag(tc.component, tc.flag)
		if owned != tc.owned || !strings.Contains(reason, tc.reason) {
			t.Errorf("OwnedFlag(%q, %q) = %q, %v; want owned=%v reason ~ %q", tc.component, tc.flag, reason, owned, tc.owned, tc.reason)
		}
	}
}
