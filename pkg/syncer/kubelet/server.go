package kubelet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// DefaultMaxSessions is Options.MaxSessions when unset.
const DefaultMaxSessions = 64

// Request bounds, checked in the handler as well as by the http.Server
// NewHTTPServer makes: the handler may be served by another server.
const (
	// maxRequestURIBytes bounds path and query: a long exec command is the
	// largest legitimate request.
	maxRequestURIBytes = 32 << 10
	// maxHeaderBytes bounds the sum of the request's header names and
	// values; an upgrade needs a handful of short headers.
	maxHeaderBytes = 32 << 10
)

// Options configure the handler.
type Options struct {
	// Management is the syncer's configuration for the management
	// apiserver. Every replayed call authenticates with it (bearer token,
	// token file or client certificate), never with anything the caller
	// sent. Its Timeout is ignored: follows and sessions last as long as
	// the caller keeps them open.
	Management *rest.Config
	// Resolver maps tenant pods to their host pods.
	Resolver Resolver
	// ClientCommonNames are the only client-certificate common names
	// served: the tenant apiserver's kubelet client. Required.
	ClientCommonNames []string
	// MaxSessions bounds the calls replayed at once (log follows and
	// exec, attach and port-forward sessions last); beyond it a call gets
	// 429. 0 means DefaultMaxSessions.
	MaxSessions int
	// Runner runs /run's commands; nil means an exec through Management.
	Runner Runner
}

// Server is the kubelet API handler.
type Server struct {
	resolver Resolver
	cns      map[string]bool
	// sessions holds one token per call being replayed.
	sessions chan struct{}
	// base is the management apiserver's root URL.
	base *url.URL
	// transport and upgrade carry the syncer's credentials; upgrade adds
	// them to the request it writes to a connection it dials itself.
	transport http.RoundTripper
	upgrade   proxy.UpgradeRequestRoundTripper
	pods      typedcorev1.PodsGetter
	runner    Runner
}

var _ http.Handler = (*Server)(nil)

// NewHandler builds the handler. It returns an error, unlike a plain
// constructor of an http.Handler, because the management transports are
// built here, once, from Options.Management.
func NewHandler(o Options) (*Server, error) {
	if o.Management == nil {
		return nil, errors.New("kubelet API: no management configuration")
	}
	if len(o.ClientCommonNames) == 0 {
		return nil, errors.New("kubelet API: no client common name allowed")
	}
	if o.Resolver.WorkloadNamespace == "" || o.Resolver.Tenant == nil || o.Resolver.Host == nil {
		return nil, errors.New("kubelet API: the resolver needs a workload namespace and both pod getters")
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	cfg := rest.CopyConfig(o.Management)
	cfg.Timeout = 0
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet API: management URL: %w", err)
	}
	transport, upgrade, err := upgradeTransport(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet API: management transport: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet API: management client: %w", err)
	}
	s := &Server{
		resolver:  o.Resolver,
		cns:       map[string]bool{},
		sessions:  make(chan struct{}, o.MaxSessions),
		base:      base,
		transport: transport,
		upgrade:   upgrade,
		pods:      client.CoreV1(),
		runner:    o.Runner,
	}
	if s.runner == nil {
		s.runner = &execRunner{config: cfg, client: client.CoreV1().RESTClient()}
	}
	for _, cn := range o.ClientCommonNames {
		s.cns[cn] = true
	}
	return s, nil
}

