package translate

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/tenant/names"
)

const eventWorkloads = "capn-team-a-demo-w-0f3c"

// eventPods are a tenant pod and its host pod, as the syncer makes them.
func eventPods() (host, tenant *corev1.Pod) {
	tenant = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "tenant-uid"},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.example/web:v2",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db-password"}}}},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}},
		},
	}
	host = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: eventWorkloads, Name: names.Host("shop", "web-0"), UID: "host-uid",
		Labels:      HostLabels("shop", "tenant-uid"),
		Annotations: map[string]string{names.TenantNameAnnotation: "web-0"},
	}}
	return host, tenant
}

func hostEvent(host *corev1.Pod, typ, reason, message string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: host.Name + ".1", UID: "event-uid"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: host.Namespace, Name: host.Name, UID: host.UID,
			FieldPath: "spec.containers{web}"},
		Type: typ, Reason: reason, Message: message,
	}
}

func TestMirrorEventRewritesHostNames(t *testing.T) {
	host, tenant := eventPods()
	cm := names.Host("shop", "web-config")
	for name, tc := range map[string]struct{ reason, typ, in, want string }{
		"image pull, in capn's words": {"Failed", corev1.EventTypeWarning,
			`Failed to pull image "registry.example/web:v2": not found`,
			`Failed to pull image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"pull back-off is Normal": {"BackOff", corev1.EventTypeNormal,
			`Back-off pulling image "registry.example/web:v2"`,
			`Back-off pulling image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"configmap copy": {"FailedMount", corev1.EventTypeWarning,
			`MountVolume.SetUp failed for volume "config" : configmap "` + cm + `" not found`,
			`MountVolume.SetUp failed for volume "config" : configmap "web-config" not found`},
		"secret copy": {"Failed", corev1.EventTypeWarning,
			`Error: secret "` + names.Host("shop", "db-password") + `" not found`,
			`Error: secret "db-password" not found`},
		"namespace/name, sandbox name and UID": {"FailedCreatePodSandBox", corev1.EventTypeWarning,
			`Failed to create pod sandbox: pod ` + eventWorkloads + `/` + host.Name + `: name "` + host.Name + `_` + eventWorkloads + `_host-uid_0" is reserved`,
			`Failed to create pod sandbox: pod shop/web-0: name "web-0_shop_tenant-uid_0" is reserved`},
		"node names are the tenant's too": {"Evicted", corev1.EventTypeWarning,
			`The node was low on resource: memory. Container web was using 300Mi, request is 0.`,
			`The node was low on resource: memory. Container web was using 300Mi, request is 0.`},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := MirrorEvent(hostEvent(host, tc.typ, tc.reason, tc.in), host, tenant)
			require.True(t, ok)
			assert.Equal(t, TenantEvent{Type: tc.typ, Reason: tc.reason, Message: tc.want, FieldPath: "spec.containers{web}"}, got)
			assert.NotContains(t, got.Message, eventWorkloads)
			assert.NotContains(t, got.Message, "host-uid")
		})
	}
}

func TestMirrorEventSummarizesHostScheduling(t *testing.T) {
	host, tenant := eventPods()
	ev := hostEvent(host, corev1.EventTypeWarning, ReasonFailedScheduling,
		"0/7 nodes are available: 1 Insufficient cpu, 1 Insufficient example.com/gpu, 2 node(s) had untolerated taint {dedicated: gold}, "+
			"3 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/7 nodes are available: 1 Insufficient cpu, 6 Preemption is not helpful for scheduling.")
	ev.InvolvedObject.FieldPath = ""
	got, ok := MirrorEvent(ev, host, tenant)
	require.True(t, ok)
	assert.Equal(t, `the management cluster cannot run the pod on node "node-1" yet: Insufficient cpu, Insufficient example.com/gpu`, got.Message,
		"the provider's node count and taints stay on the host")

	ev.Message = "a format this release does not know, naming " + eventWorkloads
	got, ok = MirrorEvent(ev, host, tenant)
	require.True(t, ok)
	assert.Equal(t, `the management cluster cannot run the pod on node "node-1" yet`, got.Message)
}

