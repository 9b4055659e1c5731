package kubelet

import (
	"errors"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Verb is a kubelet API endpoint this package serves.
type Verb string

// The verbs, spelled as the first path segment.
const (
	VerbContainerLogs Verb = "containerLogs"
	VerbExec          Verb = "exec"
	VerbAttach        Verb = "attach"
	VerbPortForward   Verb = "portForward"
	VerbRun           Verb = "run"
)

// streaming reports whether the verb is an upgrade (SPDY or WebSocket)
// that is relayed byte for byte.
func (v Verb) streaming() bool {
	return v == VerbExec || v == VerbAttach || v == VerbPortForward
}

// subresource is the verb's pod subresource on the management apiserver.
func (v Verb) subresource() string {
	switch v {
	case VerbContainerLogs:
		return "log"
	case VerbPortForward:
		return "portforward"
	case VerbRun:
		return "exec"
	}
	return string(v)
}

// methodAllowed follows the kubelet's routes: logs are GET only, /run is
// POST only, and the upgrades take both (POST for SPDY, GET for
// WebSockets, which browsers can only open with GET).
func (v Verb) methodAllowed(m string) bool {
	switch v {
	case VerbContainerLogs:
		return m == http.MethodGet
	case VerbRun:
		return m == http.MethodPost
	}
	return m == http.MethodGet || m == http.MethodPost
}

// Request is one parsed kubelet API path.
type Request struct {
	Verb      Verb
	Namespace string
	Pod       string
	// UID is the pod UID the path names, empty for the forms without.
	UID string
	// Container is empty for portForward.
	Container string
}

// errNoRoute: the path is none this server serves. Every such path is a
// plain 404, whether it is another kubelet endpoint (/stats, /pods,
// /metrics...), a malformed one, or one whose names could not name a pod.
var errNoRoute = errors.New("not found")

// maxUIDLength bounds a UID segment; the apiserver sets UIDs to UUIDs (36
// characters), never a client.
const maxUIDLength = 64

// ParsePath parses the escaped path of a kubelet API request. rawPath is
// r.URL.EscapedPath(): no valid segment needs escaping (they are DNS
// names and UUIDs), so an escape is refused rather than decoded, and an
// encoded slash can never shift segments.
func ParsePath(rawPath string) (Request, error) {
	if !strings.HasPrefix(rawPath, "/") || strings.ContainsAny(rawPath, "%") {
		return Request{}, errNoRoute
	}
	segs := strings.Split(rawPath[1:], "/")
	r := Request{Verb: Verb(segs[0])}
	args := segs[1:]
	switch r.Verb {
	case VerbContainerLogs:
		if len(args) != 3 {
			return Request{}, errNoRoute
		}
		r.Namespace, r.Pod, r.Container = args[0], args[1], args[2]
	case VerbExec, VerbAttach, VerbRun:
		switch len(args) {
		case 3:
			r.Namespace, r.Pod, r.Container = args[0], args[1], args[2]
		case 4:
			r.Namespace, r.Pod, r.UID, r.Container = args[0], args[1], args[2], args[3]
		default:
			return Request{}, errNoRoute
		}
	case VerbPortForward:
		switch len(args) {
		case 2:
			r.Namespace, r.Pod = args[0], args[1]
		case 3:
			r.Namespace, r.Pod, r.UID = args[0], args[1], args[2]
		default:
			return Request{}, errNoRoute
		}
	default:
		return Request{}, errNoRoute
	}
	if len(validation.IsDNS1123Label(r.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(r.Pod)) > 0 {
		return Request{}, errNoRoute
	}
	if r.Verb != VerbPortForward && len(validation.IsDNS1123Label(r.Container)) > 0 {
		return Request{}, errNoRoute
	}
	if len(args) == 4 || (r.Verb == VerbPortForward && len(args) == 3) {
		if !validUID(r.UID) {
			return Request{}, errNoRoute
		}
	}
	return r, nil
}

func validUID(uid string) bool {
	if uid == "" || len(uid) > maxUIDLength {
		return false
	}
	for _, c := range uid {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
