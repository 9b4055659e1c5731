package kubelet

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// metricsFixture is a handler in front of a host kubelet that answers
// testdata/metrics/host.txt, with a tenant that knows the token "good"
// (user metrics-server) and allows it nodes/metrics on node-1 only.
func metricsFixture(t *testing.T, qps float32, burst int) (*MetricsHandler, *int) {
	t.Helper()
	host, err := os.ReadFile(filepath.Join("testdata", "metrics", "host.txt"))
	require.NoError(t, err)
	kubelet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics/resource" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(host)
	}))
	t.Cleanup(kubelet.Close)
	reviews := 0
	tenant := fake.NewSimpleClientset()
	tenant.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		reviews++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if tr.Spec.Token == "good" || tr.Spec.Token == "other" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:" + tr.Spec.Token}}
		}
		return true, tr, nil
	})
	tenant.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:kube-system:good" &&
			ra.Verb == "get" && ra.Resource == "nodes" && ra.Subresource == "metrics" && ra.Name == "node-1"
		return true, sar, nil
	})
	h, err := NewMetricsHandler(MetricsOptions{
		Authentication: tenant.AuthenticationV1(), Authorization: tenant.AuthorizationV1(),
		WorkloadNamespace: "capn-a-w", TenantPod: tenantA,
		HostKubelet: func(node string) (string, bool) {
			return kubelet.URL + "/metrics/resource", node == "node-1" || node == "node-2"
		},
		Transport: http.DefaultTransport, QPS: qps, Burst: burst,
	})
	require.NoError(t, err)
	return h, &reviews
}

func metricsGet(h http.Handler, method, path, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestMetricsHandlerAuthorizesAndFilters(t *testing.T) {
	h, reviews := metricsFixture(t, 100, 100)
	for _, tc := range []struct {
		name, method, path, token string
		code                      int
	}{
		{"no token", "GET", ResourceMetricsPath("node-1"), "", http.StatusUnauthorized},
		{"unknown token", "GET", ResourceMetricsPath("node-1"), "forged", http.StatusUnauthorized},
		{"not allowed nodes/metrics", "GET", ResourceMetricsPath("node-1"), "other", http.StatusForbidden},
		{"allowed elsewhere only", "GET", ResourceMetricsPath("node-2"), "good", http.StatusForbidden},
		{"kubelet's own path", "GET", "/metrics/resource", "good", http.StatusNotFound},
		{"stats", "GET", "/stats/summary", "good", http.StatusNotFound},
		{"write", "POST", ResourceMetricsPath("node-1"), "good", http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := metricsGet(h, tc.method, tc.path, tc.token)
			assert.Equal(t, tc.code, w.Code, w.Body.String())
			assert.NotContains(t, w.Body.String(), "capn-")
		})
	}
	w := metricsGet(h, "GET", ResourceMetricsPath("node-1"), "good")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Contains(t, w.Body.String(), `container_cpu_usage_seconds_total{container="web",namespace="shop",pod="web-7d9f"} 12.5`)
	assert.NotContains(t, w.Body.String(), "db-0")
	before := *reviews
	require.Equal(t, http.StatusOK, metricsGet(h, "GET", ResourceMetricsPath("node-1"), "good").Code)
	assert.Equal(t, before, *reviews, "an allowed token is remembered, not reviewed on every scrape")
}

func TestMetricsHandlerUnknownNode(t *testing.T) {
	h, _ := metricsFixture(t, 100, 100)
	// Authorized by the tenant (a Node object of that name may exist), but
	// not one of this syncer's virtual Nodes.
	h.o.HostKubelet = func(string) (string, bool) { return "", false }
	assert.Equal(t, http.StatusNotFound, metricsGet(h, "GET", ResourceMetricsPath("node-1"), "good").Code)
}

func TestMetricsHandlerBoundsTheRate(t *testing.T) {
	h, _ := metricsFixture(t, 0.001, 3)
	for range 3 {
		require.Equal(t, http.StatusOK, metricsGet(h, "GET", ResourceMetricsPath("node-1"), "good").Code)
	}
	w := metricsGet(h, "GET", ResourceMetricsPath("node-1"), "good")
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
}
