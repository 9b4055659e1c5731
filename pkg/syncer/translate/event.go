package translate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"capn.dev/capn/pkg/tenant/names"
)

// mirroredReasons are the reasons of host Events about a host pod that
// the syncer repeats on its tenant pod: what the host kubelet and scheduler
// (v1.37, k8s.io/kubernetes pkg/kubelet/events and pkg/scheduler) say when
// a pod cannot run, or stops, for reasons the tenant cannot see from its
// own control plane. An allow-list, as for pod fields: a reason Kubernetes
// adds tomorrow is not shown to tenants until it is read and listed here.
//
// Left out on purpose: the lifecycle noise (Scheduled, Pulling, Pulled,
// Created, Started), which the tenant's apiserver would pay for on every
// pod; the scheduler's Preempted, whose message carries the preempting
// pod's UID, another namespace's object the syncer cannot map; and
// OOMKilled, ErrImagePull and ImagePullBackOff, which are container state
// reasons rather than Event reasons and reach the tenant with the status
// up-sync (the kubelet's Event for a failed pull is "Failed", its retry
// "BackOff"; a system OOM is "SystemOOM" on the Node, not on a pod).
var mirroredReasons = map[string]bool{
	// kubelet, containers and images
	"Failed":                   true, // pull, create or start failed ("Failed to pull image ...", "Error: ErrImagePull")
	"BackOff":                  true, // image pull back-off, CrashLoopBackOff
	"ErrImageNeverPull":        true,
	"InspectFailed":            true,
	"Killing":                  true, // why a container restarted (failed liveness probe) or stopped
	"Unhealthy":                true, // probe failures
	"ExceededGracePeriod":      true,
	"FailedPostStartHook":      true,
	"FailedPreStopHook":        true,
	"FailedKillPod":            true,
	"FailedCreatePodContainer": true,
	// kubelet, pod sandbox, volumes and node pressure
	"FailedCreatePodSandBox": true,
	"FailedMount":            true,
	"NetworkNotReady":        true,
	"Evicted":                true, // node pressure: the host pod's eviction is the tenant pod's
	"Preempting":             true, // the kubelet makes room for a critical pod
	// host scheduler: the host pod is pinned to the node the tenant chose,
	// and the host's accounting (other tenants, the provider's pods) can
	// still refuse it there. Its message is summarized (schedulingMessage).
	ReasonFailedScheduling: true,
}

// ReasonFailedScheduling is the scheduler's reason for a pod it cannot
// place.
const ReasonFailedScheduling = "FailedScheduling"

// MaxMessage bounds what the syncer writes into a tenant's Event or pod
// status message, as events.k8s.io bounds a note: a host message is the
// kubelet's and the runtime's error text, of no set length, and it is
// written into the tenant's etcd.
const MaxMessage = 1024

// TenantEvent is what the syncer records on a tenant pod for a host Event.
type TenantEvent struct {
	Type, Reason, Message string
	// FieldPath is the host Event's, e.g. "spec.containers{web}":
	// container names are the tenant's on the host pod too.
	FieldPath string
}

// MirrorEvent is the Event to record on tenant for ev, a host Event about
// host; ok is false when ev is not mirrored. It checks identity itself
// rather than trusting the caller's lookups by name: ev must be about this
// very host pod (its UID), and host must record tenant's namespace, name
// and UID, so an Event about an earlier pod of the same name never reaches
// its successor.
//
// The message is rewritten, not dropped: the allow-listed reasons' messages
// are built from the pod's own spec (images, containers, volumes, probes)
// and the node it runs on, which the tenant's virtual Node mirrors under
// the same name. What is the host's in them is the host pod's name,
// namespace and UID and the names of the ConfigMap and Secret copies, all
// of which map back to the tenant's: the workload namespace holds only
// this tenant's objects, so a name in it is the tenant's own under its host
// name. Image pull failures are the exception: their message is the
// registry's and the node's network's, and is replaced (imageEventVerb).
// A reason whose message names another namespace's object
// (Preempted) is left off the allow-list instead, since no rewrite could
// make it the tenant's.
func MirrorEvent(ev *corev1.Event, host, tenant *corev1.Pod) (TenantEvent, bool) {
	io := ev.InvolvedObject
	if io.Kind != "Pod" || io.Namespace != host.Namespace || io.Name != host.Name || io.UID == "" || io.UID != host.UID {
		return TenantEvent{}, false
	}
	if id, ok := names.IdentityOf(host.Labels, host.Annotations); !ok ||
		id.UID != string(tenant.UID) || id.Namespace != tenant.Namespace || id.Name != tenant.Name {
		return TenantEvent{}, false
	}
	if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		return TenantEvent{}, false
	}
	if !mirroredReasons[ev.Reason] {
		return TenantEvent{}, false
	}
	msg := tenantNames(host, tenant).Replace(ev.Message)
	if ev.Reason == ReasonFailedScheduling {
		msg = schedulingMessage(ev.Message, tenant.Spec.NodeName)
	} else if verb, ok := imageEventVerb(ev.Reason, ev.Message); ok {
		msg = hiddenPull(verb, containerImage(tenant, fieldPathContainer(io.FieldPath)))
	}
	return TenantEvent{
		Type:      ev.Type,
		Reason:    ev.Reason,
		Message:   BoundMessage(msg),
		FieldPath: io.FieldPath,
	}, true
}

