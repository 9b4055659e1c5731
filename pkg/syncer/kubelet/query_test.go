package kubelet

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func query(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	require.NoError(t, err)
	return q
}

func TestLogOptions(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o, err := LogOptions(query(t, "follow=true&previous=1&timestamps=true&tailLines=10&limitBytes=100&sinceTime="+url.QueryEscape(since.Format(time.RFC3339))+"&stream=Stderr"), "app")
	require.NoError(t, err)
	assert.Equal(t, "app", o.Container)
	assert.True(t, o.Follow)
	assert.True(t, o.Previous)
	assert.True(t, o.Timestamps)
	assert.Equal(t, ptr.To[int64](10), o.TailLines)
	assert.Equal(t, ptr.To[int64](100), o.LimitBytes)
	require.NotNil(t, o.SinceTime)
	assert.True(t, since.Equal(o.SinceTime.Time))
	assert.Nil(t, o.SinceSeconds)
	assert.Equal(t, ptr.To(corev1.LogStreamStderr), o.Stream)

	o, err = LogOptions(query(t, "sinceSeconds=30&stream=All"), "app")
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int64](30), o.SinceSeconds)
	assert.Nil(t, o.Stream, "All is the default and is left out")
	assert.False(t, o.Follow)

	o, err = LogOptions(url.Values{}, "app")
	require.NoError(t, err)
	assert.Equal(t, &corev1.PodLogOptions{Container: "app"}, o)

	// The kubelet's legacy "tail" wins over tailLines; "all" means none.
	o, err = LogOptions(query(t, "tailLines=5&tail=7"), "app")
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int64](7), o.TailLines)
	o, err = LogOptions(query(t, "tailLines=5&tail=all"), "app")
	require.NoError(t, err)
	assert.Nil(t, o.TailLines)

	for _, raw := range []string{
		"container=other", "command=ls", "insecureSkipTLSVerifyBackend=true", "follow=true&follow=false",
		"follow=yes", "tailLines=-1", "tailLines=x", "tailLines=99999999999999999999", "limitBytes=0",
		"sinceSeconds=0", "sinceTime=yesterday", "sinceSeconds=1&sinceTime=2026-01-02T03:04:05Z", "stream=both", "tail=some",
	} {
		_, err := LogOptions(query(t, raw), "app")
		assert.Error(t, err, raw)
	}
}

func TestStreamQuery(t *testing.T) {
	q, err := StreamQuery(VerbExec, query(t, "command=sh&command=-c&command=echo+hi&input=1&output=1&error=1"), "app")
	require.NoError(t, err)
	assert.Equal(t, url.Values{
		"container": {"app"}, "command": {"sh", "-c", "echo hi"},
		"stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"},
	}, q)

	// A TTY merges stderr, as on a kubelet.
	q, err = StreamQuery(VerbExec, query(t, "command=sh&input=1&output=1&error=1&tty=1"), "app")
	require.NoError(t, err)
	assert.Equal(t, url.Values{"container": {"app"}, "command": {"sh"}, "stdin": {"true"}, "stdout": {"true"}, "tty": {"true"}}, q)

	q, err = StreamQuery(VerbAttach, query(t, "output=1&error=0"), "sidecar")
	require.NoError(t, err)
	assert.Equal(t, url.Values{"container": {"sidecar"}, "stdout": {"true"}}, q)

	long := strings.Repeat("x", maxCommandArgBytes+1)
	many := strings.Repeat("command=a&", maxCommandArgs+1) + "output=1"
	for _, tc := range []struct {
		v   Verb
		raw string
	}{
		{VerbExec, "output=1"},                        // no command
		{VerbExec, "command=ls"},                      // no stream
		{VerbExec, "command=ls&stdin=true&output=1"},  // management names are not kubelet names
		{VerbExec, "command=ls&output=1&container=x"}, // the container is the path's
		{VerbExec, "command=ls&output=1&output=1"},
		{VerbExec, "command=ls&output=maybe"},
		{VerbExec, "command=" + long + "&output=1"},
		{VerbExec, many},
		{VerbAttach, "command=ls&output=1"},
		{VerbAttach, "output=1&port=80"},
	} {
		_, err := StreamQuery(tc.v, query(t, tc.raw), "app")
		assert.Error(t, err, "%s %.80s", tc.v, tc.raw)
	}
}

func TestPortForwardQuery(t *testing.T) {
	q, err := PortForwardQuery(query(t, "port=80,8443"))
	require.NoError(t, err)
	assert.Equal(t, url.Values{"ports": {"80", "8443"}}, q)

	q, err = PortForwardQuery(url.Values{})
	require.NoError(t, err)
	assert.Empty(t, q, "SPDY clients name ports per stream")

	for _, raw := range []string{
		"port=0", "port=65536", "port=http", "port=80,", "port=80&port=81", "ports=80", "port=80&command=ls",
		"port=" + strings.TrimSuffix(strings.Repeat("1,", maxPorts+1), ","),
	} {
		_, err := PortForwardQuery(query(t, raw))
		assert.Error(t, err, raw)
	}
}

func TestRunCommand(t *testing.T) {
	cmd, err := RunCommand(query(t, "cmd="+url.QueryEscape("ls  -l /")))
	require.NoError(t, err)
	assert.Equal(t, []string{"ls", "-l", "/"}, cmd)

	for _, raw := range []string{"", "cmd=", "cmd=+", "cmd=ls&cmd=ps", "command=ls", "cmd=ls&output=1"} {
		_, err := RunCommand(query(t, raw))
		assert.Error(t, err, raw)
	}
}

// A refusal names the parameter, never the value sent.
func TestQueryErrorsDoNotEchoValues(t *testing.T) {
	_, err := LogOptions(query(t, "tailLines=<script>"), "app")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "<script>")
	assert.Contains(t, err.Error(), "tailLines")
}
