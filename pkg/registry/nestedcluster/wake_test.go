package nestedcluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

// A /kubeconfig request for a cluster asleep for inactivity stamps the
// wake request on it (on the real store); for one awake, or asleep
// because its spec says so, it writes nothing.
func TestKubeconfigRequestWakesAnInactiveCluster(t *testing.T) {
	e := newEnv(t)
	r := nestedcluster.NewKubeconfigREST(e.s, &recordingIssuer{}, 2*time.Hour)
	alice := genericapirequest.WithUser(e.ctx, &user.DefaultInfo{Name: "alice"})
	post := func(name string) {
		t.Helper()
		_, err := r.Create(alice, name, &capn.NestedClusterKubeconfigRequest{}, nil, &metav1.CreateOptions{})
		require.NoError(t, err)
	}
	setInactive := func(name string, status metav1.ConditionStatus) {
		t.Helper()
		nc := e.get(name)
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInactive, Status: status, Reason: "Test"})
		_, err := e.updateStatus(nc)
		require.NoError(t, err)
	}

	e.create("awake", "v1.37.2")
	before := e.get("awake").ResourceVersion
	post("awake")
	assert.Equal(t, before, e.get("awake").ResourceVersion, "an awake cluster is not written")

	e.create("woken", "v1.37.2")
	setInactive("woken", metav1.ConditionFalse)
	before = e.get("woken").ResourceVersion
	post("woken")
	assert.Equal(t, before, e.get("woken").ResourceVersion)

	e.create("idle", "v1.37.2")
	setInactive("idle", metav1.ConditionTrue)
	start := time.Now().Add(-time.Second)
	post("idle")
	got := e.get("idle")
	at, err := time.Parse(time.RFC3339, got.Annotations[v1alpha1.WakeRequestedAnnotation])
	require.NoError(t, err, "annotations %v", got.Annotations)
	assert.False(t, at.Before(start.Truncate(time.Second)), "stamped %s, request at %s", at, start)
	assert.Equal(t, int64(1), got.Generation, "metadata only: the spec generation stays")
}

// A join token needs the tenant apiserver: for a sleeping cluster the
// answer is 409 saying why, nothing reaches the issuer, and one asleep
// for inactivity is asked to wake.
func TestJoinTokenForASleepingCluster(t *testing.T) {
	e := newEnv(t)
	issuer := &recordingJoinIssuer{}
	r := nestedcluster.NewJoinTokenREST(e.s, issuer, time.Hour)
	alice := genericapirequest.WithUser(e.ctx, &user.DefaultInfo{Name: "alice"})
	sleep := func(name string, inactive bool) {
		t.Helper()
		e.create(name, "v1.37.2")
		nc := e.get(name)
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionSleeping, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAsleep})
		if inactive {
			meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInactive, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNoRequests})
		}
		_, err := e.updateStatus(nc)
		require.NoError(t, err)
	}
	sleep("asked", false)
	sleep("idle", true)
	for name, want := range map[string]string{"asked": "kubectl nested wake asked", "idle": "waking now"} {
		_, err := r.Create(alice, name, &capn.NestedClusterJoinTokenRequest{}, nil, &metav1.CreateOptions{})
		require.True(t, apierrors.IsConflict(err), "%s: %v", name, err)
		assert.Contains(t, err.Error(), want)
	}
	assert.Empty(t, issuer.calls)
	assert.Empty(t, e.get("asked").Annotations[v1alpha1.WakeRequestedAnnotation], "a cluster asleep by its spec stays asleep")
	assert.NotEmpty(t, e.get("idle").Annotations[v1alpha1.WakeRequestedAnnotation])
}
