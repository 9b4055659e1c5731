package translate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s}
}

func find(t *testing.T, conds []corev1.PodCondition, typ corev1.PodConditionType) corev1.PodCondition {
	t.Helper()
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	require.Failf(t, "condition missing", "%s", typ)
	return corev1.PodCondition{}
}

func hostRunning() *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{
		Phase:  corev1.PodRunning,
		PodIP:  "10.88.0.7",
		PodIPs: []corev1.PodIP{{IP: "10.88.0.7"}},
		HostIP: "192.0.2.10",
		Conditions: []corev1.PodCondition{
			cond(corev1.PodScheduled, corev1.ConditionTrue), // the host scheduler's, not the tenant's
			cond(corev1.PodInitialized, corev1.ConditionTrue),
			cond(corev1.ContainersReady, corev1.ConditionTrue),
			cond(corev1.PodReady, corev1.ConditionTrue),
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true}},
	}}
}

func TestStatusKeepsTheTenantsReadinessGates(t *testing.T) {
	tenant := &corev1.Pod{
		Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, Reason: "tenant-scheduler"},
			cond("example.com/lb", corev1.ConditionFalse),
		}},
	}
	got := Status(tenant, hostRunning())
	assert.Equal(t, corev1.PodRunning, got.Phase)
	assert.Equal(t, "10.88.0.7", got.PodIP)
	assert.Equal(t, "192.0.2.10", got.HostIP)
	assert.Equal(t, corev1.ConditionFalse, find(t, got.Conditions, "example.com/lb").Status, "the up-sync must not drop or overwrite the tenant's gate")
	assert.Equal(t, "tenant-scheduler", find(t, got.Conditions, corev1.PodScheduled).Reason, "PodScheduled is the tenant scheduler's")
	ready := find(t, got.Conditions, corev1.PodReady)
	assert.Equal(t, corev1.ConditionFalse, ready.Status, "a gate not True keeps the tenant pod unready, however ready the host pod is")
	assert.Equal(t, ReasonReadinessGatesNotReady, ready.Reason)
	assert.Contains(t, ready.Message, "example.com/lb")

	// The gate's controller sets it True: Ready follows the host.
	tenant.Status.Conditions[1].Status = corev1.ConditionTrue
	got = Status(tenant, hostRunning())
	assert.Equal(t, corev1.ConditionTrue, find(t, got.Conditions, corev1.PodReady).Status)
	assert.Equal(t, corev1.ConditionTrue, find(t, got.Conditions, "example.com/lb").Status)
}

func TestStatusWithoutGatesIsTheHosts(t *testing.T) {
	tenant := &corev1.Pod{Status: corev1.PodStatus{ObservedGeneration: 3, Conditions: []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue)}}}
	host := hostRunning()
	host.Status.ObservedGeneration = 1
	got := Status(tenant, host)
	assert.Equal(t, int64(3), got.ObservedGeneration)
	assert.Len(t, got.Conditions, 4)
	assert.Equal(t, corev1.ConditionTrue, find(t, got.Conditions, corev1.PodReady).Status)
	assert.Equal(t, host.Status.ContainerStatuses, got.ContainerStatuses)
}

func TestStatusGateMissingKeepsTransitionTime(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tenant := &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "g"}}}}
	host := hostRunning()
	host.Status.Conditions[3] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonReadinessGatesNotReady, LastTransitionTime: then}
	got := Status(tenant, host)
	assert.Equal(t, then, find(t, got.Conditions, corev1.PodReady).LastTransitionTime, "an unchanged Ready=False must not get a new transition time every sync (that would be a write every sync)")
}

func TestStatusGateUnchangedIsNotRewritten(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tenant := &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "g"}}}}
	tenant.Status = Status(tenant, hostRunning())
	for i := range tenant.Status.Conditions {
		if tenant.Status.Conditions[i].Type == corev1.PodReady {
			tenant.Status.Conditions[i].LastTransitionTime = then
		}
	}
	again := Status(tenant, hostRunning())
	assert.Equal(t, then, find(t, again.Conditions, corev1.PodReady).LastTransitionTime,
		"the host pod stays Ready=True while the gate is False: the tenant's Ready=False must keep its time")
}

func TestTokenRefreshAt(t *testing.T) {
	issued := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, issued.Add(48*time.Minute), TokenRefreshAt(issued, issued.Add(time.Hour)))
	assert.Equal(t, issued.Add(8*time.Minute), TokenRefreshAt(issued, issued.Add(10*time.Minute)))
	assert.Equal(t, issued, TokenRefreshAt(issued, issued.Add(-time.Second)), "an expired or malformed token is due at once")
	assert.Equal(t, int64(3600), TokenExpirationSeconds(3607), "the kubelet's default would be extended to a year")
	assert.Equal(t, int64(600), TokenExpirationSeconds(600))
}

// The host pod is Burstable where the workload namespace's LimitRange
// filled in requests; the tenant pod stays BestEffort (immutable there).
func TestStatusKeepsTheTenantsQOSClass(t *testing.T) {
	tenant := &corev1.Pod{Status: corev1.PodStatus{QOSClass: corev1.PodQOSBestEffort, NominatedNodeName: "vn-1"}}
	host := hostRunning()
	host.Status.QOSClass = corev1.PodQOSBurstable
	host.Status.NominatedNodeName = "host-node-7"
	got := Status(tenant, host)
	assert.Equal(t, corev1.PodQOSBestEffort, got.QOSClass)
	assert.Equal(t, "vn-1", got.NominatedNodeName)
}

func TestStatusHidesImagePullMessages(t *testing.T) {
	tenant := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "registry.example/init:v1"}},
		Containers:     []corev1.Container{{Name: "web", Image: "registry.example/web:v2"}, {Name: "app", Image: "registry.example/app:v1"}},
	}}
	waiting := func(name, reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	host := &corev1.Pod{Status: corev1.PodStatus{
		Phase:                 corev1.PodPending,
		InitContainerStatuses: []corev1.ContainerStatus{waiting("init", "ImagePullBackOff", `Back-off pulling image "registry.example/init:v1": ErrImagePull: `+hostPullError)},
		ContainerStatuses: []corev1.ContainerStatus{
			waiting("web", "ErrImagePull", hostPullError),
			waiting("app", "CreateContainerConfigError", `secret "db" not found`),
		},
	}}
	got := Status(tenant, host)
	assert.Equal(t, `Back-off pulling image "registry.example/init:v1": see the reason; the registry's answer is not shown`, got.InitContainerStatuses[0].State.Waiting.Message)
	assert.Equal(t, "ImagePullBackOff", got.InitContainerStatuses[0].State.Waiting.Reason)
	assert.Equal(t, `Failed to pull image "registry.example/web:v2": see the reason; the registry's answer is not shown`, got.ContainerStatuses[0].State.Waiting.Message)
	assert.Equal(t, `secret "db" not found`, got.ContainerStatuses[1].State.Waiting.Message, "other waiting reasons keep their message")
	assert.Contains(t, host.Status.ContainerStatuses[0].State.Waiting.Message, "10.0.0.1", "the host pod's status is not changed in place")
}
