package controller

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// A LoadBalancer Service's address, once it has one, is where tenants
// connect: status.endpoint moves to it and the serving certificate (so
// the apiserver pods) gains it.
func TestLoadBalancerAddressBecomesTheEndpoint(t *testing.T) {
	f := newFixture(t, testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.APIServer.Service.Type = corev1.ServiceTypeLoadBalancer
	}))
	f.sync()
	ctx, ns := context.Background(), managementNamespace(f.nc)
	before := f.nc.Status.Endpoint
	hash := func() string {
		d, err := f.kube.AppsV1().Deployments(ns).Get(ctx, provisioner.APIServerName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations[provisioner.CertsHashAnnotation]
	}
	hashBefore := hash()

	svc, err := f.kube.CoreV1().Services(ns).Get(ctx, provisioner.APIServerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
	if _, err := f.kube.CoreV1().Services(ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.nc.Status.Endpoint; got != "https://203.0.113.7:6443" {
		t.Errorf("endpoint %q (was %q), want the load balancer's", got, before)
	}
	block, _ := pem.Decode(logicalPKI(t, f)[provisioner.SecretAPIServerServing][corev1.TLSCertKey])
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ip := range cert.IPAddresses {
		found = found || ip.Equal(net.ParseIP("203.0.113.7"))
	}
	if !found {
		t.Errorf("serving certificate IPs %v lack the load balancer", cert.IPAddresses)
	}
	if hash() == hashBefore {
		t.Error("the apiserver pods keep the old certificate: certs-hash unchanged")
	}
}
