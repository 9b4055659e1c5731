package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
)

func valid() *options {
	return &options{TenantKubeconfig: "k", WorkloadNamespace: "w", TenantAPIServerAddress: "10.96.0.5:6443", TenantNameserver: "10.96.0.10",
		TenantPodSecurity: "restricted", HostTolerations: "kwok.x-k8s.io/node=fake:NoSchedule, dedicated", AllowedRuntimeClasses: "runc,,gvisor",
		MaxEmptyDirSize: "2Gi", MaxCopiedBytes: "32Mi"}
}

func TestSyncerOptions(t *testing.T) {
	so, err := syncerOptions(valid())
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
	assert.False(t, so.Pod.AllowNetRaw, "NET_RAW is dropped unless the provider allows it")
	assert.Equal(t, "2Gi", so.Pod.MaxEmptyDirSize.String())
	assert.Equal(t, "32Mi", so.MaxCopiedBytes.String())

	o := valid()
	o.DNSAddon, o.DNSImage, o.DNSUpstreams, o.TenantDNSDomain = true, "registry.example/coredns:v1", "10.0.0.53", "cluster.local"
	so, err = syncerOptions(o)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.53"}, so.DNS.Upstreams)
	assert.True(t, so.DNS.Enabled)

	o = valid()
	o.MetricsAddon, o.KubeletAdvertiseAddress = true, "10.0.0.9:10250"
	o.MetricsImage, o.KubeletMetricsBindAddress = "registry.example/metrics-server:v1", ":10272"
	so, err = syncerOptions(o)
	require.NoError(t, err)
	assert.True(t, so.Metrics.Enabled)
	assert.Contains(t, so.Pod.CachedImages, o.MetricsImage, "the provider's addon image runs from the node's cache")

	o = valid()
	o.AllowNetRaw = true
	so, err = syncerOptions(o)
	require.NoError(t, err)
	assert.True(t, so.Pod.AllowNetRaw)
}

func TestSyncerOptionsRefused(t *testing.T) {
	for name, mutate := range map[string]func(*options){
		"privileged level":  func(o *options) { o.TenantPodSecurity = "privileged" },
		"unknown level":     func(o *options) { o.TenantPodSecurity = "lax" },
		"no namespace":      func(o *options) { o.WorkloadNamespace = "" },
		"address sans port": func(o *options) { o.TenantAPIServerAddress = "10.96.0.5" },
		"port out of range": func(o *options) { o.TenantAPIServerAddress = "10.96.0.5:70000" },
		"nameserver name":   func(o *options) { o.TenantNameserver = "dns.example.com" },
		"bad toleration":    func(o *options) { o.HostTolerations = "a:Sometimes" },
		"bad selector":      func(o *options) { o.HostNodeSelector = "a in (" },
		"dns upstream name": func(o *options) { o.DNSAddon, o.DNSImage, o.DNSUpstreams = true, "i", "dns.google" },
		"dns no image":      func(o *options) { o.DNSAddon, o.DNSImage = true, "" },
		"emptyDir bound":    func(o *options) { o.MaxEmptyDirSize = "lots" },
		"emptyDir zero":     func(o *options) { o.MaxEmptyDirSize = "0" },
		"copied bytes":      func(o *options) { o.MaxCopiedBytes = "-1" },
		"metrics without a kubelet address": func(o *options) {
			o.MetricsAddon, o.KubeletAdvertiseAddress = true, ""
		},
		"metrics bind address": func(o *options) {
			o.MetricsAddon, o.KubeletAdvertiseAddress, o.KubeletMetricsBindAddress = true, "10.0.0.9:10250", ":metrics"
		},
		"metrics no image": func(o *options) {
			o.MetricsAddon, o.KubeletAdvertiseAddress, o.MetricsImage, o.KubeletMetricsBindAddress = true, "10.0.0.9:10250", "", ":10272"
		},
	} {
		t.Run(name, func(t *testing.T) {
			o := valid()
			mutate(o)
			_, err := syncerOptions(o)
			assert.Error(t, err)
		})
	}
}
