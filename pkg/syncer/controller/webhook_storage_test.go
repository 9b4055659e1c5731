package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// storageSyncer is a Syncer whose host has the default class local-path
// and a quota of 10Gi of claims, 8Gi of it used.
func storageSyncer(t *testing.T) *Syncer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, idx.Add(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path",
		Annotations: map[string]string{translate.AnnDefaultStorageClass: "true"}}, Provisioner: "rancher.io/local-path"}))
	require.NoError(t, idx.Add(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "provider-fast"}, Provisioner: "p"}))
	host := fake.NewClientset(&corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: "capn-workloads"},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("10Gi")},
			Used: corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("8Gi")},
		},
	})
	return &Syncer{o: Options{WorkloadNamespace: testWorkloads, Host: host}, hostStorageClasses: storagelisters.NewStorageClassLister(idx)}
}

func claimCreate(t *testing.T, spec corev1.PersistentVolumeClaimSpec) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data"}, Spec: spec})
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"},
		Namespace: "shop", Name: "data", Object: runtime.RawExtension{Raw: raw},
	}
}

func claimSpec(class, size string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}
}

func TestAdmitClaim(t *testing.T) {
	s := storageSyncer(t)
	ctx := context.Background()

	resp := s.admitClaim(ctx, claimCreate(t, claimSpec("local-path", "2Gi")))
	assert.True(t, resp.Allowed, "the default class, within the quota: %v", resp.Result)

	// The host has provider-fast, but the provider allows only its default.
	resp = s.admitClaim(ctx, claimCreate(t, claimSpec("provider-fast", "1Gi")))
	require.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code)
	assert.Equal(t, "spec.storageClassName", resp.Result.Details.Causes[0].Field)

	resp = s.admitClaim(ctx, claimCreate(t, claimSpec("local-path", "3Gi")))
	require.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusForbidden), resp.Result.Code)
	assert.Contains(t, resp.Result.Message, "exceeded quota: capn-workloads, requested: requests.storage=3Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi")
}

func TestAdmitStorageRefusesTenantVolumesAndClasses(t *testing.T) {
	for _, res := range []metav1.GroupVersionResource{{Version: "v1", Resource: "persistentvolumes"}, {Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}} {
		resp := admitStorage(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Resource: res, Name: "x"})
		require.False(t, resp.Allowed, res.Resource)
		assert.Equal(t, int32(http.StatusForbidden), resp.Result.Code, res.Resource)
	}
}

// The storage webhook lets through exactly the two writers of tenant PVs
// and classes: the syncer and the tenant's PV controller.
func TestStorageWebhookSkipsOnlyTheSyncerAndKCM(t *testing.T) {
	s := &Syncer{o: Options{Webhook: WebhookOptions{AdvertiseAddress: "10.0.0.1:10271"}}}
	hooks := s.webhookConfiguration().Webhooks
	require.Len(t, hooks, 3)
	storage := hooks[2]
	assert.Equal(t, storageWebhookName, storage.Name)
	require.Len(t, storage.MatchConditions, 1)
	assert.Equal(t, `!(request.userInfo.username in ["capn:syncer", "system:kube-controller-manager", `+
		`"system:serviceaccount:kube-system:persistent-volume-binder", "system:serviceaccount:kube-system:pv-protection-controller"])`,
		storage.MatchConditions[0].Expression, "pv-protection must be able to drop its finalizer from a deleted PV")
	assert.Equal(t, "https://10.0.0.1:10271"+StorageWebhookPath, *storage.ClientConfig.URL)
	assert.Empty(t, hooks[1].MatchConditions, "every claim create is checked, the controllers' too")
}

func TestHostClaimFieldsKeepTheHostsAnnotationsAndOnlyGrow(t *testing.T) {
	cur := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{"a": "b"},
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", names.TenantNameAnnotation: "data"},
	}, Spec: claimSpec("local-path", "2Gi")}
	want := cur.DeepCopy()
	want.Annotations = map[string]string{names.TenantNameAnnotation: "data"}
	assert.True(t, hostClaimFields.equal(cur, want), "the host's own annotations are no difference")

	want.Spec = claimSpec("local-path", "1Gi")
	assert.True(t, hostClaimFields.equal(cur, want), "a smaller request never shrinks the host claim")

	want.Spec = claimSpec("local-path", "3Gi")
	want.Annotations[translate.AnnSelectedNode] = "node-a"
	require.False(t, hostClaimFields.equal(cur, want))
	got := hostClaimFields.merge(cur, want)
	assert.Equal(t, "3Gi", ptr.To(got.Spec.Resources.Requests[corev1.ResourceStorage]).String())
	assert.Equal(t, "yes", got.Annotations["pv.kubernetes.io/bind-completed"])
	assert.Equal(t, "node-a", got.Annotations[translate.AnnSelectedNode])
	assert.Equal(t, "2Gi", ptr.To(cur.Spec.Resources.Requests[corev1.ResourceStorage]).String(), "cur untouched")
}
