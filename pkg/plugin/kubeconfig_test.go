package plugin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"capn.dev/capn/pkg/generated/clientset/versioned"
)

// kubeconfigServer is a tiny apiserver: the kubeconfig subresource answers
// with serve (or a bare 404 when serve is nil); GET of the NestedCluster
// answers 200 for "demo", 404 otherwise.
func kubeconfigServer(t *testing.T, serve bool, gotBody *map[string]any) versioned.Interface {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const base = "/apis/capn.dev/v1alpha1/namespaces/default/nestedclusters/"
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == base+"demo/kubeconfig" && serve:
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, gotBody)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterKubeconfigRequest","status":{"kubeconfig":"apiVersion: v1\nkind: Config\n"}}`)
		case r.Method == http.MethodGet && r.URL.Path == base+"demo":
			_, _ = io.WriteString(w, `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedCluster","metadata":{"name":"demo","namespace":"default"}}`)
		case strings.HasPrefix(r.URL.Path, base+"demo"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nestedclusters.capn.dev \"nope\" not found","reason":"NotFound","details":{"name":"nope","group":"capn.dev","kind":"nestedclusters"},"code":404}`)
		}
	}))
	t.Cleanup(srv.Close)
	cs, err := versioned.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestKubeconfig(t *testing.T) {
	var body map[string]any
	cs := kubeconfigServer(t, true, &body)
	out, err := run(t, cs, "kubeconfig", "demo", "--expiration=1h")
	if err != nil {
		t.Fatal(err)
	}
	if out != "apiVersion: v1\nkind: Config\n" {
		t.Fatalf("output %q", out)
	}
	if body["kind"] != "NestedClusterKubeconfigRequest" || body["apiVersion"] != "capn.dev/v1alpha1" ||
		body["spec"].(map[string]any)["expirationSeconds"] != float64(3600) {
		t.Fatalf("request body %v", body)
	}
}

func TestKubeconfigNotServed(t *testing.T) {
	var body map[string]any
	cs := kubeconfigServer(t, false, &body)
	_, err := run(t, cs, "kubeconfig", "demo")
	if err == nil || !strings.Contains(err.Error(), "this capn-apiserver does not serve nestedclusters/kubeconfig yet") {
		t.Fatalf("err = %v", err)
	}
	// A missing NestedCluster is reported as the server says.
	_, err = run(t, cs, "kubeconfig", "nope")
	if err == nil || err.Error() != `nestedclusters.capn.dev "nope" not found` {
		t.Fatalf("err = %v", err)
	}
}
