package translate

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonReadinessGatesNotReady is the kubelet's reason for Ready=False
// while a readiness gate is not True.
const ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"

// Status is the tenant pod's status after an up-sync of host's: what the
// kubelet observed (phase, IPs, container states, start time, the kubelet's
// conditions) from the host, and from the tenant what only the tenant owns:
// PodScheduled (its scheduler's) and the conditions of its readiness gates,
// which the host pod does not carry. A container waiting on an image pull
// gets capn's message, not the registry's (hidePullMessages). Ready is
// then recomputed as the kubelet would: containers ready and every gate
// True.
func Status(tenant, host *corev1.Pod) corev1.PodStatus {
	out := *host.Status.DeepCopy()
	// The tenant's generation the kubelet has seen, not the host's. The
	// QoS class is the tenant apiserver's, from the tenant spec, and
	// immutable: the host pod's can differ (the workload namespace's
	// LimitRange fills in requests), and writing it would make every
	// up-sync invalid. The nominated node is the tenant scheduler's.
	out.ObservedGeneration = observedGeneration(tenant, host)
	out.QOSClass = tenant.Status.QOSClass
	out.NominatedNodeName = tenant.Status.NominatedNodeName
	hidePullMessages(out.InitContainerStatuses, tenant)
	hidePullMessages(out.ContainerStatuses, tenant)
	hidePullMessages(out.EphemeralContainerStatuses, tenant)
	gates := make([]corev1.PodConditionType, 0, len(tenant.Spec.ReadinessGates))
	for _, g := range tenant.Spec.ReadinessGates {
		gates = append(gates, g.ConditionType)
	}
	tenantOwned := func(t corev1.PodConditionType) bool {
		return t == corev1.PodScheduled || slices.Contains(gates, t)
	}
	conds := make([]corev1.PodCondition, 0, len(host.Status.Conditions)+len(gates)+1)
	for _, c := range host.Status.Conditions {
		if !tenantOwned(c.Type) {
			c.ObservedGeneration = conditionGeneration(c, host)
			conds = append(conds, c)
		}
	}
	for _, c := range tenant.Status.Conditions {
		if tenantOwned(c.Type) {
			conds = append(conds, c)
		}
	}
	if len(gates) > 0 {
		conds = gateReady(conds, gates, tenant)
	}
	out.Conditions = conds
	return out
}

// gateReady sets Ready False while any gate is not True, keeping the
// host's Ready when every gate is. The transition time is the tenant's
// when its Ready already says so, so an unchanged pod is not rewritten on
// every sync.
func gateReady(conds []corev1.PodCondition, gates []corev1.PodConditionType, tenant *corev1.Pod) []corev1.PodCondition {
	var missing []string
	for _, g := range gates {
		i := slices.IndexFunc(conds, func(c corev1.PodCondition) bool { return c.Type == g })
		if i < 0 || conds[i].Status != corev1.ConditionTrue {
			missing = append(missing, string(g))
		}
	}
	if len(missing) == 0 {
		return conds
	}
	isReady := func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady }
	ready := corev1.PodCondition{
		Type:    corev1.PodReady,
		Status:  corev1.ConditionFalse,
		Reason:  ReasonReadinessGatesNotReady,
		Message: "the status of pod readiness gates is not \"True\": " + strings.Join(missing, ", "),
	}
	i := slices.IndexFunc(conds, isReady)
	switch t := slices.IndexFunc(tenant.Status.Conditions, isReady); {
	case t >= 0 && tenant.Status.Conditions[t].Status == corev1.ConditionFalse:
		ready.LastTransitionTime = tenant.Status.Conditions[t].LastTransitionTime
	case i >= 0 && conds[i].Status == corev1.ConditionFalse:
		ready.LastTransitionTime = conds[i].LastTransitionTime
	default:
		ready.LastTransitionTime = metav1.Now()
	}
	if i >= 0 {
		ready.LastProbeTime = conds[i].LastProbeTime
		conds[i] = ready
		return conds
	}
	return append(conds, ready)
}
