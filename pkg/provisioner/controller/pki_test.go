package controller

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

func secretNames(t *testing.T, f *fixture) map[string]*corev1.Secret {
	t.Helper()
	l, err := f.kube.CoreV1().Secrets(managementNamespace(f.nc)).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Secret{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out
}

// logicalPKI is the cluster's PKI as the controller reads it back.
func logicalPKI(t *testing.T, f *fixture) pki.Data {
	t.Helper()
	stored := map[string]map[string][]byte{}
	for name, s := range secretNames(t, f) {
		stored[name] = s.Data
	}
	return gatherPKI(stored, builders.PKILayout(f.nc))
}

// A new cluster's PKI is the roots and one Secret per component: five
// writes for what were fourteen Secrets.
func TestPKIIssuedOnceAndKept(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	got := secretNames(t, f)
	want := []string{provisioner.SecretPKIRoots, "etcd-pki", "kube-apiserver-pki", "kube-controller-manager-pki", "kube-scheduler-pki"}
	assert.ElementsMatch(t, want, slices.Collect(maps.Keys(got)))
	for _, name := range want {
		assert.Equal(t, "demo", got[name].Labels[v1alpha1.ClusterLabel], "secret %s lacks owner labels", name)
	}
	d := logicalPKI(t, f)
	for _, name := range []string{provisioner.SecretCA, provisioner.SecretEtcdCA, provisioner.SecretAPIServerServing,
		provisioner.SecretServiceAccount, provisioner.SecretControllerManagerKC, provisioner.SecretEtcdServer} {
		assert.NotEmpty(t, d[name], "logical secret %s", name)
	}
	caBefore := d[provisioner.SecretCA][corev1.TLSCertKey]

	f.mgmt.reset()
	f.sync()
	for _, w := range f.mgmt.writes {
		assert.NotContains(t, w, "Secret/", "unchanged PKI rewritten")
	}
	assert.Equal(t, caBefore, logicalPKI(t, f)[provisioner.SecretCA][corev1.TLSCertKey], "CA changed on resync")
}

func TestPKIRenewsNearExpiry(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	before := logicalPKI(t, f)
	// Eleven months on, leaves are within the renewal threshold; CAs live
	// longer and must be kept.
	f.c.now = func() time.Time { return testNow.Add(340 * 24 * time.Hour) }
	f.mgmt.reset()
	f.sync()
	var updated []string
	for _, w := range f.mgmt.writes {
		if strings.HasPrefix(w, "apply Secret/") {
			updated = append(updated, strings.TrimPrefix(w, "apply Secret/"))
		}
	}
	after := logicalPKI(t, f)
	assert.NotEqual(t, before[provisioner.SecretAPIServerServing], after[provisioner.SecretAPIServerServing], "serving certificate not renewed")
	assert.Contains(t, updated, provisioner.ComponentPKISecret(v1alpha1.ComponentAPIServer))
	assert.NotContains(t, updated, provisioner.SecretPKIRoots, "roots rewritten on leaf renewal")
	assert.Equal(t, before[provisioner.SecretCA], after[provisioner.SecretCA], "CA changed on leaf renewal")
	// New certificates roll the pods that read them (CertsHash changed).
	if !slices.ContainsFunc(f.mgmt.writes, func(w string) bool { return w == "apply Deployment/"+provisioner.APIServerName }) {
		t.Errorf("kube-apiserver not rolled after renewal: %v", f.mgmt.writes)
	}
}

func TestPKIUsesServiceClusterIP(t *testing.T) {
	// The fake allocates no ClusterIPs; a Service that exists keeps its IP
	// through the apply, as the real server's would.
	nc := testCluster()
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: provisioner.APIServerName, Namespace: managementNamespace(nc)},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.0.0.10"},
	}
	f := newFixture(t, nc, svc)
	f.sync()
	kc := string(logicalPKI(t, f)[provisioner.SecretControllerManagerKC][provisioner.SecretKeyKubeconfig])
	if !strings.Contains(kc, "https://10.0.0.10:") {
		t.Errorf("kcm kubeconfig does not use the Service ClusterIP:\n%s", kc)
	}
}

// A cluster created before the per-component layout keeps its logical
// Secrets while any of its pods may mount them, gets the new ones ahead of
// its pods' next roll, and loses the old ones only once every workload is
// rendered at the new revision and rolled out. No key changes on the way.
func TestPKIMigratesToThePerComponentLayout(t *testing.T) {
	f := newFixture(t, testCluster())
	f.c.cfg.TemplateRevision = builders.PKISecretTemplateRevision - 1
	f.sync()
	f.markReady()
	f.syncTenant()
	logical := []string{provisioner.SecretCA, provisioner.SecretAPIServerServing, provisioner.SecretEtcdPeer, provisioner.SecretSchedulerKC}
	perComponent := []string{provisioner.SecretPKIRoots, "etcd-pki", "kube-apiserver-pki", "kube-controller-manager-pki", "kube-scheduler-pki"}
	got := secretNames(t, f)
	for _, name := range logical {
		require.Contains(t, got, name)
	}
	for _, name := range perComponent {
		require.NotContains(t, got, name)
	}
	before := logicalPKI(t, f)

	f.c.cfg.TemplateRevision = 0 // capn upgraded
	f.sync()
	got = secretNames(t, f)
	for _, name := range append(logical, perComponent...) {
		assert.Contains(t, got, name, "both layouts while pods of the old revision run")
	}
	assert.Equal(t, before, logicalPKI(t, f))

	// The workloads roll to the new revision (for a reason of their own)
	// and their pods come up.
	ctx, ns := context.Background(), managementNamespace(f.nc)
	rev := strconv.Itoa(builders.PKISecretTemplateRevision)
	deps, err := f.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, d := range deps.Items {
		d.Annotations[builders.TemplateRevisionAnnotation] = rev
		_, err := f.kube.AppsV1().Deployments(ns).Update(ctx, &d, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	f.refresh()
	f.sync() // the etcd StatefulSet is still at the old revision
	for _, name := range logical {
		assert.Contains(t, secretNames(t, f), name, "deleted while etcd mounts it")
	}
	sts, err := f.kube.AppsV1().StatefulSets(ns).Get(ctx, provisioner.EtcdName, metav1.GetOptions{})
	require.NoError(t, err)
	sts.Annotations[builders.TemplateRevisionAnnotation] = rev
	_, err = f.kube.AppsV1().StatefulSets(ns).Update(ctx, sts, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.sync()
	f.markReady()
	f.sync()
	got = secretNames(t, f)
	for _, name := range logical {
		assert.NotContains(t, got, name, "the old layout outlived its last pod")
	}
	assert.ElementsMatch(t, perComponent, slices.Collect(maps.Keys(got)))
	assert.Equal(t, before, logicalPKI(t, f), "a key changed in the migration")

	apiserver, err := f.kube.AppsV1().Deployments(ns).Get(ctx, provisioner.APIServerName, metav1.GetOptions{})
	require.NoError(t, err)
	for _, src := range apiserver.Spec.Template.Spec.Volumes[0].Projected.Sources {
		assert.Equal(t, "kube-apiserver-pki", src.Secret.Name)
	}
}
