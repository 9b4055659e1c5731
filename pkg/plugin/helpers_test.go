package plugin

import (
	"bytes"
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	"capn.dev/capn/pkg/generated/clientset/versioned/fake"
)

// run executes `kubectl nested ARGS` against cs in namespace "default".
func run(t *testing.T, cs versioned.Interface, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCmdNestedWithClient(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut},
		func() (versioned.Interface, string, error) { return cs, "default", nil })
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func demo() *v1alpha1.NestedCluster {
	return &v1alpha1.NestedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", ResourceVersion: "7"},
		Spec: v1alpha1.NestedClusterSpec{
			Version:           "v1.36.3",
			APIServer:         v1alpha1.APIServerSpec{ComponentSpec: v1alpha1.ComponentSpec{Replicas: ptr.To[int32](1)}},
			ControllerManager: v1alpha1.ComponentSpec{Replicas: ptr.To[int32](1)},
			Scheduler:         v1alpha1.ComponentSpec{Replicas: ptr.To[int32](1)},
			Etcd:              v1alpha1.EtcdSpec{Managed: &v1alpha1.ManagedEtcd{Replicas: ptr.To[int32](3)}},
		},
	}
}

func newFake(objs ...*v1alpha1.NestedCluster) *fake.Clientset {
	cs := fake.NewSimpleClientset()
	for _, o := range objs {
		if err := cs.Tracker().Add(o); err != nil {
			panic(err)
		}
	}
	return cs
}
