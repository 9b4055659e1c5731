package framework

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/util/cert"
)

// The HA overlay's names (artifacts/deploy/overlays/ha).
const (
	CapnEtcdStatefulSet = "capn-etcd"
	CapnEtcdPodSelector = "app.kubernetes.io/name=capn-etcd"
	CapnEtcdMembers     = 3
	// CapnEtcdPeerCN is the only CN the members accept from a peer.
	CapnEtcdPeerCN = "capn-etcd-peer"
	// capnHADir holds the hostPath volumes of the HA deployment's PVCs.
	capnHADir = "/var/lib/capn-ha-e2e"
	// capnHAStorageClass binds the overlay's claims to those volumes only.
	capnHAStorageClass = "capn-ha-e2e"
)

// DeployCapnHA deploys capn the way the HA overlay says a provider does:
// `kubectl apply -k` of overlays/ha, with what the overlay leaves to the
// provider made here (an overlay on top of it, in a copy of the manifests):
// the serving and etcd certificates, the APIService's caBundle, volumes for
// the members and backups (hostPath, under capnHADir), and dnsConfig
// pointing at dns, the management cluster's DNS (DeployManagementDNS).
// It returns the time from `kubectl apply -k` to the APIService's Available
// condition with every replica and member Ready.
func DeployCapnHA(t TB, c *Cluster, n *Node, k Kubectl, repoRoot string, dns net.IP) time.Duration {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := copyTree(filepath.Join(repoRoot, "artifacts", "deploy"), dir); err != nil {
		t.Fatalf("copying the manifests: %v", err)
	}
	overlay := filepath.Join(dir, "overlays", "ha-e2e")
	writeCapnServingCerts(t, filepath.Join(overlay, "certs"))

	etcdCA, err := NewCA(t.TempDir(), "capn-etcd-ca")
	if err != nil {
		t.Fatal(err)
	}
	const domain = CapnEtcdStatefulSet + "." + CapnNamespace + ".svc"
	member, err := etcdCA.Issue("capn-etcd-member", cert.Config{
		CommonName: CapnEtcdPeerCN,
		AltNames: cert.AltNames{
			DNSNames: []string{"*." + domain, "*." + domain + ".cluster.local", domain, "localhost"},
			IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
		},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		t.Fatal(err)
	}
	capnClient, err := etcdCA.ClientCert("capn-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	for dir, kp := range map[string]KeyPair{"etcd": member, "etcd-client": capnClient} {
		if err := writeFiles(filepath.Join(overlay, dir), map[string][]byte{
			"ca.crt": etcdCA.CertPEM, "tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM}); err != nil {
			t.Fatal(err)
		}
	}

	volumes := prepareCapnHAVolumes(t, n)
	if err := writeFiles(overlay, map[string][]byte{
		"kustomization.yaml": []byte(capnHAKustomization(dns)),
		"volumes.yaml":       []byte(volumes),
	}); err != nil {
		t.Fatal(err)
	}

	applied := time.Now()
	k.MustRun(t, "", "apply", "-k", overlay)
	k.MustRun(t, "", "rollout", "status", "statefulset/"+CapnEtcdStatefulSet, "-n", CapnNamespace, "--timeout=300s")
	k.MustRun(t, "", "rollout", "status", "deployment/capn-apiserver", "-n", CapnNamespace, "--timeout=300s")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	WaitCapnAPIServiceAvailable(ctx, t, c)
	available := time.Since(applied)
	t.Logf("capn HA: %d etcd members and the capn-apiserver replicas Ready, APIService Available %s after apply",
		CapnEtcdMembers, available.Round(time.Millisecond))
	return available
}

// capnHAKustomization is the provider's overlay on overlays/ha.
func capnHAKustomization(dns net.IP) string {
	dnsPatch := fmt.Sprintf(`    - op: add
      path: /spec/template/spec/dnsPolicy
      value: None
    - op: add
      path: /spec/template/spec/dnsConfig
      value:
        nameservers: [%q]
        searches: [%s.svc.cluster.local, svc.cluster.local, cluster.local]
        options: [{name: ndots, value: "5"}]
`, dns.String(), CapnNamespace)
	return `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../ha
- volumes.yaml
secretGenerator:
- name: capn-apiserver-serving
  namespace: capn-system
  type: kubernetes.io/tls
  files: [tls.crt=certs/tls.crt, tls.key=certs/tls.key, ca.crt=certs/ca.crt]
- name: capn-etcd-tls
  namespace: capn-system
  files: [ca.crt=etcd/ca.crt, tls.crt=etcd/tls.crt, tls.key=etcd/tls.key]
- name: capn-etcd-client
  namespace: capn-system
  files: [ca.crt=etcd-client/ca.crt, tls.crt=etcd-client/tls.crt, tls.key=etcd-client/tls.key]
patches:
- target: {kind: PersistentVolumeClaim, name: capn-backups}
  patch: |-
    - {op: add, path: /spec/storageClassName, value: ` + capnHAStorageClass + `}
- target: {kind: StatefulSet, name: ` + CapnEtcdStatefulSet + `}
  patch: |-
    - {op: add, path: /spec/volumeClaimTemplates/0/spec/storageClassName, value: ` + capnHAStorageClass + `}
` + dnsPatch + `- target: {kind: Deployment, name: capn-apiserver}
  patch: |-
` + dnsPatch + `replacements:
- source:
    kind: Secret
    name: capn-apiserver-serving
    fieldPath: data.ca\.crt
  targets:
  - select: {kind: APIService, name: v1alpha1.capn.dev}
    fieldPaths: [spec.caBundle]
    options: {create: true}
`
}

// prepareCapnHAVolumes makes an empty directory, owned by the uid the
// overlay's pods run as, for each member's claim and for backups, and
// returns the PersistentVolumes that bind them. They are removed after n's
// teardown, once no container uses them.
func prepareCapnHAVolumes(t TB, n *Node) string {
	t.Helper()
	removeNowAndAfterTeardown(t, n, capnHADir)
	type volume struct{ name, claim, mode string }
	vols := []volume{{"capn-ha-e2e-backups", "capn-backups", "ReadWriteMany"}}
	for i := range CapnEtcdMembers {
		vols = append(vols, volume{fmt.Sprintf("capn-ha-e2e-etcd-%d", i), fmt.Sprintf("data-%s-%d", CapnEtcdStatefulSet, i), "ReadWriteOnce"})
	}
	var b strings.Builder
	for _, v := range vols {
		dir := filepath.Join(capnHADir, v.name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, capnUID, capnUID); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  capacity: {storage: 10Gi}
  accessModes: [%s]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: %s
  claimRef: {namespace: %s, name: %s}
  hostPath: {path: %s, type: Directory}
`, v.name, v.mode, capnHAStorageClass, CapnNamespace, v.claim, dir)
	}
	return b.String()
}

// writeFiles writes each file (name → content) under dir, creating it.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
