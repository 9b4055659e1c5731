package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/versions"
)

const (
	oldVersion = "v1.36.3"
	newVersion = "v1.37.2"
)

func (c *counting) ListPods(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	c.mu.Lock()
	c.reads = append(c.reads, "list Pod/"+namespace+"?"+selector.String())
	c.mu.Unlock()
	return c.Management.ListPods(ctx, namespace, selector)
}

// upgradeFixture is a Ready cluster at oldVersion with a clock the test
// moves: every sync happens a minute after the one before.
type upgradeFixture struct {
	*fixture
	clock time.Time
}

func newUpgradeFixture(t *testing.T) *upgradeFixture {
	t.Helper()
	f := &upgradeFixture{fixture: newFixture(t, testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Version = oldVersion })), clock: testNow}
	f.c.now = func() time.Time { return f.clock }
	f.step()
	f.markReady()
	f.step()
	f.c.tenants.tenantWG.Wait() // the tenant bootstrap the apiserver's readiness started
	f.step()
	if f.nc.Status.Phase != v1alpha1.PhaseReady {
		t.Fatalf("setup: phase %q, want Ready", f.nc.Status.Phase)
	}
	return f
}

// step advances the clock a minute, syncs and checks the skew invariant.
func (f *upgradeFixture) step() time.Duration {
	f.t.Helper()
	f.clock = f.clock.Add(time.Minute)
	after := f.sync()
	f.checkSkew()
	return after
}

// setVersion is a user's (or POST .../upgrade's) change of spec.version.
func (f *upgradeFixture) setVersion(v string) {
	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Version = v; nc.Generation++ })
}

func (f *upgradeFixture) deployment(name string) *appsv1.Deployment {
	f.t.Helper()
	d, err := f.kube.AppsV1().Deployments(managementNamespace(f.nc)).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// version is the version capn last applied to a component.
func (f *upgradeFixture) version(name string) string {
	return f.deployment(name).Spec.Template.Annotations[provisioner.VersionAnnotation]
}

// versions lists apiserver, controller-manager and scheduler versions.
func (f *upgradeFixture) versions() []string {
	return []string{f.version(provisioner.APIServerName), f.version(provisioner.ControllerManagerName), f.version(provisioner.SchedulerName)}
}

// rollout plays the Deployment controller for one component: done means
// every replica is updated and ready; otherwise no new pod is yet, and the
// old ones still serve.
func (f *upgradeFixture) rollout(name string, done bool) {
	f.t.Helper()
	d := f.deployment(name)
	r := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, ReadyReplicas: r, UpdatedReplicas: r, AvailableReplicas: r}
	if !done {
		d.Status.UpdatedReplicas = 0
	}
	if _, err := f.kube.AppsV1().Deployments(d.Namespace).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// checkSkew fails the test if kube-controller-manager or kube-scheduler
// was ever rendered newer than kube-apiserver.
func (f *upgradeFixture) checkSkew() {
	f.t.Helper()
	v := f.versions()
	api, err := versions.Parse(v[0])
	if err != nil {
		f.t.Fatalf("apiserver version %q: %v", v[0], err)
	}
	for i, name := range []string{provisioner.ControllerManagerName, provisioner.SchedulerName} {
		if other, _ := versions.Parse(v[i+1]); other.Compare(api) > 0 {
			f.t.Fatalf("%s at %s is newer than kube-apiserver at %s", name, v[i+1], v[0])
		}
	}
}

// writesOnly fails unless every management write of the last sync was to
// an object of component (all its objects share its name).
func (f *upgradeFixture) writesOnly(component string) {
	f.t.Helper()
	if len(f.mgmt.writes) == 0 {
		f.t.Errorf("no writes; want %s rolled", component)
	}
	for _, w := range f.mgmt.writes {
		if !strings.HasSuffix(w, "/"+component) && !strings.HasSuffix(w, "/"+component+"-config") {
			f.t.Errorf("write %q while rolling %s only (all writes: %v)", w, component, f.mgmt.writes)
		}
	}
}

// stepsOf renders status.upgrade.steps as "component@version" plus "+"
// when finished, for order assertions.
func stepsOf(u *v1alpha1.UpgradeStatus) []string {
	var out []string
	for _, s := range u.Steps {
		e := s.Component + "@" + s.Version
		if s.FinishedAt != nil {
			e += "+"
		}
		out = append(out, e)
	}
	return out
}

// hasEvent reports whether any recorded event contains all of parts.
func hasEvent(events []string, parts ...string) bool {
	for _, e := range events {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(e, p)
		}
		if all {
			return true
		}
	}
	return false
}
