package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/syncer/kubelet"
)

// serveKubelet listens on Kubelet.BindAddress and serves the virtual
// Nodes' kubelet API until ctx ends. Only the leader serves: its caches
// resolve tenant pods to host pods, and the virtual Nodes carry its
// address. The serving certificate comes from an in-memory CA, as the
// webhook's: the tenant apiserver does not verify kubelet serving
// certificates (no --kubelet-certificate-authority, kubeadm's default;
// see docs/dataplane.md), while the syncer verifies the apiserver's
// client certificate against the tenant CA.
func (s *Syncer) serveKubelet(ctx context.Context) error {
	o := s.o.Kubelet
	h, err := kubelet.NewHandler(kubelet.Options{
		Management: o.Management,
		Resolver: kubelet.Resolver{WorkloadNamespace: s.o.WorkloadNamespace,
			Tenant: kubelet.ListerGetter(s.tenantPods), Host: kubelet.ListerGetter(s.hostPods)},
		ClientCommonNames: o.ClientCommonNames,
	})
	if err != nil {
		return err
	}
	certs, err := newServingCerts(o.AdvertiseIP, s.now)
	if err != nil {
		return fmt.Errorf("kubelet API certificate: %w", err)
	}
	l, err := net.Listen("tcp", o.BindAddress)
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	srv := kubelet.NewHTTPServer(ctx, h, kubelet.TLSConfig(o.ClientCAs, certs.getCertificate))
	go func() {
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Kubelet API server stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}
