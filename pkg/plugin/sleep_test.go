package plugin

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// sleep and wake send a merge patch of spec.sleep.asleep and nothing else.
func TestSleepAndWakePatchSpecSleep(t *testing.T) {
	cs := newFake(demo())
	out, err := run(t, cs, "sleep", "demo")
	require.NoError(t, err)
	assert.Equal(t, "nestedcluster.capn.dev/demo put to sleep\n", out)
	nc, err := cs.CapnV1alpha1().NestedClusters("default").Get(context.Background(), "demo", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, nc.Spec.Sleep.Asleep)

	out, err = run(t, cs, "wake", "demo")
	require.NoError(t, err)
	assert.Equal(t, "nestedcluster.capn.dev/demo woken\n", out)
	var patches []string
	for _, a := range cs.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			assert.Equal(t, types.MergePatchType, p.GetPatchType())
			patches = append(patches, string(p.GetPatch()))
		}
	}
	assert.Equal(t, []string{`{"spec":{"sleep":{"asleep":true}}}`, `{"spec":{"sleep":{"asleep":false}}}`}, patches)
}

// --wait for sleep ends on Asleep for the patched generation, not on an
// older Sleeping condition or on FallingAsleep.
func TestSleepWaitConditions(t *testing.T) {
	nc := demo()
	nc.Generation = 3
	asleep := asleepAt(3)
	set := func(gen int64, reason string) {
		nc.Status.ObservedGeneration = gen
		nc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionSleeping, Status: metav1.ConditionTrue, Reason: reason}}
	}
	set(2, v1alpha1.ReasonAsleep)
	done, _ := asleep(nc)
	assert.False(t, done, "an older generation's Asleep")
	set(3, v1alpha1.ReasonFallingAsleep)
	done, _ = asleep(nc)
	assert.False(t, done)
	set(3, v1alpha1.ReasonAsleep)
	done, _ = asleep(nc)
	assert.True(t, done)

	nc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
	nc.Status.ObservedGeneration = 2
	done, _ = readyAt(3)(nc)
	assert.False(t, done, "Ready from before the wake")
	nc.Status.ObservedGeneration = 3
	done, _ = readyAt(3)(nc)
	assert.True(t, done)
}
