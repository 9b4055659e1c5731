package translate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Image pull failures are reported in capn's words, never the host's: the
// kubelet's message for them is the runtime's error, which carries the
// registry's answer, the addresses the node dialled and its resolver's
// errors, all of them the provider's network seen from the node. The
// tenant keeps the reason and the image it named, which is what it can act
// on.

// pullStateReasons are the kubelet's container waiting reasons for an
// image it could not pull (v1.37, pkg/kubelet/images and the CRI errors),
// with the words the tenant sees instead of the host's message.
var pullStateReasons = map[string]string{
	"ErrImagePull":              "Failed to pull",
	"ImagePullBackOff":          "Back-off pulling",
	"RegistryUnavailable":       "Failed to pull",
	"SignatureValidationFailed": "Failed to validate the signature of",
	"ImageInspectError":         "Failed to inspect",
	"InvalidImageName":          "Failed to parse",
	"ErrImageNeverPull":         "Not pulling (imagePullPolicy Never)",
}

// hiddenPull is capn's message for a failed image operation.
func hiddenPull(verb, image string) string {
	if image == "" {
		return verb + " an image of the pod: see the reason; the registry's answer is not shown"
	}
	return fmt.Sprintf("%s image %q: see the reason; the registry's answer is not shown", verb, image)
}

// imageEventVerb is capn's words for a mirrored Event about an image, ok
// false for Events that are not. Reason Failed and BackOff are also the
// kubelet's for containers that fail to start or keep crashing; those are
// told apart by the kubelet's own message formats, and kept as they were.
func imageEventVerb(reason, message string) (verb string, ok bool) {
	switch reason {
	case "ErrImageNeverPull":
		return pullStateReasons["ErrImageNeverPull"], true
	case "InspectFailed":
		return "Failed to inspect", true
	case "Failed":
		if strings.HasPrefix(message, "Failed to pull image") {
			return "Failed to pull", true
		}
		// "Error: ErrImagePull": the reason the container waits with.
		if v, ok := pullStateReasons[strings.TrimPrefix(message, "Error: ")]; ok && strings.HasPrefix(message, "Error: ") {
			return v, true
		}
	case "BackOff":
		if strings.HasPrefix(message, "Back-off pulling image") {
			return "Back-off pulling", true
		}
	}
	return "", false
}

// containerImage is the image the tenant gave container name of p, init or
// not, "" when p has none of that name.
func containerImage(p *corev1.Pod, name string) string {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if c.Name == name {
				return c.Image
			}
		}
	}
	return ""
}

// fieldPathContainer is the container an Event's field path names, as the
// kubelet writes it: "spec.containers{web}", "spec.initContainers{init}".
func fieldPathContainer(fieldPath string) string {
	_, rest, ok := strings.Cut(fieldPath, "{")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "}")
	return name
}

// hidePullMessages rewrites the waiting message of containers waiting on
// an image pull, in the current and last state.
func hidePullMessages(statuses []corev1.ContainerStatus, tenant *corev1.Pod) {
	for i := range statuses {
		s := &statuses[i]
		for _, w := range []*corev1.ContainerStateWaiting{s.State.Waiting, s.LastTerminationState.Waiting} {
			if w == nil {
				continue
			}
			if verb, ok := pullStateReasons[w.Reason]; ok {
				w.Message = hiddenPull(verb, containerImage(tenant, s.Name))
			}
		}
	}
}
