package plugin

import (
	"encoding/json"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// scaleReactors serve /scale from a fixed resourceVersion and record the update.
func scaleReactors(cs interface {
	PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
}, updated **autoscalingv1.Scale, updateErr error) {
	cs.PrependReactor("get", "nestedclusters", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		return true, &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", ResourceVersion: "7"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: 1},
		}, nil
	})
	cs.PrependReactor("update", "nestedclusters", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		if updateErr != nil {
			return true, nil, updateErr
		}
		s := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		*updated = s
		return true, s, nil
	})
}

func TestScaleAPIServerUsesScaleSubresource(t *testing.T) {
	cs := newFake(demo())
	var updated *autoscalingv1.Scale
	scaleReactors(cs, &updated, nil)
	out, err := run(t, cs, "scale", "demo", "--component=apiserver", "--replicas=3")
	if err != nil {
		t.Fatal(err)
	}
	if out != "nestedcluster.capn.dev/demo scaled\n" {
		t.Fatalf("output %q", out)
	}
	if updated == nil || updated.Spec.Replicas != 3 || updated.ResourceVersion != "7" {
		t.Fatalf("update sent %+v, want replicas 3 with the read resourceVersion 7", updated)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" {
			t.Fatalf("apiserver scaling must not patch: %v", a)
		}
	}
}

func TestScaleAPIServerConflictReachesUser(t *testing.T) {
	cs := newFake(demo())
	var updated *autoscalingv1.Scale
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "capn.dev", Resource: "nestedclusters"}, "demo",
		errString("the object has been modified; please apply your changes to the latest version and try again"))
	scaleReactors(cs, &updated, conflict)
	_, err := run(t, cs, "scale", "demo", "--replicas=3")
	if err == nil || err.Error() != conflict.Error() || !apierrors.IsConflict(err) {
		t.Fatalf("err = %v, want the conflict unchanged", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestScaleOtherComponentsMergePatch(t *testing.T) {
	for component, field := range map[string]string{"controller-manager": "controllerManager", "scheduler": "scheduler"} {
		t.Run(component, func(t *testing.T) {
			cs := newFake(demo())
			out, err := run(t, cs, "scale", "demo", "--component="+component, "--replicas=2")
			if err != nil {
				t.Fatal(err)
			}
			if out != "nestedcluster.capn.dev/demo scaled\n" {
				t.Fatalf("output %q", out)
			}
			var patch k8stesting.PatchAction
			for _, a := range cs.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok {
					patch = p
				}
			}
			if patch == nil || patch.GetPatchType() != "application/merge-patch+json" {
				t.Fatalf("no merge patch sent: %v", cs.Actions())
			}
			if want := `{"spec":{"` + field + `":{"replicas":2}}}`; string(patch.GetPatch()) != want {
				t.Fatalf("patch %s, want %s", patch.GetPatch(), want)
			}
			nc, _ := cs.CapnV1alpha1().NestedClusters("default").Get(t.Context(), "demo", metav1.GetOptions{})
			if *nc.Spec.APIServer.Replicas != 1 {
				t.Fatalf("apiserver replicas changed")
			}
		})
	}
}

func TestScaleOutputJSON(t *testing.T) {
	cs := newFake(demo())
	out, err := run(t, cs, "scale", "demo", "--component=scheduler", "--replicas=2", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || got["kind"] != "NestedCluster" || got["apiVersion"] != "capn.dev/v1alpha1" {
		t.Fatalf("-o json printed %s (%v)", out, err)
	}
	var updated *autoscalingv1.Scale
	scaleReactors(cs, &updated, nil)
	if out, err = run(t, cs, "scale", "demo", "--replicas=2", "-o", "name"); err != nil || out != "nestedcluster.capn.dev/demo\n" {
		t.Fatalf("-o name printed %q (%v)", out, err)
	}
	if out, err = run(t, cs, "scale", "demo", "--replicas=2", "-o", "yaml"); err != nil || !strings.Contains(out, "kind: Scale") {
		t.Fatalf("-o yaml of the apiserver's /scale answer printed %q (%v)", out, err)
	}
}

func TestScaleRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--component=etcd", "--replicas=3"}, "etcd replicas are immutable"},
		{[]string{"--component=proxy", "--replicas=3"}, `unknown --component "proxy"`},
		{[]string{"--component=scheduler"}, "--replicas is required"},
	} {
		cs := newFake(demo())
		_, err := run(t, cs, append([]string{"scale", "demo"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
		if n := len(cs.Actions()); n != 0 {
			t.Errorf("%v: %d API calls made, want none", tc.args, n)
		}
	}
}
