package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPlacementFlags(t *testing.T) {
	o := parse(t, "--control-plane-node-selector=pool=control-planes",
		"--control-plane-tolerations=dedicated=capn:NoSchedule,maintenance",
		"--control-plane-priority-class=capn-tenants")
	pl, err := o.Placement.Placement()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"pool": "control-planes"}, pl.NodeSelector)
	assert.Equal(t, []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "capn", Effect: corev1.TaintEffectNoSchedule},
		{Key: "maintenance", Operator: corev1.TolerationOpExists},
	}, pl.Tolerations)
	assert.Equal(t, "capn-tenants", pl.PriorityClassName)

	for _, bad := range [][]string{
		{"--control-plane-tolerations=dedicated:Sometimes"},
		{"--control-plane-tolerations=bad key"},
		{"--control-plane-node-selector=pool=not a value"},
		{"--control-plane-priority-class=Not_DNS"},
	} {
		o := parse(t, bad...)
		_, err := o.Placement.Placement()
		assert.Error(t, err, "%v", bad)
	}
}

func TestRequestFloorFlags(t *testing.T) {
	o := parse(t, "--control-plane-cpu-request-floor=kube-apiserver=100m,etcd=50m",
		"--control-plane-memory-request-floor=kube-apiserver=512Mi")
	pl, err := o.Placement.Placement()
	require.NoError(t, err)
	assert.Equal(t, map[string]corev1.ResourceList{
		"kube-apiserver": {corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		"etcd":           {corev1.ResourceCPU: resource.MustParse("50m")},
	}, pl.RequestFloor)

	for bad, want := range map[string]string{
		"--control-plane-cpu-request-floor=kube-proxy=100m":      `unknown component "kube-proxy"`,
		"--control-plane-cpu-request-floor=etcd=lots":            "not a non-negative quantity",
		"--control-plane-memory-request-floor=etcd=-1Mi":         "not a non-negative quantity",
		"--control-plane-cpu-request-floor=kube-apiserver=10000": "above the cpu any container may request",
	} {
		o := parse(t, bad)
		_, err := o.Placement.Placement()
		assert.ErrorContains(t, err, want, bad)
	}
}

func TestProvisionerClientFlags(t *testing.T) {
	o := parse(t)
	assert.Equal(t, float32(DefaultManagementQPS), o.ManagementQPS)
	assert.Equal(t, DefaultProvisionerWorkers, o.Workers)
	o = parse(t, "--management-qps=200", "--management-burst=400", "--provisioner-workers=8")
	assert.Equal(t, float32(200), o.ManagementQPS)
	assert.Equal(t, 400, o.ManagementBurst)
	assert.Equal(t, 8, o.Workers)
	o = parse(t, "--provisioner-workers=0")
	assert.ErrorContains(t, o.Validate(), "--provisioner-workers must be positive")
}

func TestRenewalThresholdBelowLeafLifetime(t *testing.T) {
	o := parse(t, "--cert-renewal-threshold=8760h")
	assert.ErrorContains(t, o.Validate(), "--cert-renewal-threshold must be shorter than the certificates' lifetime")
	o = parse(t, "--cert-renewal-threshold=8759h")
	err := o.Validate()
	if err != nil {
		assert.NotContains(t, err.Error(), "--cert-renewal-threshold")
	}
}

func TestShutdownDelayFlag(t *testing.T) {
	assert.Zero(t, parse(t).ShutdownDelay, "one replica has nobody to hand over to")
	assert.Equal(t, 10*time.Second, parse(t, "--shutdown-delay-duration=10s").ShutdownDelay)
	assert.ErrorContains(t, parse(t, "--shutdown-delay-duration=-1s").Validate(), "--shutdown-delay-duration must not be negative")
}

func TestDefaultSleepAfterInactivityFlag(t *testing.T) {
	assert.Zero(t, parse(t).DefaultSleepAfterInactivity, "off by default")
	o := parse(t, "--default-sleep-after-inactivity=15m")
	assert.Equal(t, 15*time.Minute, o.DefaultSleepAfterInactivity)
	o = parse(t, "--default-sleep-after-inactivity=10s")
	assert.ErrorContains(t, o.Validate(), "--default-sleep-after-inactivity must be 0 or at least 30s")
}
