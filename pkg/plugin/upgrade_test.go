package plugin

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned/fake"
)

// upgradeReactor answers POST /upgrade like the server: spec.version set.
func upgradeReactor(cs *fake.Clientset, sent *string, err error) {
	upgradeReactorFrom(cs, sent, err, demo)
}

// upgradeReactorFrom answers POST /upgrade with base() at the requested version.
func upgradeReactorFrom(cs *fake.Clientset, sent *string, err error, base func() *v1alpha1.NestedCluster) {
	cs.PrependReactor("create", "nestedclusters", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "upgrade" {
			return false, nil, nil
		}
		if err != nil {
			return true, nil, err
		}
		req := a.(k8stesting.CreateAction).GetObject().(*v1alpha1.NestedClusterUpgrade)
		*sent = req.Version
		nc := base()
		nc.Spec.Version = req.Version
		nc.ResourceVersion = "8"
		return true, nc, nil
	})
}

func TestUpgradeRequest(t *testing.T) {
	cs := newFake(demo())
	var sent string
	upgradeReactor(cs, &sent, nil)
	out, err := run(t, cs, "upgrade", "demo", "--to", "v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	if sent != "v1.37.2" {
		t.Fatalf("sent version %q", sent)
	}
	if out != "nestedcluster.capn.dev/demo upgrade to v1.37.2 requested\n" {
		t.Fatalf("output %q", out)
	}
	if out, err := run(t, cs, "upgrade", "demo", "--to", "v1.37.2", "-o", "yaml"); err != nil || !strings.Contains(out, "version: v1.37.2") || !strings.Contains(out, "kind: NestedCluster") {
		t.Fatalf("-o yaml printed %q (%v)", out, err)
	}
}

func TestUpgradeAPIErrorUnchanged(t *testing.T) {
	cs := newFake(demo())
	apiErr := apierrors.NewInvalid(schema.GroupKind{Group: "capn.dev", Kind: "NestedClusterUpgrade"}, "demo", field.ErrorList{
		field.Invalid(field.NewPath("version"), "v1.35.0", "downgrade from v1.36.3 to v1.35.0 is not supported"),
	})
	var sent string
	upgradeReactor(cs, &sent, apiErr)
	_, err := run(t, cs, "upgrade", "demo", "--to", "v1.35.0")
	if err == nil || err.Error() != apiErr.Error() {
		t.Fatalf("err = %v, want %v", err, apiErr)
	}
	if _, err := run(t, cs, "upgrade", "demo"); err == nil || !strings.Contains(err.Error(), "--to is required") {
		t.Fatalf("missing --to: %v", err)
	}
}

func withStatus(phase v1alpha1.NestedClusterPhase, component string, finished bool, versions [3]string) *v1alpha1.NestedCluster {
	nc := demo()
	nc.Spec.Version = "v1.37.2"
	nc.Status.Phase = phase
	nc.Status.Upgrade = &v1alpha1.UpgradeStatus{From: "v1.36.3", To: "v1.37.2", Component: component}
	if finished {
		nc.Status.Upgrade.FinishedAt = &metav1.Time{Time: time.Now()}
	}
	nc.Status.APIServer.Version = versions[0]
	nc.Status.ControllerManager.Version = versions[1]
	nc.Status.Scheduler.Version = versions[2]
	return nc
}

// startWatch makes Watch return a watcher that has events queued (so the
// wait may stop reading early) and stays open after them.
func startWatch(t *testing.T, cs *fake.Clientset, events ...*v1alpha1.NestedCluster) {
	ch := make(chan watch.Event, len(events))
	for _, ev := range events {
		ch <- watch.Event{Type: watch.Modified, Object: ev}
	}
	w := watch.NewProxyWatcher(ch)
	cs.PrependWatchReactor("nestedclusters", k8stesting.DefaultWatchReactor(w, nil))
	t.Cleanup(w.Stop)
}

func TestUpgradeWaitNotDoneUntilEveryComponentRunsTarget(t *testing.T) {
	old, cur := "v1.36.3", "v1.37.2"
	if upgradeDone(withStatus(v1alpha1.PhaseReady, "", true, [3]string{cur, cur, old}), cur) {
		t.Fatal("done with the scheduler still on the old version")
	}
	if upgradeDone(withStatus(v1alpha1.PhaseUpgrading, "", false, [3]string{cur, cur, cur}), cur) {
		t.Fatal("done without finishedAt")
	}
	if !upgradeDone(withStatus(v1alpha1.PhaseReady, "", true, [3]string{cur, cur, cur}), cur) {
		t.Fatal("not done when finished")
	}
}

func TestUpgradeWaitTimeout(t *testing.T) {
	cs := newFake(demo())
	var sent string
	upgradeReactor(cs, &sent, nil)
	startWatch(t, cs)
	_, err := run(t, cs, "upgrade", "demo", "--to", "v1.37.2", "--wait", "--timeout=100ms")
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
}
