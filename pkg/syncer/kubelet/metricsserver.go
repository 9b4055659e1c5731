package kubelet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
)

// Bounds of the metrics listener. metrics-server scrapes each node once
// per --metric-resolution (15 s): the default rate admits a scrape of
// every node of a tenant on 20 nodes each second with room to spare, and
// keeps a tenant pod that floods the port from making the syncer fetch
// the host kubelet's answer more often than that.
const (
	DefaultMetricsQPS   = 2
	DefaultMetricsBurst = 10
	// reviewTTL is how long an allowed token is remembered (the kubelet's
	// webhook authenticator caches 2 minutes): a scrape does not cost two
	// reviews of the tenant apiserver. Refusals are not remembered.
	reviewTTL = time.Minute
	// maxReviews bounds the remembered tokens; past it the memory starts
	// over.
	maxReviews = 64
	// hostScrapeTimeout bounds a host kubelet's answer.
	hostScrapeTimeout = 10 * time.Second
)

// ResourceMetricsPath is where the resource metrics of the virtual Node
// named node are served. One listener serves every virtual Node of the
// tenant at the syncer's address, so the path names the node;
// metrics-server reads it from the Node's annotation
// metrics.k8s.io/resource-metrics-path.
func ResourceMetricsPath(node string) string { return "/nodes/" + node + "/metrics/resource" }

// parseMetricsPath is ResourceMetricsPath's inverse.
func parseMetricsPath(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/nodes/")
	if !ok {
		return "", false
	}
	node, ok := strings.CutSuffix(rest, "/metrics/resource")
	if !ok || node == "" || strings.Contains(node, "/") {
		return "", false
	}
	return node, true
}

// MetricsOptions configure the resource metrics handler.
type MetricsOptions struct {
	// Authentication and Authorization are the tenant apiserver's review
	// APIs: a caller is whoever its bearer token is to the tenant, and may
	// read a node's metrics if the tenant authorizes get on nodes/metrics
	// for that node, as a kubelet with webhook authorization asks.
	Authentication authenticationclient.TokenReviewsGetter
	Authorization  authorizationclient.SubjectAccessReviewsGetter
	// WorkloadNamespace is the host namespace of the tenant's pods.
	WorkloadNamespace string
	// TenantPod recognizes the tenant's host pods.
	TenantPod TenantPod
	// HostKubelet is the /metrics/resource URL of the host node behind
	// the virtual Node named node; ok is false when the tenant has no
	// such virtual Node.
	HostKubelet func(node string) (url string, ok bool)
	// Transport carries the syncer's management credentials (authorized
	// for nodes/metrics, never nodes/proxy) and the management CA, which
	// the host kubelet's serving certificate must verify against.
	Transport http.RoundTripper
	// QPS and Burst bound the requests served; 0 means the defaults.
	QPS   float32
	Burst int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// MetricsHandler serves GET ResourceMetricsPath(node) to the tenant's
// metrics-server and nothing else.
type MetricsHandler struct {
	o       MetricsOptions
	client  *http.Client
	limiter flowcontrol.RateLimiter

	mu      sync.Mutex
	allowed map[[sha256.Size]byte]time.Time
}

var _ http.Handler = (*MetricsHandler)(nil)

// NewMetricsHandler builds the handler.
func NewMetricsHandler(o MetricsOptions) (*MetricsHandler, error) {
	if o.Authentication == nil || o.Authorization == nil || o.TenantPod == nil || o.HostKubelet == nil || o.Transport == nil || o.WorkloadNamespace == "" {
		return nil, errors.New("resource metrics: reviews, workload namespace, tenant pods, host kubelets and transport are required")
	}
	if o.QPS <= 0 {
		o.QPS = DefaultMetricsQPS
	}
	if o.Burst <= 0 {
		o.Burst = DefaultMetricsBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &MetricsHandler{
		o:       o,
		client:  &http.Client{Transport: o.Transport, Timeout: hostScrapeTimeout},
		limiter: flowcontrol.NewTokenBucketRateLimiter(o.QPS, o.Burst),
		allowed: map[[sha256.Size]byte]time.Time{},
	}, nil
}

// ServeHTTP authenticates and authorizes the caller, bounds the rate,
// then fetches the host kubelet's metrics and serves the tenant's part.
func (h *MetricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logger := klog.FromContext(r.Context())
	node, ok := parseMetricsPath(r.URL.EscapedPath())
	if !ok || len(r.RequestURI) > maxRequestURIBytes {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	if headerBytes(r.Header) > maxHeaderBytes {
		http.Error(w, http.StatusText(http.StatusRequestHeaderFieldsTooLarge), http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	if !h.limiter.TryAccept() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	if code := h.authorize(r.Context(), r.Header.Get("Authorization"), node); code != 0 {
		logger.V(2).Info("Refused a resource metrics request", "status", code, "node", node, "remote", r.RemoteAddr)
		http.Error(w, http.StatusText(code), code)
		return
	}
	url, ok := h.o.HostKubelet(node)
	if !ok {
		http.NotFound(w, r)
		return
	}
	var out bytes.Buffer
	if err := h.scrape(r.Context(), url, &out); err != nil {
		// The host's words stay in the syncer's log: they name the host
		// node's address and its kubelet's answer.
		logger.Error(err, "Reading the host kubelet's resource metrics", "node", node)
		http.Error(w, "the node's metrics cannot be read now", http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", expfmtText)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(out.Bytes())
}

// expfmtText is the Prometheus text format's content type, version 0.0.4.
const expfmtText = "text/plain; version=0.0.4; charset=utf-8"

// scrape reads the host kubelet's metrics and writes the tenant's part.
func (h *MetricsHandler) scrape(ctx context.Context, url string, out *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("host kubelet answered %s", resp.Status)
	}
	fams, err := FilterResourceMetrics(resp.Body, h.o.WorkloadNamespace, h.o.TenantPod)
	if err != nil {
		return err
	}
	return WriteMetrics(out, fams)
}

// authorize returns 0 when the bearer token in authz is a tenant
// identity allowed get on nodes/metrics of node, else the HTTP status to
// answer: 401 without a valid token, 403 when it is not allowed, 503
// when the tenant apiserver cannot say.
func (h *MetricsHandler) authorize(ctx context.Context, authz, node string) int {
	token, ok := strings.CutPrefix(authz, "Bearer ")
	if !ok || token == "" {
		return http.StatusUnauthorized
	}
	key := sha256.Sum256([]byte(node + "\x00" + token))
	now := h.o.Now()
	h.mu.Lock()
	exp, hit := h.allowed[key]
	h.mu.Unlock()
	if hit && now.Before(exp) {
		return 0
	}
	tr, err := h.o.Authentication.TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reviewing a resource metrics token")
		return http.StatusServiceUnavailable
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := h.o.Authorization.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "metrics", Name: node},
		}}, metav1.CreateOptions{})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reviewing a resource metrics request")
		return http.StatusServiceUnavailable
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden
	}
	h.mu.Lock()
	if len(h.allowed) >= maxReviews {
		clear(h.allowed)
	}
	h.allowed[key] = now.Add(reviewTTL)
	h.mu.Unlock()
	return 0
}
