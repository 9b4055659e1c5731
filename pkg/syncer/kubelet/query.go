package kubelet

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds on what a request may carry. The tenant apiserver builds these
// queries from a user's PodExecOptions and PodLogOptions, so the bounds
// are far above any real kubectl use and only stop a request from costing
// the syncer or the management apiserver more than a normal one.
const (
	// maxCommandArgs bounds exec's command (and /run's cmd) arguments.
	maxCommandArgs = 128
	// maxCommandArgBytes bounds one argument: a "sh -c" script fits.
	maxCommandArgBytes = 16 << 10
	// maxPorts bounds one port-forward's ports.
	maxPorts = 32
)

// invalidQueryError is every query refusal; its text is what the caller
// sees, so it names the parameter and never echoes a value.
type invalidQueryError struct{ msg string }

func (e invalidQueryError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return invalidQueryError{msg: fmt.Sprintf(format, args...)}
}

// allowOnly refuses a key outside allowed and a repeated key that is not
// in multi.
func allowOnly(q url.Values, allowed map[string]bool, multi string) error {
	for k, v := range q {
		if !allowed[k] {
			return invalid("query parameter %q is not supported", k)
		}
		if len(v) > 1 && k != multi {
			return invalid("query parameter %q is given more than once", k)
		}
	}
	return nil
}

var logKeys = map[string]bool{
	"follow": true, "previous": true, "timestamps": true, "tailLines": true, "tail": true,
	"limitBytes": true, "sinceSeconds": true, "sinceTime": true, "stream": true,
}

// LogOptions turns a /containerLogs query into the PodLogOptions of the
// host pod's log. The parameters are those kube-apiserver's LogLocation
// sends, plus the kubelet's legacy "tail" (a number or "all").
func LogOptions(q url.Values, container string) (*corev1.PodLogOptions, error) {
	if err := allowOnly(q, logKeys, ""); err != nil {
		return nil, err
	}
	o := &corev1.PodLogOptions{Container: container}
	var err error
	for _, b := range []struct {
		key string
		dst *bool
	}{{"follow", &o.Follow}, {"previous", &o.Previous}, {"timestamps", &o.Timestamps}} {
		if *b.dst, err = boolParam(q, b.key); err != nil {
			return nil, err
		}
	}
	if o.TailLines, err = intParam(q, "tailLines", 0); err != nil {
		return nil, err
	}
	// The kubelet lets the legacy "tail" win over tailLines.
	if tail := q.Get("tail"); tail == "all" {
		o.TailLines = nil
	} else if tail != "" {
		if o.TailLines, err = intParam(q, "tail", 0); err != nil {
			return nil, err
		}
	}
	if o.LimitBytes, err = intParam(q, "limitBytes", 1); err != nil {
		return nil, err
	}
	if o.SinceSeconds, err = intParam(q, "sinceSeconds", 1); err != nil {
		return nil, err
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, invalid("query parameter %q must be an RFC 3339 time", "sinceTime")
		}
		mt := metav1.NewTime(t)
		o.SinceTime = &mt
	}
	if o.SinceTime != nil && o.SinceSeconds != nil {
		return nil, invalid("at most one of sinceTime and sinceSeconds may be given")
	}
	switch s := q.Get("stream"); s {
	case "", corev1.LogStreamAll:
		// All is the default; leaving it out also works against a
		// management apiserver without PodLogsQuerySplitStreams.
	case corev1.LogStreamStdout, corev1.LogStreamStderr:
		o.Stream = &s
	default:
		return nil, invalid("query parameter %q must be All, Stdout or Stderr", "stream")
	}
	return o, nil
}

var execKeys = map[string]bool{
	corev1.ExecStdinParam: true, corev1.ExecStdoutParam: true, corev1.ExecStderrParam: true,
	corev1.ExecTTYParam: true, corev1.ExecCommandParam: true,
}

var attachKeys = map[string]bool{
	corev1.ExecStdinParam: true, corev1.ExecStdoutParam: true, corev1.ExecStderrParam: true,
	corev1.ExecTTYParam: true,
}

