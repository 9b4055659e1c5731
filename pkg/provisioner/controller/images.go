package controller

import (
	"capn.dev/capn/pkg/provisioner/builders"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// imageOrder is the order components are blamed in: the first one that
// cannot start holds up the ones after it anyway.
// etcd, which no upgrade touches, comes first.
var imageOrder = v1alpha1.Components()

// maxImageMessage bounds the kubelet's message copied into the condition:
// it quotes the registry's error, whose length capn does not control.
const maxImageMessage = 256

// imagesCondition lists the cluster's component pods and reports whether
// any of them waits for an image the node cannot get. It is called only
// while some component is not rolled out, so a steady cluster costs no
// LIST.
func (c *workloads) imagesCondition(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params) (metav1.Condition, error) {
	ns := p.Namespace
	pods, err := c.mgmt.ListPods(ctx, ns, labels.SelectorFromSet(labels.Set{v1alpha1.ClusterLabel: nc.Name}))
	if err != nil {
		return metav1.Condition{}, fmt.Errorf("listing pods in %s: %w", ns, err)
	}
	return imagePullCondition(pods), nil
}

// imagePullCondition is ImagesAvailable for these pods: False with the
// kubelet's reason for the first container (by component order, then pod
// and container name) that waits on its image, e.g.
//
//	kube-apiserver: image registry.k8s.io/kube-apiserver:v1.36.3 (pod
//	kube-apiserver-7d9-x2, container kube-apiserver): ErrImageNeverPull:
//	Container image "..." is not present with pull policy of Never
//
// and True otherwise.
func imagePullCondition(pods []corev1.Pod) metav1.Condition {
	type problem struct {
		component, pod string
		status         corev1.ContainerStatus
	}
	var found []problem
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, s := range containerStatuses(p) {
			if w := s.State.Waiting; w != nil && slices.Contains(v1alpha1.ImagePullReasons, w.Reason) {
				found = append(found, problem{p.Labels[v1alpha1.ComponentLabel], p.Name, s})
			}
		}
	}
	if len(found) == 0 {
		return metav1.Condition{Type: v1alpha1.ConditionImagesAvailable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonImagesPresent}
	}
	rank := func(component string) int {
		if i := slices.Index(imageOrder, component); i >= 0 {
			return i
		}
		return len(imageOrder)
	}
	slices.SortFunc(found, func(a, b problem) int {
		if d := rank(a.component) - rank(b.component); d != 0 {
			return d
		}
		if d := strings.Compare(a.pod, b.pod); d != 0 {
			return d
		}
		return strings.Compare(a.status.Name, b.status.Name)
	})
	f := found[0]
	w := f.status.State.Waiting
	msg := fmt.Sprintf("%s: image %s (pod %s, container %s): %s", f.component, f.status.Image, f.pod, f.status.Name, w.Reason)
	if w.Message != "" {
		msg += ": " + truncate(w.Message, maxImageMessage)
	}
	return metav1.Condition{Type: v1alpha1.ConditionImagesAvailable, Status: metav1.ConditionFalse, Reason: w.Reason, Message: msg}
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
