package validation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	cmdsyncer "capn.dev/capn/pkg/cmd/syncer"
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
		{v1alpha1.ComponentSyncer, cmdsyncer.FlagAllowNetRaw, true, "provider setting"},
		{v1alpha1.ComponentSyncer, cmdsyncer.FlagMaxEmptyDirSize, true, "provider setting"},
		{v1alpha1.ComponentSyncer, cmdsyncer.FlagMaxCopiedBytes, true, "provider setting"},
	}
	for _, tc := range cases {
		reason, owned := OwnedFlag(tc.component, tc.flag)
		if owned != tc.owned || !strings.Contains(reason, tc.reason) {
			t.Errorf("OwnedFlag(%q, %q) = %q, %v; want owned=%v reason ~ %q", tc.component, tc.flag, reason, owned, tc.owned, tc.reason)
		}
	}
}

// extraArgsOf returns the extraArgs map of component in nc.
func extraArgsOf(nc *capn.NestedCluster, component string) *map[string]string {
	switch component {
	case v1alpha1.ComponentAPIServer:
		return &nc.Spec.APIServer.ExtraArgs
	case v1alpha1.ComponentControllerManager:
		return &nc.Spec.ControllerManager.ExtraArgs
	}
	panic("no extraArgs for " + component)
}

// Flags a tenant may set, but not to a value that weakens its own control
// plane: refused on create and when changed, kept when an update leaves
// them as stored (ratcheting), so that stored clusters stay editable.
func TestExtraArgsThatWeakenTheControlPlane(t *testing.T) {
	const (
		api = v1alpha1.ComponentAPIServer
		kcm = v1alpha1.ComponentControllerManager
	)
	cases := []struct {
		name, component, flag, value string
		// reason is a substring of the refusal; empty: allowed.
		reason string
	}{
		{"etcd-servers-overrides", api, "etcd-servers-overrides", "/events#http://evil:2379", "managed by capn"},
		{"disabling NodeRestriction", api, "disable-admission-plugins", "AlwaysAdmit,NodeRestriction", "must not name NodeRestriction"},
		{"disabling NodeRestriction, quoted", api, "disable-admission-plugins", `"NodeRestriction"`, "must not name NodeRestriction"},
		{"disabling another plugin", api, "disable-admission-plugins", "DefaultStorageClass", ""},
		{"enabling plugins without NodeRestriction", api, "enable-admission-plugins", "AlwaysPullImages", "must name NodeRestriction"},
		{"enabling plugins with NodeRestriction", api, "enable-admission-plugins", "NodeRestriction,AlwaysPullImages", ""},
		{"not a list", api, "disable-admission-plugins", `"NodeRestriction`, "must be a comma-separated list"},
		{"controllers disabling the token controller", kcm, "controllers", "*,-serviceaccount-token", "must not disable serviceaccount-token-controller"},
		{"controllers disabling it by its canonical name", kcm, "controllers", "*,-serviceaccount-token-controller", "must not disable"},
		{"controllers without * nor the token controller", kcm, "controllers", "bootstrap-signer-controller", "must not disable"},
		{"controllers naming it before disabling it", kcm, "controllers", "serviceaccount-token,-serviceaccount-token", ""},
		{"controllers disabling another", kcm, "controllers", "*,-nodeipam", ""},
		{"controllers naming it without *", kcm, "controllers", "serviceaccount-token-controller,garbage-collector-controller", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := field.NewPath("spec").Child(map[string]string{api: "apiServer", kcm: "controllerManager"}[tc.component]).
				Child("extraArgs").Key(tc.flag).String()
			nc := validNC(t)
			*extraArgsOf(nc, tc.component) = map[string]string{tc.flag: tc.value}
			errs := ValidateNestedCluster(nc)
			if tc.reason == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, "create: %v", errs)
			assert.Equal(t, path, errs[0].Field)
			assert.Contains(t, errs[0].Detail, tc.reason)

			// Stored before the rule: an update that changes another flag
			// and leaves this one as it is passes.
			old := nc.DeepCopy()
			untouched := old.DeepCopy()
			(*extraArgsOf(untouched, tc.component))["v"] = "4"
			assert.Empty(t, ValidateNestedClusterUpdate(untouched, old), "update leaving it unchanged")

			// An update that changes it to another weakening value (one
			// more list item; for kcm, the token controller disabled
			// first) is validated in full.
			changed := old.DeepCopy()
			(*extraArgsOf(changed, tc.component))[tc.flag] = tc.value + ","
			if tc.component == kcm {
				(*extraArgsOf(changed, tc.component))[tc.flag] = "-serviceaccount-token," + tc.value
			}
			errs = ValidateNestedClusterUpdate(changed, old)
			require.NotEmpty(t, errs, "update changing it")
			assert.Equal(t, path, errs[0].Field)
		})
	}
}
