package builders

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Template revisions.
//
// A template revision is a set of capn's own pod-template defaults that
// no NestedCluster field controls (today: probe timing). Changing such a
// default would otherwise restart every tenant's control plane on the capn
// upgrade that ships it, all at once, and a single-member EmptyDir or
// Memory etcd would lose its data. So a workload records the revision it
// was rendered at (TemplateRevisionAnnotation, on the workload's own
// metadata, which rolls nothing), and the controller renders an existing
// workload at that revision until its pod template changes for another
// reason (a spec edit, an upgrade, a renewed certificate): the new
// defaults then ride along with a roll that happens anyway. New workloads
// start at the target revision: LatestTemplateRevision, unless the
// provider pins an older one (Params.TemplateRevision).
// TemplateRevisionAnnotation holds the revision; absent means 1, the
// revision of every workload rendered before revisions existed.
const TemplateRevisionAnnotation = "capn.dev/template-revision"

// LatestTemplateRevision is what new workloads get:
//
//	1: startup probes every 10 s.
//	2: startup probes every 1 s with the same total budget, so a component
//	   is seen started within a second of starting, not up to ten later.
//	3: kube-apiserver accepts bootstrap tokens and anonymous reads of
//	   kube-public/cluster-info, so real nodes can join
//	   (JoinTemplateRevision).
//	4: the lean defaults (LeanTemplateRevision, lean.go).
//	5: a Shared tenant's kube-apiserver presents its kubelet client
//	   certificate to admission webhooks, and its syncer's Service webhook
//	   requires it (WebhookClientCertTemplateRevision); its syncer runs
//	   tenant containers with imagePullPolicy Always unless the provider
//	   lists their image (PullAlwaysTemplateRevision).
//	6: a Shared tenant's syncer keeps the metrics-server addon unless
//	   spec.metrics.mode is None, and serves the virtual Nodes' resource
//	   metrics on its own port (MetricsTemplateRevision).
//	7: each component mounts its PKI from one Secret of its own
//	   (PKISecretTemplateRevision, pkilayout.go).
//	8: CPU requests near what an idle tenant uses
//	   (IdleRequestsTemplateRevision, pod.go).
const LatestTemplateRevision = 8

// MetricsTemplateRevision is the first revision whose syncer runs the
// metrics addon by default. A running syncer gets it when its pod rolls
// anyway; a tenant that asks for the addon in spec.metrics gets it at any
// revision, since that spec change rolls the syncer regardless.
const MetricsTemplateRevision = 6

// WebhookClientCertTemplateRevision is the first revision whose
// kube-apiserver presents a client certificate to webhooks. The syncer
// requires one only once its apiserver is rendered at it, so a tenant
// whose apiserver has not rolled yet keeps creating Services.
const WebhookClientCertTemplateRevision = 5

// PullAlwaysTemplateRevision is the first revision whose syncer forces
// image pulls (DataPlane.PullAlways): a running syncer gets it when its pod
// rolls anyway.
const PullAlwaysTemplateRevision = 5

// JoinTemplateRevision is the first revision whose kube-apiserver lets
// nodes join with a bootstrap token. An apiserver rendered earlier gets it
// when its pods next roll; nestedclusters/jointoken answers 409 until then.
const JoinTemplateRevision = 3

// SupportsJoin reports whether a live kube-apiserver workload was rendered
// at a revision that accepts bootstrap tokens.
func SupportsJoin(apiserver metav1.Object) bool {
	return RevisionOf(apiserver) >= JoinTemplateRevision
}

// TemplateRevisions maps a component to the revision to render it at;
// a component that is absent (or 0) gets the target revision.
type TemplateRevisions map[string]int

// TargetRevision is the revision new workloads are rendered at.
func (p Params) TargetRevision() int {
	if p.TemplateRevision >= 1 && p.TemplateRevision <= LatestTemplateRevision {
		return p.TemplateRevision
	}
	return LatestTemplateRevision
}

// revision is component's revision.
func (p Params) revision(component string) int {
	if v := p.Revisions[component]; v > 0 {
		return v
	}
	return p.TargetRevision()
}

// RevisionOf reads a live workload's revision.
func RevisionOf(obj metav1.Object) int {
	v, ok := obj.GetAnnotations()[TemplateRevisionAnnotation]
	if !ok {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// stampRevision records rev on a workload's metadata; revision 1 carries
// no annotation, so a workload rendered at 1 is byte for byte what capn
// rendered before revisions existed (no write, no roll).
func stampRevision(meta *metav1.ObjectMeta, rev int) {
	if rev <= 1 {
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[TemplateRevisionAnnotation] = strconv.Itoa(rev)
}

// startupProbe is a startup probe at rev's timing allowing budget seconds
// in all; probe is the probe to time (its handler).
func startupProbe(probe *corev1.Probe, rev int, budget int32) *corev1.Probe {
	period := int32(1)
	if rev <= 1 {
		period = 10
	}
	probe.PeriodSeconds, probe.FailureThreshold = period, budget/period
	return probe
}
