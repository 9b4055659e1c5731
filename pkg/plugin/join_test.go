package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"capn.dev/capn/pkg/generated/clientset/versioned"
)

const joinAnswer = `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterJoinTokenRequest",
"metadata":{"name":"demo","namespace":"default"},"spec":{"expirationSeconds":900},
"status":{"endpoint":"https://10.96.0.42:443","caCertHashes":["sha256:0123abcd"],"token":"abcdef.0123456789abcdef",
"expirationTimestamp":"2026-06-01T12:15:00Z","bootstrapKubeconfig":"apiVersion: v1\nkind: Config\n"}}`

// joinServer is a tiny apiserver: the jointoken subresource answers with
// joinAnswer (or a bare 404 when serve is false); GET of the NestedCluster
// answers 200 for "demo", 404 otherwise.
func joinServer(t *testing.T, serve bool, gotBody *map[string]any) versioned.Interface {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const base = "/apis/capn.dev/v1alpha1/namespaces/default/nestedclusters/"
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == base+"demo/jointoken" && serve:
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, gotBody)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, joinAnswer)
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

// runJoin is run with stderr kept apart and a fixed clock.
func runJoin(t *testing.T, cs versioned.Interface, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCmdNestedWithClient(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut},
		func() (versioned.Interface, string, error) { return cs, "default", nil })
	// The summary says how long is left; the answer expires at 12:15.
	defer func(old func() time.Time) { joinClock = old }(joinClock)
	joinClock = func() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) }
	cmd.SetArgs(append([]string{"join"}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestJoinPrintsKubeconfigAndSummary(t *testing.T) {
	var body map[string]any
	cs := joinServer(t, true, &body)
	out, errOut, err := runJoin(t, cs, "demo", "--ttl=30m")
	if err != nil {
		t.Fatal(err)
	}
	if out != "apiVersion: v1\nkind: Config\n" {
		t.Fatalf("stdout %q, want the bootstrap kubeconfig only", out)
	}
	for _, want := range []string{
		"Join token for nestedcluster.capn.dev/demo, expires 2026-06-01T12:15:00Z (in 15m0s).",
		"endpoint:       https://10.96.0.42:443",
		"CA cert hash:   sha256:0123abcd",
		"token:          abcdef.0123456789abcdef",
		"kubectl -n kube-system delete secret bootstrap-token-abcdef",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("summary lacks %q:\n%s", want, errOut)
		}
	}
	if body["kind"] != "NestedClusterJoinTokenRequest" || body["apiVersion"] != "capn.dev/v1alpha1" ||
		body["spec"].(map[string]any)["expirationSeconds"] != float64(1800) {
		t.Fatalf("request body %v", body)
	}
}

func TestJoinWritesBootstrapKubeconfig(t *testing.T) {
	var body map[string]any
	cs := joinServer(t, true, &body)
	path := filepath.Join(t.TempDir(), "bootstrap.kubeconfig")
	if err := os.WriteFile(path, []byte("old and longer content"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runJoin(t, cs, "demo", "--bootstrap-kubeconfig="+path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "bootstrap kubeconfig: "+path) || !strings.Contains(out, "--bootstrap-kubeconfig="+path) || errOut != "" {
		t.Errorf("stdout %q stderr %q", out, errOut)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "apiVersion: v1\nkind: Config\n" {
		t.Errorf("file %q, %v", got, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, %v; want 0600", st.Mode(), err)
	}
	if spec, _ := body["spec"].(map[string]any); len(spec) != 0 {
		t.Errorf("no --ttl must ask for the server's default, sent spec %v", spec)
	}
}

func TestJoinOutput(t *testing.T) {
	var body map[string]any
	cs := joinServer(t, true, &body)
	out, _, err := runJoin(t, cs, "demo", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kind   string
		Status struct{ Token, Endpoint string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Kind != "NestedClusterJoinTokenRequest" ||
		got.Status.Token != "abcdef.0123456789abcdef" || got.Status.Endpoint != "https://10.96.0.42:443" {
		t.Errorf("-o json: %v\n%s", err, out)
	}
	out, _, err = runJoin(t, cs, "demo", "-o", "jsonpath={.status.caCertHashes[0]}")
	if err != nil || out != "sha256:0123abcd" {
		t.Errorf("-o jsonpath: %q, %v", out, err)
	}
}

func TestJoinErrors(t *testing.T) {
	var body map[string]any
	if _, _, err := runJoin(t, joinServer(t, true, &body), "demo", "--ttl=-1m"); err == nil || !strings.Contains(err.Error(), "--ttl") {
		t.Errorf("negative --ttl: %v", err)
	}
	if _, _, err := runJoin(t, joinServer(t, true, &body), "demo", "--ttl=90500ms"); err == nil || !strings.Contains(err.Error(), "--ttl") {
		t.Errorf("fractional --ttl: %v", err)
	}
	cs := joinServer(t, false, &body)
	if _, _, err := runJoin(t, cs, "demo"); err == nil || !strings.Contains(err.Error(), "does not serve nestedclusters/jointoken yet") {
		t.Errorf("old server: %v", err)
	}
	if _, _, err := runJoin(t, cs, "nope"); err == nil || err.Error() != `nestedclusters.capn.dev "nope" not found` {
		t.Errorf("missing cluster: %v", err)
	}
}
