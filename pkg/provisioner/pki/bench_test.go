package pki

import (
	"testing"

	"capn.dev/capn/pkg/provisioner"
)

// BenchmarkReconcileUnchanged is the steady state: every resync of every
// cluster parses and checks its PKI Secrets and writes nothing.
func BenchmarkReconcileUnchanged(b *testing.B) {
	d, in := base(b), inputs()
	for b.Loop() {
		if _, changed, err := Reconcile(d, in, now, threshold); err != nil || len(changed) != 0 {
			b.Fatalf("changed %v, err %v", changed, err)
		}
	}
}

// BenchmarkGenerateCAs is the baseline: a new cluster's roots (RSA 2048
// service-account key dominates).
func BenchmarkGenerateCAs(b *testing.B) {
	for b.Loop() {
		if _, err := GenerateCAs(now, "team-a/demo"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTenantKubeconfig is one nestedclusters/kubeconfig request.
func BenchmarkTenantKubeconfig(b *testing.B) {
	ca := caOf(b, base(b), provisioner.SecretCA)
	for b.Loop() {
		if _, err := TenantKubeconfig("https://10.0.0.10:6443", ca, "alice", nil, 0, now); err != nil {
			b.Fatal(err)
		}
	}
}
