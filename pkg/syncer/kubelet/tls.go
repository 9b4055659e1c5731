package kubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// TLSConfig is the serving configuration: a client certificate is
// required and must verify against clientCAs (the tenant cluster CA),
// which also requires it to be issued for client auth. getCertificate
// serves the node's certificate; the tenant apiserver verifies it only if
// it runs with --kubelet-certificate-authority. Only HTTP/1.1 is offered:
// exec, attach and port-forward hijack the connection, which HTTP/2
// cannot.
func TLSConfig(clientCAs *x509.CertPool, getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		ClientAuth:     tls.RequireAndVerifyClientCert,
		ClientCAs:      clientCAs,
		GetCertificate: getCertificate,
		NextProtos:     []string{"http/1.1"},
	}
}

// NewHTTPServer wraps the handler in a server with the bounds a handler
// cannot set itself. It has no read or write timeout: a log follow or an
// exec session lasts as long as the caller keeps it. ctx is every
// request's base context, carrying its logger; serve with
// ServeTLS(listener, "", "").
func NewHTTPServer(ctx context.Context, h http.Handler, tlsConfig *tls.Config) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    2 * (maxRequestURIBytes + maxHeaderBytes),
		// A non-nil empty map turns HTTP/2 off, whatever the TLS
		// configuration offers.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		BaseContext:  func(net.Listener) context.Context { return ctx },
		ErrorLog:     log.New(serverLog{klog.FromContext(ctx)}, "", 0),
	}
}

// serverLog takes the http.Server's own messages, mostly handshakes
// refused for want of the tenant's client certificate: routine for a
// listening port, so below the default verbosity.
type serverLog struct{ logger klog.Logger }

func (l serverLog) Write(p []byte) (int, error) {
	l.logger.V(2).Info("Kubelet API server", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}
