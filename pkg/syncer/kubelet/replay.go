package kubelet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// upgradeTransport builds the management transports for upgrades, as
// kubectl proxy does: the connection round tripper holds the TLS
// configuration (CA, client certificate) that proxy.DialURL dials with,
// and the request round tripper is the config's HTTP wrappers (bearer
// token, token file, impersonation, user agent) around MirrorRequest, so
// the syncer's credentials are written into the upgrade request itself.
func upgradeTransport(cfg *rest.Config) (http.RoundTripper, proxy.UpgradeRequestRoundTripper, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	conn := utilnet.SetOldTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig, DialContext: dial})
	wrappers, err := rest.HTTPWrappersForConfig(cfg, proxy.MirrorRequest)
	if err != nil {
		return nil, nil, err
	}
	return conn, proxy.NewUpgradeRequestRoundTripper(conn, wrappers), nil
}

// hostURL is the host pod's subresource on the management apiserver.
// Namespace and name are DNS names and need no escaping.
func (s *Server) hostURL(host *corev1.Pod, subresource string) *url.URL {
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/namespaces/" + host.Namespace + "/pods/" + host.Name + "/" + subresource
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return &u
}

// serveLogs streams the host pod's log. client-go's Stream, not a proxy:
// a refused call comes back as a Status to translate into the tenant's
// terms, and each chunk is flushed as it arrives, so a follow shows every
// line when the container writes it.
func (s *Server) serveLogs(w http.ResponseWriter, r *http.Request, t Target, opts *corev1.PodLogOptions) {
	ctx := r.Context()
	stream, err := s.pods.Pods(t.Host.Namespace).GetLogs(t.Host.Name, opts).Stream(ctx)
	if err != nil {
		writeError(w, VerbContainerLogs, fromManagement(ctx, err, t))
		return
	}
	defer func() { _ = stream.Close() }()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The status now: a follow of a quiet container may not write for a
	// long while, and the caller should not wait on headers meanwhile.
	_ = rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := stream.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			// The status is sent: a stream cut short just ends, as a
			// kubelet's does.
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				klog.FromContext(ctx).V(2).Info("Log stream from the management apiserver ended", "err", err)
			}
			return
		}
	}
}

// serveUpgrade relays an exec, attach or port-forward upgrade to the host
// pod. The request is rebuilt, not passed on: only the handshake's headers
// go, and the URL is the host pod's with the translated query.
func (s *Server) serveUpgrade(w http.ResponseWriter, r *http.Request, v Verb, t Target, q url.Values) {
	loc := s.hostURL(t.Host, v.subresource())
	loc.RawQuery = q.Encode()
	h := proxy.NewUpgradeAwareHandler(loc, s.transport, false, true, responder{verb: v})
	h.UpgradeTransport = s.upgrade
	// The management apiserver's name, not the virtual node's address.
	h.UseLocationHost = true
	out := r.Clone(r.Context())
	out.Header = forwardHeaders(r.Header)
	out.URL = loc
	out.Host = loc.Host
	out.RequestURI = ""
	out.Body, out.ContentLength, out.TransferEncoding = http.NoBody, 0, nil
	h.ServeHTTP(w, out)
}

// forwardedHeaders are the only request headers relayed: what the SPDY
// and WebSocket handshakes need. An allow-list, so the caller's
// Authorization (which client-go's bearer wrapper would keep rather than
// replace), Impersonate-*, X-Remote-* and whatever else it sent never
// reach the management apiserver.
var forwardedHeaders = []string{
	"Connection", "Upgrade", "X-Stream-Protocol-Version",
	"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Protocol",
}

// bearerProtocolPrefix marks a WebSocket subprotocol that carries a bearer
// token (k8s.io/apiserver's websocket authenticator).
const bearerProtocolPrefix = "base64url.bearer.authorization.k8s.io."

func forwardHeaders(in http.Header) http.Header {
	out := http.Header{}
	for _, k := range forwardedHeaders {
		for _, v := range in.Values(k) {
			if k == "Sec-Websocket-Protocol" {
				var keep []string
				for _, p := range strings.Split(v, ",") {
					if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, bearerProtocolPrefix) {
						keep = append(keep, p)
					}
				}
				if len(keep) == 0 {
					continue
				}
				v = strings.Join(keep, ", ")
			}
			out.Add(k, v)
		}
	}
	return out
}

// isUpgrade is httpstream.IsUpgradeRequest: a Connection header with the
// upgrade token.
func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// responder answers an upgrade that failed before the management
// apiserver answered (it could not be dialled, the handshake broke). A
// management refusal (a status of 400 or more) is not seen here: the
// proxy echoes it to the caller as it is, as a kubelet echoes its
// runtime's streaming server.
type responder struct{ verb Verb }

func (rp responder) Error(w http.ResponseWriter, req *http.Request, err error) {
	klog.FromContext(req.Context()).Error(err, "Relaying an upgrade to the management apiserver")
	writeError(w, rp.verb, apierrors.NewServiceUnavailable("the node cannot reach the pod now, retry"))
}

// fromManagement turns the management apiserver's refusal of a replayed
// call into the tenant's terms: the same code and reason, with the host
// pod's name replaced by the tenant pod's. Its refusing the syncer itself
// (401, 403) is the syncer's misconfiguration, logged here and reported
// without naming the syncer's management identity.
func fromManagement(ctx context.Context, err error, t Target) error {
	logger := klog.FromContext(ctx)
	var as apierrors.APIStatus
	if !errors.As(err, &as) {
		if ctx.Err() == nil {
			logger.Error(err, "Replaying a kubelet API call")
		}
		return apierrors.NewServiceUnavailable("the node cannot reach the pod now, retry")
	}
	st := as.Status()
	switch st.Code {
	case http.StatusUnauthorized, http.StatusForbidden:
		logger.Error(err, "The management apiserver refused the syncer a kubelet API call")
		return apierrors.NewInternalError(errors.New("the node is not allowed to serve this call"))
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    st.Code,
		Reason:  st.Reason,
		Message: strings.ReplaceAll(st.Message, t.Host.Name, t.Tenant.Name),
	}}
}
