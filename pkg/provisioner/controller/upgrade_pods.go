package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// diagnose says why cs has not rolled out to target in time, for the
// Degraded condition: the first (by name) of its pods built for target that
// is not Ready, with the failing pod condition and each container's waiting
// or terminated reason, e.g.
//
//	kube-apiserver: pod kube-apiserver-7d9-x2: Ready=False (ContainersNotReady:
//	containers with unready status: [kube-apiserver]); container
//	kube-apiserver: ImagePullBackOff (Back-off pulling image ...)
//
// Pods are read only here, when a step has already missed its deadline.
func (c *upgrader) diagnose(ctx context.Context, nc *v1alpha1.NestedCluster, ns string, cs *componentState, target string) (string, error) {
	pods, err := c.mgmt.ListPods(ctx, ns, labels.SelectorFromSet(provisioner.SelectorLabels(nc, cs.name)))
	if err != nil {
		return "", fmt.Errorf("listing %s pods: %w", cs.name, err)
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	deadline := fmt.Sprintf("not rolled out to %s within %s", target, c.cfg.UpgradeStepTimeout)
	for i := range pods {
		p := &pods[i]
		if p.Annotations[provisioner.VersionAnnotation] != target || p.DeletionTimestamp != nil || podReady(p) {
			continue
		}
		return fmt.Sprintf("%s: pod %s: %s; %s", cs.name, p.Name, podProblem(p), deadline), nil
	}
	// No new pod to blame: not created (quota, admission) or not counted yet.
	s := cs.status
	return fmt.Sprintf("%s: %d updated and %d ready of %d replicas; %s", cs.name, s.UpdatedReplicas, s.ReadyReplicas, s.Replicas, deadline), nil
}

func podReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podProblem renders the pod's first failing condition (unscheduled before
// unready) and the state of every container that is not running.
func podProblem(p *corev1.Pod) string {
	var parts []string
	cond := podCondition(p, corev1.PodScheduled)
	if cond == nil || cond.Status == corev1.ConditionTrue {
		cond = podCondition(p, corev1.PodReady)
	}
	if cond != nil {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", cond.Type, cond.Status, cond.Reason, cond.Message))
	} else {
		parts = append(parts, "phase "+string(p.Status.Phase)+", no Ready condition")
	}
	for _, s := range containerStatuses(p) {
		if d := containerProblem(s); d != "" {
			parts = append(parts, "container "+s.Name+": "+d)
		}
	}
	return strings.Join(parts, "; ")
}

// containerStatuses are p's init and regular container statuses, in order.
func containerStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
}

// containerProblem is "" for a running container.
func containerProblem(s corev1.ContainerStatus) string {
	var d string
	switch {
	case s.State.Waiting != nil:
		d = s.State.Waiting.Reason
		if m := s.State.Waiting.Message; m != "" {
			d += " (" + m + ")"
		}
	case s.State.Terminated != nil:
		t := s.State.Terminated
		d = fmt.Sprintf("terminated: %s, exit code %d", t.Reason, t.ExitCode)
	default:
		return ""
	}
	if t := s.LastTerminationState.Terminated; t != nil {
		d += fmt.Sprintf("; last exit code %d (%s)", t.ExitCode, t.Reason)
	}
	return d
}