// StreamQuery turns an /exec or /attach query into the host pod's exec or
// attach query. The kubelet's names are input, output, error and tty
// (corev1.Exec*Param, "1" for true) and command; the management
// apiserver's PodExecOptions and PodAttachOptions call them stdin, stdout,
// stderr, tty, command and container.
func StreamQuery(v Verb, q url.Values, container string) (url.Values, error) {
	keys := attachKeys
	if v == VerbExec {
		keys = execKeys
	}
	if err := allowOnly(q, keys, corev1.ExecCommandParam); err != nil {
		return nil, err
	}
	out := url.Values{"container": {container}}
	var stdin, stdout, stderr, tty bool
	var err error
	for _, b := range []struct {
		key string
		dst *bool
	}{{corev1.ExecStdinParam, &stdin}, {corev1.ExecStdoutParam, &stdout}, {corev1.ExecStderrParam, &stderr}, {corev1.ExecTTYParam, &tty}} {
		if *b.dst, err = boolParam(q, b.key); err != nil {
			return nil, err
		}
	}
	// As the kubelet does: a TTY merges stderr into stdout.
	if tty {
		stderr = false
	}
	if !stdin && !stdout && !stderr {
		return nil, invalid("at least one of input, output and error must be requested")
	}
	for _, b := range []struct {
		key string
		on  bool
	}{{"stdin", stdin}, {"stdout", stdout}, {"stderr", stderr}, {"tty", tty}} {
		if b.on {
			out.Set(b.key, "true")
		}
	}
	if v == VerbExec {
		cmd := q[corev1.ExecCommandParam]
		if err := checkCommand(cmd); err != nil {
			return nil, err
		}
		out["command"] = cmd
	}
	return out, nil
}

// PortForwardQuery turns a /portForward query into the host pod's
// portforward query. The kubelet reads "port", a comma-separated list,
// which only WebSocket clients send (SPDY clients name ports per stream);
// PodPortForwardOptions calls it "ports", one value per port.
func PortForwardQuery(q url.Values) (url.Values, error) {
	if err := allowOnly(q, map[string]bool{corev1.PortHeader: true}, ""); err != nil {
		return nil, err
	}
	out := url.Values{}
	s := q.Get(corev1.PortHeader)
	if s == "" {
		return out, nil
	}
	ports := strings.Split(s, ",")
	if len(ports) > maxPorts {
		return nil, invalid("at most %d ports may be forwarded at once", maxPorts)
	}
	for _, p := range ports {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nil, invalid("query parameter %q must list ports between 1 and 65535", corev1.PortHeader)
		}
		out.Add("ports", strconv.FormatUint(n, 10))
	}
	return out, nil
}

// RunCommand reads /run's command: the kubelet takes it as one "cmd"
// parameter split on spaces. Fields, not a split on every space: an empty
// argument from a doubled space is never what a caller meant.
func RunCommand(q url.Values) ([]string, error) {
	if err := allowOnly(q, map[string]bool{"cmd": true}, ""); err != nil {
		return nil, err
	}
	cmd := strings.Fields(q.Get("cmd"))
	if err := checkCommand(cmd); err != nil {
		return nil, err
	}
	return cmd, nil
}

func checkCommand(cmd []string) error {
	if len(cmd) == 0 {
		return invalid("a command is required")
	}
	if len(cmd) > maxCommandArgs {
		return invalid("a command may have at most %d arguments", maxCommandArgs)
	}
	for _, a := range cmd {
		if len(a) > maxCommandArgBytes {
			return invalid("a command argument may be at most %d bytes", maxCommandArgBytes)
		}
	}
	return nil
}

// boolParam accepts what the kubelet sends ("1") and what strconv reads as
// a bool; a key that is absent or empty is false.
func boolParam(q url.Values, key string) (bool, error) {
	s := q.Get(key)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, invalid("query parameter %q must be a boolean", key)
	}
	return b, nil
}

// intParam reads an optional integer of at least min.
func intParam(q url.Values, key string, min int64) (*int64, error) {
	s := q.Get(key)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < min {
		return nil, invalid("query parameter %q must be an integer of at least %d", key, min)
	}
	return &n, nil
}
