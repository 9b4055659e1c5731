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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// webhookSyncer is a Syncer with a fake management cluster that allocates
// 10.96.7.7 to every Service it creates.
func webhookSyncer() (*Syncer, *fake.Clientset) {
	host := fake.NewClientset()
	host.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = "10.96.7.7"
		}
		return false, nil, nil
	})
	return &Syncer{o: Options{WorkloadNamespace: testWorkloads, Host: host}}, host
}

func serviceCreate(t *testing.T, spec corev1.ServiceSpec, dryRun bool) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: spec})
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Service"},
		Namespace: "shop", Name: "web", Object: runtime.RawExtension{Raw: raw}, DryRun: ptr.To(dryRun),
	}
}

var port80 = []corev1.ServicePort{{Port: 80}}

func TestAdmitServiceTakesTheHostsIP(t *testing.T) {
	s, host := webhookSyncer()
	resp := s.admitService(context.Background(), serviceCreate(t, corev1.ServiceSpec{Ports: port80}, false))
	require.True(t, resp.Allowed, resp.Result)
	assert.JSONEq(t, `[{"op":"add","path":"/spec/clusterIP","value":"10.96.7.7"},{"op":"add","path":"/spec/clusterIPs","value":["10.96.7.7"]}]`, string(resp.Patch))
	svcs, err := host.CoreV1().Services(testWorkloads).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, svcs.Items, 1)
	assert.Empty(t, svcs.Items[0].Labels["capn.dev/tenant-uid"], "pending: the tenant Service has no UID yet")
}

func TestAdmitServiceDryRunTouchesNothing(t *testing.T) {
	s, host := webhookSyncer()
	resp := s.admitService(context.Background(), serviceCreate(t, corev1.ServiceSpec{Ports: port80}, true))
	require.True(t, resp.Allowed)
	assert.Nil(t, resp.Patch)
	assert.Empty(t, host.Actions())
}

func TestAdmitServiceRefusesNodePortOnTheField(t *testing.T) {
	s, host := webhookSyncer()
	resp := s.admitService(context.Background(), serviceCreate(t, corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: port80}, false))
	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result)
	assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code)
	require.NotNil(t, resp.Result.Details)
	require.NotEmpty(t, resp.Result.Details.Causes)
	assert.Equal(t, "spec.type", resp.Result.Details.Causes[0].Field)
	assert.Empty(t, host.Actions())
}