// ServeHTTP authenticates, parses, bounds and resolves the call, then
// replays it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logger := klog.FromContext(r.Context())
	if code := s.authenticate(r); code != 0 {
		// No detail: the caller is not the tenant apiserver.
		logger.V(2).Info("Refused a kubelet API call", "status", code, "remote", r.RemoteAddr)
		http.Error(w, http.StatusText(code), code)
		return
	}
	if len(r.RequestURI) > maxRequestURIBytes {
		http.Error(w, http.StatusText(http.StatusRequestURITooLong), http.StatusRequestURITooLong)
		return
	}
	if headerBytes(r.Header) > maxHeaderBytes {
		http.Error(w, http.StatusText(http.StatusRequestHeaderFieldsTooLarge), http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	req, err := ParsePath(r.URL.EscapedPath())
	if err != nil {
		http.NotFound(w, r)
		return
	}
	logger = logger.WithValues("verb", req.Verb, "pod", klog.KRef(req.Namespace, req.Pod))
	r = r.WithContext(klog.NewContext(r.Context(), logger))
	if !req.Verb.methodAllowed(r.Method) {
		writeError(w, req.Verb, apierrors.NewMethodNotSupported(podsResource, r.Method))
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, req.Verb, apierrors.NewBadRequest("the query does not parse"))
		return
	}
	call, err := prepare(req, q)
	if err != nil {
		writeError(w, req.Verb, apierrors.NewBadRequest(err.Error()))
		return
	}
	if req.Verb.streaming() && !isUpgrade(r) {
		writeError(w, req.Verb, apierrors.NewBadRequest("Upgrade request required"))
		return
	}

	select {
	case s.sessions <- struct{}{}:
		defer func() { <-s.sessions }()
	default:
		logger.V(2).Info("Too many kubelet API sessions", "max", cap(s.sessions))
		writeError(w, req.Verb, apierrors.NewTooManyRequests("too many sessions on this node, retry", 1))
		return
	}

	t, err := s.resolver.Resolve(r.Context(), req.Namespace, req.Pod, req.UID)
	if err != nil {
		// Resolve's own refusals are unwrapped APIStatus values, in the
		// tenant's terms; a getter's failure comes wrapped and may be a
		// Status of either cluster, which is the syncer's to log, not the
		// caller's to read.
		if _, ok := err.(apierrors.APIStatus); !ok {
			logger.Error(err, "Resolving a kubelet API call")
			err = apierrors.NewServiceUnavailable("the pod cannot be looked up now, retry")
		}
		writeError(w, req.Verb, err)
		return
	}
	if req.Container != "" && !t.HasContainer(req.Container) {
		writeError(w, req.Verb, apierrors.NewNotFound(schema.GroupResource{Resource: "containers"}, req.Container))
		return
	}
	logger.V(4).Info("Replaying a kubelet API call", "hostPod", klog.KObj(t.Host))
	switch req.Verb {
	case VerbContainerLogs:
		s.serveLogs(w, r, t, call.logs)
	case VerbRun:
		s.serveRun(w, r, t, req.Container, call.command)
	default:
		s.serveUpgrade(w, r, req.Verb, t, call.query)
	}
}

// call is a request's validated parameters, in management terms.
type call struct {
	logs    *corev1.PodLogOptions
	query   url.Values
	command []string
}

// prepare validates the query before anything is looked up, so a refused
// call costs nothing.
func prepare(req Request, q url.Values) (call, error) {
	var c call
	var err error
	switch req.Verb {
	case VerbContainerLogs:
		c.logs, err = LogOptions(q, req.Container)
	case VerbExec, VerbAttach:
		c.query, err = StreamQuery(req.Verb, q, req.Container)
	case VerbPortForward:
		c.query, err = PortForwardQuery(q)
	case VerbRun:
		c.command, err = RunCommand(q)
	}
	return c, err
}

// authenticate returns 0 for the tenant apiserver, else the status to
// refuse with. Only a verified chain counts: a server whose tls.Config
// merely requests a certificate still refuses an unverified one.
func (s *Server) authenticate(r *http.Request) int {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return http.StatusUnauthorized
	}
	if !s.cns[r.TLS.VerifiedChains[0][0].Subject.CommonName] {
		return http.StatusForbidden
	}
	return 0
}

func headerBytes(h http.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// writeError answers with err's status. The upgrades get a Status
// object: the tenant apiserver echoes a refused upgrade as it is and
// kubectl decodes a Status in it. Logs and /run get the plain message, as
// from a kubelet: the tenant apiserver puts a failed log response's body
// into its own Status message, where JSON would show as JSON.
func writeError(w http.ResponseWriter, v Verb, err error) {
	st := apierrors.NewInternalError(err).Status()
	var as apierrors.APIStatus
	if errors.As(err, &as) {
		st = as.Status()
	}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	if !v.streaming() {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(st.Message))
		return
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}