func TestMirrorEventRefuses(t *testing.T) {
	for name, mutate := range map[string]func(ev *corev1.Event, host, tenant *corev1.Pod){
		"lifecycle noise":              func(ev *corev1.Event, _, _ *corev1.Pod) { ev.Reason, ev.Type = "Scheduled", corev1.EventTypeNormal },
		"another namespace's object":   func(ev *corev1.Event, _, _ *corev1.Pod) { ev.Reason = "Preempted" },
		"unknown type":                 func(ev *corev1.Event, _, _ *corev1.Pod) { ev.Type = "Critical" },
		"not a pod":                    func(ev *corev1.Event, _, _ *corev1.Pod) { ev.InvolvedObject.Kind = "Node" },
		"another pod":                  func(ev *corev1.Event, _, _ *corev1.Pod) { ev.InvolvedObject.Name = "other" },
		"another namespace":            func(ev *corev1.Event, _, _ *corev1.Pod) { ev.InvolvedObject.Namespace = "kube-system" },
		"an earlier host pod":          func(ev *corev1.Event, _, _ *corev1.Pod) { ev.InvolvedObject.UID = "earlier-host-uid" },
		"no involved UID":              func(ev *corev1.Event, _, _ *corev1.Pod) { ev.InvolvedObject.UID = "" },
		"host pod of an earlier pod":   func(_ *corev1.Event, host, _ *corev1.Pod) { host.Labels[names.TenantUIDLabel] = "earlier-tenant-uid" },
		"host pod without identity":    func(_ *corev1.Event, host, _ *corev1.Pod) { host.Annotations = nil },
		"identity of another pod":      func(_ *corev1.Event, host, _ *corev1.Pod) { host.Annotations[names.TenantNameAnnotation] = "web-1" },
		"identity in another tenantns": func(_ *corev1.Event, host, _ *corev1.Pod) { host.Labels[names.TenantNamespaceLabel] = "other" },
	} {
		t.Run(name, func(t *testing.T) {
			host, tenant := eventPods()
			ev := hostEvent(host, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
			mutate(ev, host, tenant)
			_, ok := MirrorEvent(ev, host, tenant)
			assert.False(t, ok)
		})
	}
}

func TestMirrorEventBoundsTheMessage(t *testing.T) {
	host, tenant := eventPods()
	// The host name is longer than the tenant's: cut after rewriting, so
	// no half host name survives the cut.
	long := strings.Repeat("é", 300) + eventWorkloads + "/" + host.Name + strings.Repeat(" x", 2000)
	got, ok := MirrorEvent(hostEvent(host, corev1.EventTypeWarning, "Failed", long), host, tenant)
	require.True(t, ok)
	assert.LessOrEqual(t, len(got.Message), MaxMessage)
	assert.True(t, strings.HasSuffix(got.Message, "…"))
	assert.Contains(t, got.Message, "shop/web-0")
	assert.NotContains(t, got.Message, "\uFFFD")
	assert.True(t, strings.HasPrefix(got.Message, strings.Repeat("é", 300)), "cut on a rune boundary")
}

func TestEventCountAndLastSeen(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	legacy := &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}, Count: 4, LastTimestamp: metav1.NewTime(t0.Add(time.Minute))}
	assert.Equal(t, int32(4), EventCount(legacy))
	assert.Equal(t, t0.Add(time.Minute), EventLastSeen(legacy))

	series := &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}, EventTime: metav1.NewMicroTime(t0),
		Series: &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(t0.Add(2 * time.Minute))}}
	assert.Equal(t, int32(7), EventCount(series), "events.k8s.io counts in the series")
	assert.Equal(t, t0.Add(2*time.Minute), EventLastSeen(series))

	assert.Equal(t, int32(1), EventCount(&corev1.Event{}), "a new events.k8s.io Event has no count yet")
}

// The node's dial and resolver errors, and the registry's answer, are the
// provider's network seen from the node: they stay on the host.
const hostPullError = `rpc error: code = Unknown desc = failed to pull and unpack image "10.0.0.1:5000/web:v2": ` +
	`failed to resolve reference: Get "https://10.0.0.1:5000/v2/": dial tcp 10.0.0.1:5000: connect: connection refused; ` +
	`lookup registry.internal on 10.1.0.10:53: no such host`

func TestMirrorEventHidesImagePullErrors(t *testing.T) {
	host, tenant := eventPods()
	tenant.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:v1"}}
	for name, tc := range map[string]struct{ reason, fieldPath, in, want string }{
		"failed pull": {"Failed", "spec.containers{web}",
			`Failed to pull image "registry.example/web:v2": ` + hostPullError,
			`Failed to pull image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"init container": {"Failed", "spec.initContainers{init}",
			`Failed to pull image "registry.example/init:v1": ` + hostPullError,
			`Failed to pull image "registry.example/init:v1": see the reason; the registry's answer is not shown`},
		"the image is the tenant's, not the message's": {"Failed", "spec.containers{web}",
			`Failed to pull image "10.0.0.1:5000/web:v2": ` + hostPullError,
			`Failed to pull image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"error name": {"Failed", "spec.containers{web}", `Error: ErrImagePull`,
			`Failed to pull image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"registry unavailable": {"Failed", "spec.containers{web}", `Error: RegistryUnavailable`,
			`Failed to pull image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"back-off with the last error": {"BackOff", "spec.containers{web}",
			`Back-off pulling image "registry.example/web:v2": ErrImagePull: ` + hostPullError,
			`Back-off pulling image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"never pull": {"ErrImageNeverPull", "spec.containers{web}",
			`Container image "registry.example/web:v2" is not present with pull policy of Never`,
			`Not pulling (imagePullPolicy Never) image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"inspect": {"InspectFailed", "spec.containers{web}", `Failed to inspect image "registry.example/web:v2": ` + hostPullError,
			`Failed to inspect image "registry.example/web:v2": see the reason; the registry's answer is not shown`},
		"unknown container": {"Failed", "spec.containers{gone}", `Failed to pull image "x": ` + hostPullError,
			`Failed to pull an image of the pod: see the reason; the registry's answer is not shown`},
	} {
		t.Run(name, func(t *testing.T) {
			ev := hostEvent(host, corev1.EventTypeWarning, tc.reason, tc.in)
			ev.InvolvedObject.FieldPath = tc.fieldPath
			got, ok := MirrorEvent(ev, host, tenant)
			require.True(t, ok)
			assert.Equal(t, TenantEvent{Type: corev1.EventTypeWarning, Reason: tc.reason, Message: tc.want, FieldPath: tc.fieldPath}, got)
			for _, leak := range []string{"10.0.0.1", "dial tcp", "connection refused", "10.1.0.10", "registry.internal"} {
				assert.NotContains(t, got.Message, leak)
			}
		})
	}
}

func TestMirrorEventKeepsOtherFailedAndBackOffMessages(t *testing.T) {
	host, tenant := eventPods()
	for reason, msg := range map[string]string{
		"Failed":  `Error: failed to create containerd task: exec: "/app": permission denied`,
		"BackOff": `Back-off restarting failed container web in pod ` + host.Name + `_` + eventWorkloads,
	} {
		got, ok := MirrorEvent(hostEvent(host, corev1.EventTypeWarning, reason, msg), host, tenant)
		require.True(t, ok)
		assert.Equal(t, tenantNames(host, tenant).Replace(msg), got.Message, reason)
	}
}
