package kubelet

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePath(t *testing.T) {
	const uid = "0b7c1d0e-3f5a-4c1e-9d7b-8a6f2e1c0d9a"
	ok := []struct {
		path string
		want Request
	}{
		{"/containerLogs/shop/web/app", Request{Verb: VerbContainerLogs, Namespace: "shop", Pod: "web", Container: "app"}},
		{"/exec/shop/web/app", Request{Verb: VerbExec, Namespace: "shop", Pod: "web", Container: "app"}},
		{"/exec/shop/web/" + uid + "/app", Request{Verb: VerbExec, Namespace: "shop", Pod: "web", UID: uid, Container: "app"}},
		{"/attach/shop/web.v1/app", Request{Verb: VerbAttach, Namespace: "shop", Pod: "web.v1", Container: "app"}},
		{"/attach/shop/web/" + uid + "/app", Request{Verb: VerbAttach, Namespace: "shop", Pod: "web", UID: uid, Container: "app"}},
		{"/run/shop/web/app", Request{Verb: VerbRun, Namespace: "shop", Pod: "web", Container: "app"}},
		{"/run/shop/web/" + uid + "/app", Request{Verb: VerbRun, Namespace: "shop", Pod: "web", UID: uid, Container: "app"}},
		{"/portForward/shop/web", Request{Verb: VerbPortForward, Namespace: "shop", Pod: "web"}},
		{"/portForward/shop/web/" + uid, Request{Verb: VerbPortForward, Namespace: "shop", Pod: "web", UID: uid}},
	}
	for _, tc := range ok {
		t.Run(tc.path, func(t *testing.T) {
			got, err := ParsePath(tc.path)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	bad := []string{
		"", "containerLogs/shop/web/app", "/", "/healthz", "/stats/summary", "/pods", "/runningpods/",
		"/metrics", "/metrics/cadvisor", "/configz", "/debug/pprof/", "/logs/", "/checkpoint/shop/web/app",
		"/containerLogs/shop/web", "/containerLogs/shop/web/app/extra", "/containerLogs/shop/web/" + uid + "/app",
		"/exec/shop/web", "/exec/shop/web/" + uid + "/app/extra", "/exec/shop/web/app/",
		"/exec//web/app", "/exec/shop//app", "/exec/shop/web/", "/exec/../web/app", "/exec/shop/../app",
		"/exec/Shop/web/app", "/exec/shop/Web/app", "/exec/shop/web/App", "/exec/shop/web/a.b",
		"/exec/shop/web%2Fx/app", "/exec/sh%6Fp/web/app", "/exec/shop/web/u_id/app", "/exec/shop/web/" + strings.Repeat("a", 65) + "/app",
		"/portForward/shop", "/portForward/shop/web/" + uid + "/extra", "/portForward/shop/web/bad.uid",
		"/portforward/shop/web", "/Exec/shop/web/app",
	}
	for _, p := range bad {
		t.Run("refuses "+p, func(t *testing.T) {
			_, err := ParsePath(p)
			assert.ErrorIs(t, err, errNoRoute)
		})
	}
}

// The handler parses r.URL.EscapedPath(): an encoded slash stays encoded
// and is refused rather than shifting segments.
func TestParsePathEscapedFromURL(t *testing.T) {
	u, err := url.Parse("https://node/exec/shop/web%2Fapp/app")
	require.NoError(t, err)
	_, err = ParsePath(u.EscapedPath())
	assert.ErrorIs(t, err, errNoRoute)

	u, err = url.Parse("https://node/exec/shop/web%20x/app")
	require.NoError(t, err)
	_, err = ParsePath(u.EscapedPath())
	assert.ErrorIs(t, err, errNoRoute)
}

func TestVerbMethods(t *testing.T) {
	assert.True(t, VerbContainerLogs.methodAllowed("GET"))
	assert.False(t, VerbContainerLogs.methodAllowed("POST"))
	assert.True(t, VerbRun.methodAllowed("POST"))
	assert.False(t, VerbRun.methodAllowed("GET"))
	for _, v := range []Verb{VerbExec, VerbAttach, VerbPortForward} {
		assert.True(t, v.methodAllowed("GET"), v)
		assert.True(t, v.methodAllowed("POST"), v)
		assert.False(t, v.methodAllowed("PUT"), v)
		assert.False(t, v.methodAllowed("DELETE"), v)
	}
}
