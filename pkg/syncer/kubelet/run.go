package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// maxRunOutputBytes bounds /run's output, held in memory until the
// command ends: the CRI's ExecSync, behind a kubelet's /run, caps its own
// at 16 MiB.
const maxRunOutputBytes = 16 << 20

// errOutputTooLarge: the command wrote more than maxRunOutputBytes.
var errOutputTooLarge = errors.New("the command's output is too large")

// Runner runs a command to completion in a host pod's container and
// returns its output, stdout followed by stderr, as the kubelet's
// RunInContainer does. A non-zero exit is an error satisfying
// k8s.io/utils/exec.ExitError.
type Runner interface {
	Run(ctx context.Context, namespace, pod, container string, command []string) ([]byte, error)
}

// execRunner runs through the management apiserver's pods/exec, over
// SPDY: a POST, which the apiserver authorizes as create.
type execRunner struct {
	config *rest.Config
	client rest.Interface
}

func (e *execRunner) Run(ctx context.Context, namespace, pod, container string, command []string) ([]byte, error) {
	u := e.client.Post().Namespace(namespace).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewSPDYExecutor(e.config, http.MethodPost, u)
	if err != nil {
		return nil, fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	out := &runOutput{}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out.writer(&out.stdout), Stderr: out.writer(&out.stderr)})
	if err == nil && out.truncated {
		err = errOutputTooLarge
	}
	return append(out.stdout.Bytes(), out.stderr.Bytes()...), err
}

// runOutput collects both streams under one budget. Past it, bytes are
// dropped, not refused: a writer's error only stops remotecommand's copy,
// and the command, blocked on a stream nobody reads, would never end.
type runOutput struct {
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	truncated      bool
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (o *runOutput) writer(b *bytes.Buffer) writerFunc {
	return func(p []byte) (int, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		room := maxRunOutputBytes - o.stdout.Len() - o.stderr.Len()
		if len(p) > room {
			o.truncated = true
			b.Write(p[:max(room, 0)])
			return len(p), nil
		}
		b.Write(p)
		return len(p), nil
	}
}

// serveRun answers /run with the command's output.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request, t Target, container string, command []string) {
	ctx := r.Context()
	out, err := s.runner.Run(ctx, t.Host.Namespace, t.Host.Name, container, command)
	var exit utilexec.ExitError
	switch {
	case errors.As(err, &exit):
		writeError(w, VerbRun, apierrors.NewInternalError(fmt.Errorf("command terminated with exit code %d", exit.ExitStatus())))
		return
	case errors.Is(err, errOutputTooLarge):
		writeError(w, VerbRun, apierrors.NewInternalError(err))
		return
	case err != nil:
		writeError(w, VerbRun, fromManagement(ctx, err, t))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}
