package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestManagementRequestsCounted checks that requests through the wrapped
// management config land in capn_syncer_management_requests_total by the
// verb the apiserver sees, failed ones included, and that /metrics serves
// the counter.
func TestManagementRequestsCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods"):
			_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
		case r.Method == http.MethodPost:
			_, _ = io.WriteString(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"w"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	countManagementRequests(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = client.CoreV1().Pods("w").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Pods("w").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Secrets("w").Get(ctx, "s", metav1.GetOptions{})
	require.Error(t, err)
	_, err = client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	require.Error(t, err)

	health := httptest.NewServer(metricsHandler())
	defer health.Close()
	resp, err := http.Get(health.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, want := range []string{
		`capn_syncer_management_requests_total{resource="pods",verb="list"} 1`,
		`capn_syncer_management_requests_total{resource="pods",verb="create"} 1`,
		`capn_syncer_management_requests_total{resource="secrets",verb="get"} 1`,
		`capn_syncer_management_requests_total{resource="nodes",verb="get"} 1`,
		"process_resident_memory_bytes",
	} {
		assert.Contains(t, string(body), want)
	}
}
