package provisioner

import (
	"slices"
	"testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// cluster is a NestedCluster as the API server serves it: defaulted.
func cluster(mutate ...func(*v1alpha1.NestedCluster)) *v1alpha1.NestedCluster {
	c := nc("team-a", "demo")
	for _, m := range mutate {
		m(c)
	}
	v1alpha1.SetObjectDefaults_NestedCluster(c)
	return c
}

func TestLoadBalancerAddressIsTheEndpoint(t *testing.T) {
	nc := cluster()
	inCluster := Addresses{APIServerServiceIP: "10.96.0.10"}
	if got := APIServerEndpoint(nc, inCluster); got != "https://10.96.0.10:6443" {
		t.Errorf("endpoint without a load balancer = %s, want the ClusterIP", got)
	}
	for _, addr := range []string{"203.0.113.7", "tenant.example.com"} {
		p := inCluster
		p.APIServerExternalAddress = addr
		if got := APIServerEndpoint(nc, p); got != "https://"+addr+":6443" {
			t.Errorf("endpoint = %s, want the load balancer %s", got, addr)
		}
		if got := APIServerURL(nc, p); got != "https://10.96.0.10:6443" {
			t.Errorf("in-cluster URL = %s: kcm and scheduler must keep the ClusterIP", got)
		}
		s := APIServerSANs(nc, p)
		if !slices.Contains(s.IPAddresses, addr) && !slices.Contains(s.DNSNames, addr) {
			t.Errorf("serving SANs %+v lack the load balancer %s", s, addr)
		}
	}
}

func TestURLsAndSANs(t *testing.T) {
	nc := cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.APIServer.CertSANs = []string{"api.example.com", "192.0.2.7"}
	})
	ns := ManagementNamespace(nc)
	if got, want := APIServerURL(nc, Addresses{}), "https://kube-apiserver."+ns+".svc:6443"; got != want {
		t.Errorf("APIServerURL = %s, want %s", got, want)
	}
	if got := APIServerURL(nc, Addresses{APIServerServiceIP: "fd00::1"}); got != "https://[fd00::1]:6443" {
		t.Errorf("APIServerURL with an IPv6 Service IP = %s", got)
	}
	s := APIServerSANs(nc, Addresses{APIServerServiceIP: "10.0.0.9"})
	for _, ip := range []string{"10.96.0.1", "10.0.0.9", "192.0.2.7", "127.0.0.1"} {
		if !slices.Contains(s.IPAddresses, ip) {
			t.Errorf("apiserver SAN IPs %v lack %s", s.IPAddresses, ip)
		}
	}
	for _, dns := range []string{"kubernetes.default.svc.cluster.local", "kube-apiserver." + ns + ".svc", "api.example.com"} {
		if !slices.Contains(s.DNSNames, dns) {
			t.Errorf("apiserver SAN names %v lack %s", s.DNSNames, dns)
		}
	}
}

func TestEtcdClientURLAndNamespace(t *testing.T) {
	nc := cluster()
	ns := ManagementNamespace(nc)
	if got, want := EtcdClientURL(nc, Addresses{}, 2379), "https://etcd."+ns+".svc:2379"; got != want {
		t.Errorf("EtcdClientURL = %s, want %s", got, want)
	}
	if got := EtcdClientURL(nc, Addresses{EtcdServiceIP: "fd00::2"}, 2379); got != "https://[fd00::2]:2379" {
		t.Errorf("EtcdClientURL with an IPv6 Service IP = %s", got)
	}
	// A resolved (e.g. legacy) namespace names every address.
	a := Addresses{Namespace: "capn-legacy"}
	if got := NamespaceOf(nc, a); got != "capn-legacy" {
		t.Errorf("NamespaceOf = %s, want the resolved namespace", got)
	}
	if got := APIServerURL(nc, a); got != "https://kube-apiserver.capn-legacy.svc:6443" {
		t.Errorf("APIServerURL in a resolved namespace = %s", got)
	}
	if s := EtcdPeerSANs(nc, a); !slices.Equal(s.DNSNames, []string{"*.etcd-headless.capn-legacy.svc"}) || len(s.IPAddresses) != 0 {
		t.Errorf("EtcdPeerSANs = %+v", s)
	}
}
