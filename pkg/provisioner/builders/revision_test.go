package builders

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func TestRevisionOf(t *testing.T) {
	for v, want := range map[string]int{"": 1, "2": 2, "7": 7, "0": 1, "-3": 1, "x": 1} {
		o := &metav1.ObjectMeta{}
		if v != "" {
			o.Annotations = map[string]string{TemplateRevisionAnnotation: v}
		}
		assert.Equal(t, want, RevisionOf(o), "annotation %q", v)
	}
}

// Revisions are per component: etcd can stay at 1 while the others move,
// and each workload records the revision it was rendered at.
func TestRevisionsPerComponent(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/minimal/input.yaml")
	p := defaultParams
	p.Revisions = TemplateRevisions{v1alpha1.ComponentEtcd: 1}
	objs, err := All(nc, p)
	assert.NoError(t, err)
	seen := 0
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.StatefulSet:
			seen++
			assert.Equal(t, 1, RevisionOf(w))
			assert.NotContains(t, w.Annotations, TemplateRevisionAnnotation)
			assert.Equal(t, int32(10), w.Spec.Template.Spec.Containers[0].StartupProbe.PeriodSeconds)
			assert.Equal(t, int32(30), w.Spec.Template.Spec.Containers[0].StartupProbe.FailureThreshold)
		case *appsv1.Deployment:
			seen++
			assert.Equal(t, LatestTemplateRevision, RevisionOf(w), w.Name)
			for _, c := range w.Spec.Template.Spec.Containers {
				if c.Name == w.Name {
					assert.Equal(t, int32(1), c.StartupProbe.PeriodSeconds, w.Name)
					assert.Equal(t, int32(240), c.StartupProbe.FailureThreshold, "%s: the same 240 s budget", w.Name)
				}
			}
		}
	}
	assert.Equal(t, 4, seen)
}

// A provider that pins an older target (--template-revision) gets it for
// every new workload; out of range means the latest.
func TestTargetRevision(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/minimal/input.yaml")
	for target, want := range map[int]int{0: LatestTemplateRevision, 1: 1, LatestTemplateRevision: LatestTemplateRevision, LatestTemplateRevision + 1: LatestTemplateRevision, -1: LatestTemplateRevision} {
		p := defaultParams
		p.TemplateRevision = target
		assert.Equal(t, want, p.TargetRevision(), "target %d", target)
		objs, err := All(nc, p)
		assert.NoError(t, err)
		for _, o := range objs {
			switch o.(type) {
			case *appsv1.StatefulSet, *appsv1.Deployment:
				assert.Equal(t, want, RevisionOf(o), "target %d: %s", target, o.GetName())
			}
		}
	}
}