// schedulingFits are the host scheduler's reasons that are about the
// pod's own node and that the tenant can act on (smaller requests, fewer
// pods) or already sees (its virtual Node is unschedulable too).
var schedulingFits = regexp.MustCompile(`Insufficient [A-Za-z0-9./_-]+|Too many pods|node\(s\) were unschedulable`)

// schedulingMessage summarizes the host scheduler's message instead of
// rewriting it: "0/N nodes are available: ..." is a histogram over every
// management node, which would tell the tenant how many nodes the
// provider has and which taints its nodes carry (the virtual Nodes show
// none). The host pod is pinned to one node, so only that node's shortage
// matters; those reasons are kept, everything else is left out, and a
// message in a format this does not know still yields a message with no
// host detail.
func schedulingMessage(host, node string) string {
	var fits []string
	for _, f := range schedulingFits.FindAllString(host, -1) {
		if !slices.Contains(fits, f) {
			fits = append(fits, f)
		}
	}
	msg := fmt.Sprintf("the management cluster cannot run the pod on node %q yet", node)
	if len(fits) > 0 {
		slices.Sort(fits)
		msg += ": " + strings.Join(fits, ", ")
	}
	return msg
}

// tenantNames replaces the host's names of tenant's objects with the
// tenant's: the host pod (alone and as namespace/name), its UID, the
// copies of the ConfigMaps and Secrets tenant references, and the
// workload namespace. Longer names come first, as strings.Replacer tries
// its pairs in order at each position: "<workload>/<host pod>" must win
// over "<workload>".
func tenantNames(host, tenant *corev1.Pod) *strings.Replacer {
	pairs := []string{
		host.Namespace + "/" + host.Name, tenant.Namespace + "/" + tenant.Name,
		host.Name, tenant.Name,
	}
	for _, ref := range referencedNames(tenant) {
		pairs = append(pairs, names.Host(tenant.Namespace, ref), ref)
	}
	if host.UID != "" {
		pairs = append(pairs, string(host.UID), string(tenant.UID))
	}
	pairs = append(pairs, host.Namespace, tenant.Namespace)
	return strings.NewReplacer(pairs...)
}

// referencedNames are the ConfigMaps and Secrets a tenant pod names, which
// the syncer copied under names.Host. Host names are unique per tenant
// (namespace, name), so ConfigMaps and Secrets can share one list.
func referencedNames(p *corev1.Pod) []string {
	var out []string
	for _, s := range p.Spec.ImagePullSecrets {
		out = append(out, s.Name)
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			out = append(out, v.ConfigMap.Name)
		case v.Secret != nil:
			out = append(out, v.Secret.SecretName)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					out = append(out, src.ConfigMap.Name)
				}
				if src.Secret != nil {
					out = append(out, src.Secret.Name)
				}
			}
		}
	}
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				out = append(out, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				out = append(out, r.Name)
			}
		}
		for _, ef := range c.EnvFrom {
			if ef.ConfigMapRef != nil {
				out = append(out, ef.ConfigMapRef.Name)
			}
			if ef.SecretRef != nil {
				out = append(out, ef.SecretRef.Name)
			}
		}
	}
	return out
}

// BoundMessage cuts m to at most MaxMessage bytes, on a rune boundary,
// marking the cut.
func BoundMessage(m string) string {
	const mark = "…"
	if len(m) <= MaxMessage {
		return m
	}
	cut := MaxMessage - len(mark)
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + mark
}

// EventCount is how often ev has happened: the legacy count, or the
// series count of an events.k8s.io Event (the host scheduler's), at least
// one.
func EventCount(ev *corev1.Event) int32 {
	n := ev.Count
	if ev.Series != nil && ev.Series.Count > n {
		n = ev.Series.Count
	}
	return max(n, 1)
}

// EventLastSeen is when ev last happened, whichever API wrote it.
func EventLastSeen(ev *corev1.Event) time.Time {
	t := ev.CreationTimestamp.Time
	for _, u := range []time.Time{ev.LastTimestamp.Time, ev.EventTime.Time} {
		if u.After(t) {
			t = u
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	return t
}
