package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
)

func valid() options {
	return options{tenantKubeconfig: "k", workloadNamespace: "w", apiServer: "10.96.0.5:6443", nameserver: "10.96.0.10",
		podSecurity: "restricted", tolerations: "kwok.x-k8s.io/node=fake:NoSchedule, dedicated", runtimeClasses: "runc,,gvisor"}
}

func TestSyncerOptions(t *testing.T) {
	so, err := valid().syncerOptions()
	require.NoError(t, err)
	assert.Equal(t, "10.96.0.5", so.Pod.APIServerHost)
	assert.Equal(t, int32(6443), so.Pod.APIServerPort)
	assert.Equal(t, api.LevelRestricted, so.Pod.Level)
	assert.Equal(t, []string{"runc", "gvisor"}, so.Pod.RuntimeClasses)
	assert.Equal(t, []corev1.Toleration{
		{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Operator: corev1.TolerationOpExists},
	}, so.HostTolerations)
	assert.False(t, so.DNS.Enabled)

	o := valid()
	o.dnsAddon, o.dnsImage, o.dnsUpstreams, o.dnsDomain = true, "registry.example/coredns:v1", "10.0.0.53", "cluster.local"
	so, err = o.syncerOptions()
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.53"}, so.DNS.Upstreams)
	assert.True(t, so.DNS.Enabled)
}

func TestSyncerOptionsRefused(t *testing.T) {
	for name, mutate := range map[string]func(*options){
		"privileged level":  func(o *options) { o.podSecurity = "privileged" },
		"unknown level":     func(o *options) { o.podSecurity = "lax" },
		"no namespace":      func(o *options) { o.workloadNamespace = "" },
		"address sans port": func(o *options) { o.apiServer = "10.96.0.5" },
		"port out of range": func(o *options) { o.apiServer = "10.96.0.5:70000" },
		"nameserver name":   func(o *options) { o.nameserver = "dns.example.com" },
		"bad toleration":    func(o *options) { o.tolerations = "a:Sometimes" },
		"bad selector":      func(o *options) { o.nodeSelector = "a in (" },
		"dns upstream name": func(o *options) { o.dnsAddon, o.dnsImage, o.dnsUpstreams = true, "i", "dns.google" },
		"dns no image":      func(o *options) { o.dnsAddon, o.dnsImage = true, "" },
	} {
		t.Run(name, func(t *testing.T) {
			o := valid()
			mutate(&o)
			_, err := o.syncerOptions()
			assert.Error(t, err)
		})
	}
}
