package nestedcluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
	scalescheme "k8s.io/client-go/scale/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

const eventTimeout = 30 * time.Second

// env is one test's storage, namespace and context.
type env struct {
	t   *testing.T
	s   nestedcluster.Storage
	ns  string
	ctx context.Context
}

func newEnv(t *testing.T) *env {
	t.Parallel()
	ns := testNamespace(t)
	return &env{t: t, s: newStorage(t), ns: ns, ctx: nsContext(ns)}
}

func (e *env) create(name, version string, mutate ...func(*capn.NestedCluster)) *capn.NestedCluster {
	e.t.Helper()
	nc := newCluster(e.t, e.ns, name, version)
	for _, m := range mutate {
		m(nc)
	}
	obj, err := e.s.NestedCluster.Create(e.ctx, nc, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create %s: %v", name, err)
	}
	return obj.(*capn.NestedCluster)
}

func (e *env) get(name string) *capn.NestedCluster {
	e.t.Helper()
	obj, err := e.s.NestedCluster.Get(e.ctx, name, &metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get %s: %v", name, err)
	}
	return obj.(*capn.NestedCluster)
}

func (e *env) update(nc *capn.NestedCluster) (*capn.NestedCluster, error) {
	obj, _, err := e.s.NestedCluster.Update(e.ctx, nc.Name, rest.DefaultUpdatedObjectInfo(nc),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*capn.NestedCluster), nil
}

func (e *env) updateStatus(nc *capn.NestedCluster) (*capn.NestedCluster, error) {
	obj, _, err := e.s.Status.Update(e.ctx, nc.Name, rest.DefaultUpdatedObjectInfo(nc),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*capn.NestedCluster), nil
}

func (e *env) setPhase(name string, phase capn.NestedClusterPhase) *capn.NestedCluster {
	e.t.Helper()
	nc := e.get(name)
	nc.Status.Phase = phase
	out, err := e.updateStatus(nc)
	if err != nil {
		e.t.Fatalf("status update of %s: %v", name, err)
	}
	return out
}

func (e *env) list(label, field string) []string {
	e.t.Helper()
	opts := &metainternalversion.ListOptions{}
	var err error
	if opts.LabelSelector, err = labels.Parse(label); err != nil {
		e.t.Fatal(err)
	}
	if opts.FieldSelector, err = fields.ParseSelector(field); err != nil {
		e.t.Fatal(err)
	}
	obj, err := e.s.NestedCluster.List(e.ctx, opts)
	if err != nil {
		e.t.Fatalf("list %q %q: %v", label, field, err)
	}
	var names []string
	for _, it := range obj.(*capn.NestedClusterList).Items {
		if it.Namespace != e.ns {
			e.t.Errorf("list in %s returned %s/%s", e.ns, it.Namespace, it.Name)
		}
		names = append(names, it.Name)
	}
	return names
}

func TestCreateGetDelete(t *testing.T) {
	e := newEnv(t)
	nc := newCluster(t, e.ns, "tenant-a", "")
	nc.Generation = 9
	nc.Status.Phase = capn.PhaseReady // a user cannot create status
	obj, err := e.s.NestedCluster.Create(e.ctx, nc, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := obj.(*capn.NestedCluster)
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Errorf("create did not fill metadata: %+v", created.ObjectMeta)
	}
	if created.Generation != 1 {
		t.Errorf("generation = %d, want 1", created.Generation)
	}

	got := e.get("tenant-a")
	if !apiequality.Semantic.DeepEqual(got.Spec, nc.Spec) {
		t.Errorf("stored spec differs:\n got %+v\nwant %+v", got.Spec, nc.Spec)
	}
	if got.Status.Phase != "" {
		t.Errorf("status was stored on create: %+v", got.Status)
	}
	if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion {
		t.Errorf("get returned uid/rv %s/%s, create returned %s/%s", got.UID, got.ResourceVersion, created.UID, created.ResourceVersion)
	}

	// Same name again: AlreadyExists.
	if _, err := e.s.NestedCluster.Create(e.ctx, newCluster(t, e.ns, "tenant-a", ""), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("duplicate create: want AlreadyExists, got %v", err)
	}
	// Invalid object: refused before it reaches etcd.
	bad := newCluster(t, e.ns, "tenant-bad", "")
	bad.Spec.APIServer.Replicas = int32Ptr(0)
	_, err = e.s.NestedCluster.Create(e.ctx, bad, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	expectInvalidAt(t, err, "spec.apiServer.replicas")
	if _, err := e.s.NestedCluster.Get(e.ctx, "tenant-bad", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("invalid cluster was stored: %v", err)
	}

	// Another namespace does not see it.
	if _, err := e.s.NestedCluster.Get(nsContext(e.ns+"-other"), "tenant-a", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get from another namespace: want NotFound, got %v", err)
	}

	_, deleted, err := e.s.NestedCluster.Delete(e.ctx, "tenant-a", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
	if err != nil || !deleted {
		t.Fatalf("delete = %v, %v; want immediate deletion", deleted, err)
	}
	if _, err := e.s.NestedCluster.Get(e.ctx, "tenant-a", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: want NotFound, got %v", err)
	}
	if _, _, err := e.s.NestedCluster.Delete(e.ctx, "tenant-a", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: want NotFound, got %v", err)
	}
}

func TestList(t *testing.T) {
	e := newEnv(t)
	prod := func(nc *capn.NestedCluster) { nc.Labels = map[string]string{"env": "prod"} }
	e.create("a", "", prod)
	e.create("b", "", prod)
	e.create("c", "")
	e.setPhase("a", capn.PhaseReady)
	e.setPhase("c", capn.PhaseReady)
	e.setPhase("b", capn.PhaseDegraded)

	cases := []struct {
		label, field string
		want         []string
	}{
		{"", "", []string{"a", "b", "c"}},
		{"env=prod", "", []string{"a", "b"}},
		{"env!=prod", "", []string{"c"}},
		{"", "status.phase=Ready", []string{"a", "c"}},
		{"", "status.phase=Degraded", []string{"b"}},
		{"", "status.phase=Provisioning", nil},
		{"env=prod", "status.phase=Ready", []string{"a"}},
		{"", "metadata.name=b", []string{"b"}},
	}
	for _, tc := range cases {
		if got := e.list(tc.label, tc.field); !apiequality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("list(%q, %q) = %v, want %v", tc.label, tc.field, got, tc.want)
		}
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed before the expected event")
		}
		return ev
	case <-time.After(eventTimeout):
		t.Fatalf("no watch event within %v", eventTimeout)
	}
	return watch.Event{}
}

func TestWatch(t *testing.T) {
	e := newEnv(t)
	e.create("other", "") // before the watch starts: must not be replayed
	listObj, err := e.s.NestedCluster.List(e.ctx, &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := listObj.(*capn.NestedClusterList).ResourceVersion

	w, err := e.s.NestedCluster.Watch(e.ctx, &metainternalversion.ListOptions{
		ResourceVersion: rv,
		LabelSelector:   labels.SelectorFromSet(labels.Set{"watched": "yes"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	e.create("unwatched", "") // filtered out by the label selector
	created := e.create("tenant-a", "", func(nc *capn.NestedCluster) { nc.Labels = map[string]string{"watched": "yes"} })
	ev := nextEvent(t, w)
	if ev.Type != watch.Added {
		t.Fatalf("first event = %s %v, want ADDED", ev.Type, ev.Object)
	}
	if got := ev.Object.(*capn.NestedCluster); got.Name != "tenant-a" || got.ResourceVersion != created.ResourceVersion {
		t.Errorf("ADDED %s@%s, want tenant-a@%s", got.Name, got.ResourceVersion, created.ResourceVersion)
	}

	updated := e.setPhase("tenant-a", capn.PhaseReady)
	ev = nextEvent(t, w)
	if ev.Type != watch.Modified {
		t.Fatalf("second event = %s %v, want MODIFIED", ev.Type, ev.Object)
	}
	got := ev.Object.(*capn.NestedCluster)
	if got.Name != "tenant-a" || got.Status.Phase != capn.PhaseReady || got.ResourceVersion != updated.ResourceVersion {
		t.Errorf("MODIFIED %s@%s phase %q, want tenant-a@%s phase Ready", got.Name, got.ResourceVersion, got.Status.Phase, updated.ResourceVersion)
	}

	if _, _, err := e.s.NestedCluster.Delete(e.ctx, "tenant-a", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev = nextEvent(t, w); ev.Type != watch.Deleted || ev.Object.(*capn.NestedCluster).Name != "tenant-a" {
		t.Errorf("third event = %s %v, want DELETED tenant-a", ev.Type, ev.Object)
	}
}

func TestUpdate(t *testing.T) {
	e := newEnv(t)
	created := e.create("tenant-a", "")

	// Label-only: stored, generation unchanged.
	nc := created.DeepCopy()
	nc.Labels = map[string]string{"team": "blue"}
	out, err := e.update(nc)
	if err != nil {
		t.Fatal(err)
	}
	if out.Generation != 1 || out.Labels["team"] != "blue" {
		t.Errorf("label update: generation %d labels %v; want 1 and team=blue", out.Generation, out.Labels)
	}
	if out.ResourceVersion == created.ResourceVersion {
		t.Error("update did not change resourceVersion")
	}

	// Spec change: generation bumps, and a user-sent generation is ignored.
	nc = out.DeepCopy()
	nc.Spec.Paused = true
	nc.Generation = 40
	out, err = e.update(nc)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Spec.Paused || out.Generation != 2 {
		t.Errorf("spec update: paused %v generation %d; want true and 2", out.Spec.Paused, out.Generation)
	}
	if stored := e.get("tenant-a"); !stored.Spec.Paused || stored.Generation != 2 {
		t.Errorf("stored: paused %v generation %d; want true and 2", stored.Spec.Paused, stored.Generation)
	}

	// Validation on update: an immutable field.
	nc = out.DeepCopy()
	nc.Spec.ClusterNetwork.PodCIDR = "10.200.0.0/16"
	_, err = e.update(nc)
	expectInvalidAt(t, err, "spec.clusterNetwork.podCIDR")

	// Update of a missing object does not create it.
	missing := newCluster(t, e.ns, "missing", "")
	if _, err := e.update(missing); !apierrors.IsNotFound(err) {
		t.Errorf("update of missing: want NotFound, got %v", err)
	}
	if _, err := e.s.NestedCluster.Get(e.ctx, "missing", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("update created the missing object: %v", err)
	}
}

func TestUpdateConflict(t *testing.T) {
	e := newEnv(t)
	stale := e.create("tenant-a", "")

	fresh := stale.DeepCopy()
	fresh.Spec.Paused = true
	if _, err := e.update(fresh); err != nil {
		t.Fatal(err)
	}

	stale.Spec.Scheduler.Replicas = int32Ptr(3)
	if _, err := e.update(stale); !apierrors.IsConflict(err) {
		t.Fatalf("update with stale resourceVersion: want Conflict, got %v", err)
	}
	if got := e.get("tenant-a"); *got.Spec.Scheduler.Replicas != 1 || !got.Spec.Paused {
		t.Errorf("conflicting update was applied: %+v", got.Spec)
	}
}

func TestMainUpdateIgnoresStatus(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "")
	before := e.setPhase("tenant-a", capn.PhaseReady)

	nc := before.DeepCopy()
	nc.Status.Phase = capn.PhaseDegraded
	nc.Status.Endpoint = "https://evil.example"
	out, err := e.update(nc)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(out.Status, before.Status) {
		t.Errorf("main update changed status:\n got %+v\nwant %+v", out.Status, before.Status)
	}
	if out.Generation != before.Generation {
		t.Errorf("status-only change via main resource bumped generation %d -> %d", before.Generation, out.Generation)
	}
	if got := e.get("tenant-a"); got.Status.Phase != capn.PhaseReady || got.Status.Endpoint != "" {
		t.Errorf("stored status changed: %+v", got.Status)
	}
}

func TestStatusUpdate(t *testing.T) {
	e := newEnv(t)
	created := e.create("tenant-a", "", func(nc *capn.NestedCluster) { nc.Labels = map[string]string{"env": "prod"} })

	nc := created.DeepCopy()
	nc.Status = capn.NestedClusterStatus{
		ObservedGeneration: 1,
		Phase:              capn.PhaseReady,
		Endpoint:           "https://tenant-a.example:6443",
		APIServer:          capn.ComponentStatus{Replicas: 1, ReadyReplicas: 1},
	}
	nc.Spec.Paused = true                     // ignored
	nc.Spec.APIServer.Replicas = int32Ptr(4)  // ignored
	nc.Labels = map[string]string{"env": "x"} // ignored
	out, err := e.updateStatus(nc)
	if err != nil {
		t.Fatal(err)
	}
	stored := e.get("tenant-a")
	for name, got := range map[string]*capn.NestedCluster{"returned": out, "stored": stored} {
		if !apiequality.Semantic.DeepEqual(got.Status, nc.Status) {
			t.Errorf("%s status = %+v, want %+v", name, got.Status, nc.Status)
		}
		if !apiequality.Semantic.DeepEqual(got.Spec, created.Spec) {
			t.Errorf("%s spec changed by a status write:\n got %+v\nwant %+v", name, got.Spec, created.Spec)
		}
		if got.Labels["env"] != "prod" {
			t.Errorf("%s labels changed by a status write: %v", name, got.Labels)
		}
		if got.Generation != 1 {
			t.Errorf("%s generation = %d, want 1", name, got.Generation)
		}
	}

	// The status strategy's validation runs.
	bad := stored.DeepCopy()
	bad.Status.Phase = "Exploded"
	_, err = e.updateStatus(bad)
	expectInvalidAt(t, err, "status.phase")

	// Status writes never create.
	if _, err := e.updateStatus(newCluster(t, e.ns, "missing", "")); !apierrors.IsNotFound(err) {
		t.Errorf("status update of missing: want NotFound, got %v", err)
	}
}

func TestSubresourceResetFields(t *testing.T) {
	e := newEnv(t)
	spec := fieldpath.MakePathOrDie("spec")
	status := fieldpath.MakePathOrDie("status")
	if set := e.s.NestedCluster.GetResetFields()["capn.dev/v1alpha1"]; set == nil || !set.Has(status) || set.Has(spec) {
		t.Errorf("main resource reset fields = %v, want status only", set)
	}
	if set := e.s.Status.GetResetFields()["capn.dev/v1alpha1"]; set == nil || !set.Has(spec) || set.Has(status) {
		t.Errorf("status subresource reset fields = %v, want spec (and labels), not status", set)
	}
}

func TestScaleGet(t *testing.T) {
	e := newEnv(t)
	created := e.create("tenant-a", "", func(nc *capn.NestedCluster) { nc.Spec.APIServer.Replicas = int32Ptr(3) })

	obj, err := e.s.Scale.Get(e.ctx, "tenant-a", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale := obj.(*scalescheme.Scale)
	if scale.Spec.Replicas != 3 {
		t.Errorf("scale spec.replicas = %d, want 3", scale.Spec.Replicas)
	}
	if scale.Name != "tenant-a" || scale.Namespace != e.ns || scale.UID != created.UID || scale.ResourceVersion != created.ResourceVersion {
		t.Errorf("scale metadata %+v does not mirror the cluster's", scale.ObjectMeta)
	}
	wantSel := "capn.dev/cluster=tenant-a,capn.dev/component=kube-apiserver"
	if sel := selectorString(t, scale); sel != wantSel {
		t.Errorf("default selector = %q, want %q", sel, wantSel)
	}

	// Once the provisioner reports replicas and a selector, /scale shows them.
	nc := e.get("tenant-a")
	nc.Status.Replicas = 2
	nc.Status.Selector = "app=tenant-a-apiserver"
	if _, err := e.updateStatus(nc); err != nil {
		t.Fatal(err)
	}
	obj, err = e.s.Scale.Get(e.ctx, "tenant-a", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale = obj.(*scalescheme.Scale)
	if scale.Status.Replicas != 2 {
		t.Errorf("scale status.replicas = %d, want 2", scale.Status.Replicas)
	}
	if sel := selectorString(t, scale); sel != "app=tenant-a-apiserver" {
		t.Errorf("reported selector = %q, want app=tenant-a-apiserver", sel)
	}

	if _, err := e.s.Scale.Get(e.ctx, "missing", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("scale of missing: want NotFound, got %v", err)
	}
}

func selectorString(t *testing.T, s *scalescheme.Scale) string {
	t.Helper()
	if s.Status.Selector == nil {
		t.Fatal("scale has no selector")
	}
	sel, err := metav1.LabelSelectorAsSelector(s.Status.Selector)
	if err != nil {
		t.Fatal(err)
	}
	return sel.String()
}

func (e *env) scale(name string) *scalescheme.Scale {
	e.t.Helper()
	obj, err := e.s.Scale.Get(e.ctx, name, &metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return obj.(*scalescheme.Scale)
}

func (e *env) updateScale(s *scalescheme.Scale) (*scalescheme.Scale, error) {
	var sawScale bool
	obj, _, err := e.s.Scale.Update(e.ctx, s.Name, rest.DefaultUpdatedObjectInfo(s),
		rest.ValidateAllObjectFunc,
		func(_ context.Context, obj, old runtime.Object) error {
			// Admission sees Scales, as for the built-in scalable resources.
			_, newOK := obj.(*scalescheme.Scale)
			_, oldOK := old.(*scalescheme.Scale)
			if !newOK || !oldOK {
				e.t.Errorf("update validation got %T, %T; want Scales", obj, old)
			}
			sawScale = true
			return nil
		},
		false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	if !sawScale {
		e.t.Error("update validation was not called")
	}
	return obj.(*scalescheme.Scale), nil
}

func TestScaleUpdate(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "")
	before := e.setPhase("tenant-a", capn.PhaseReady)

	s := e.scale("tenant-a")
	if s.Spec.Replicas != 1 {
		t.Fatalf("defaulted replicas = %d, want 1", s.Spec.Replicas)
	}
	s.Spec.Replicas = 3
	out, err := e.updateScale(s)
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Replicas != 3 || out.ResourceVersion == s.ResourceVersion {
		t.Errorf("returned scale replicas %d rv %s; want 3 and a new rv", out.Spec.Replicas, out.ResourceVersion)
	}
	stored := e.get("tenant-a")
	if *stored.Spec.APIServer.Replicas != 3 {
		t.Errorf("stored spec.apiServer.replicas = %d, want 3", *stored.Spec.APIServer.Replicas)
	}
	if stored.Generation != before.Generation+1 {
		t.Errorf("generation = %d, want %d", stored.Generation, before.Generation+1)
	}
	if stored.ResourceVersion != out.ResourceVersion {
		t.Errorf("scale rv %s is not the cluster's %s", out.ResourceVersion, stored.ResourceVersion)
	}
	// Only replicas changed.
	want := before.DeepCopy()
	want.Spec.APIServer.Replicas = int32Ptr(3)
	if !apiequality.Semantic.DeepEqual(stored.Spec, want.Spec) || !apiequality.Semantic.DeepEqual(stored.Status, before.Status) {
		t.Errorf("scale changed more than replicas:\n got %+v %+v\nwant %+v %+v", stored.Spec, stored.Status, want.Spec, before.Status)
	}

	// Same replicas again: no spec change, no generation bump.
	same := e.scale("tenant-a")
	if _, err := e.updateScale(same); err != nil {
		t.Fatal(err)
	}
	if got := e.get("tenant-a").Generation; got != stored.Generation {
		t.Errorf("no-op scale bumped generation to %d", got)
	}

	// Without a resourceVersion the update is unconditional.
	s = e.scale("tenant-a")
	s.ResourceVersion = ""
	s.Spec.Replicas = 2
	if _, err := e.updateScale(s); err != nil {
		t.Errorf("unconditional scale: %v", err)
	}
	if got := *e.get("tenant-a").Spec.APIServer.Replicas; got != 2 {
		t.Errorf("replicas = %d after unconditional scale, want 2", got)
	}
}

func TestScaleUpdateConflict(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "")
	stale := e.scale("tenant-a")

	fresh := stale.DeepCopy()
	fresh.Spec.Replicas = 2
	if _, err := e.updateScale(fresh); err != nil {
		t.Fatal(err)
	}

	stale.Spec.Replicas = 5
	if _, err := e.updateScale(stale); !apierrors.IsConflict(err) {
		t.Fatalf("stale scale: want Conflict, got %v", err)
	}
	if got := *e.get("tenant-a").Spec.APIServer.Replicas; got != 2 {
		t.Errorf("replicas = %d after conflicting scale, want 2", got)
	}

	// A UID that is not the cluster's is a Conflict too.
	wrongUID := e.scale("tenant-a")
	wrongUID.UID = "not-the-uid"
	wrongUID.Spec.Replicas = 4
	if _, err := e.updateScale(wrongUID); !apierrors.IsConflict(err) {
		t.Errorf("scale with wrong UID: want Conflict, got %v", err)
	}
}

func TestScaleUpdateInvalid(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "")
	cases := []struct {
		replicas int32
		field    string
	}{
		{0, "spec.apiServer.replicas"},  // NestedCluster validation
		{11, "spec.apiServer.replicas"}, // NestedCluster validation
		{-1, "spec.replicas"},           // Scale validation
	}
	for _, tc := range cases {
		s := e.scale("tenant-a")
		s.Spec.Replicas = tc.replicas
		_, err := e.updateScale(s)
		expectInvalidAt(t, err, tc.field)
	}
	if got := e.get("tenant-a"); *got.Spec.APIServer.Replicas != 1 || got.Generation != 1 {
		t.Errorf("invalid scales changed the cluster: replicas %d generation %d", *got.Spec.APIServer.Replicas, got.Generation)
	}
	for _, r := range []int32{1, 10} {
		s := e.scale("tenant-a")
		s.Spec.Replicas = r
		if _, err := e.updateScale(s); err != nil {
			t.Errorf("scale to %d (in bounds): %v", r, err)
		}
	}

	missing := e.scale("tenant-a")
	missing.Name = "missing"
	missing.ResourceVersion = ""
	if _, err := e.updateScale(missing); !apierrors.IsNotFound(err) {
		t.Errorf("scale of missing: want NotFound, got %v", err)
	}
}

func (e *env) upgrade(name string, req *capn.NestedClusterUpgrade, opts *metav1.CreateOptions) (runtime.Object, error) {
	if opts == nil {
		opts = &metav1.CreateOptions{}
	}
	return e.s.Upgrade.Create(e.ctx, name, req, rest.ValidateAllObjectFunc, opts)
}

func TestUpgrade(t *testing.T) {
	e := newEnv(t)
	created := e.create("tenant-a", "v1.36.3")

	obj, err := e.upgrade("tenant-a", &capn.NestedClusterUpgrade{Version: "v1.37.2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, ok := obj.(*capn.NestedCluster)
	if !ok {
		t.Fatalf("upgrade returned %T, want *capn.NestedCluster", obj)
	}
	stored := e.get("tenant-a")
	for name, got := range map[string]*capn.NestedCluster{"returned": out, "stored": stored} {
		if got.Spec.Version != "v1.37.2" {
			t.Errorf("%s version = %s, want v1.37.2", name, got.Spec.Version)
		}
		if got.Generation != created.Generation+1 {
			t.Errorf("%s generation = %d, want %d", name, got.Generation, created.Generation+1)
		}
		want := created.Spec.DeepCopy()
		want.Version = "v1.37.2"
		if !apiequality.Semantic.DeepEqual(got.Spec, *want) {
			t.Errorf("%s: upgrade changed more than the version:\n got %+v\nwant %+v", name, got.Spec, *want)
		}
	}
	if out.ResourceVersion != stored.ResourceVersion {
		t.Errorf("returned rv %s, stored %s", out.ResourceVersion, stored.ResourceVersion)
	}

	// Upgrading to the current version is a no-op, not an error.
	if _, err := e.upgrade("tenant-a", &capn.NestedClusterUpgrade{Version: "v1.37.2"}, nil); err != nil {
		t.Errorf("upgrade to the current version: %v", err)
	}
	if got := e.get("tenant-a").Generation; got != stored.Generation {
		t.Errorf("no-op upgrade bumped generation to %d", got)
	}
}

func TestUpgradeRefused(t *testing.T) {
	e := newEnv(t)
	e.create("old", "v1.36.3")
	e.create("new", "v1.37.2")

	cases := []struct {
		name, cluster, version string
	}{
		{"downgrade a minor", "new", "v1.36.3"},
		{"downgrade a patch", "new", "v1.37.1"},
		{"skip to an unsupported minor", "old", "v1.38.0"},
		{"unsupported next minor", "new", "v1.38.0"},
		{"major", "new", "v2.0.0"},
		{"malformed", "new", "1.37.2"},
		{"empty", "new", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.get(tc.cluster)
			_, err := e.upgrade(tc.cluster, &capn.NestedClusterUpgrade{Version: tc.version}, nil)
			expectInvalidAt(t, err, "version")
			if after := e.get(tc.cluster); after.ResourceVersion != before.ResourceVersion || after.Spec.Version != before.Spec.Version {
				t.Errorf("refused upgrade changed the cluster: %s@%s -> %s@%s", before.Spec.Version, before.ResourceVersion, after.Spec.Version, after.ResourceVersion)
			}
		})
	}
}

func TestUpgradeInProgress(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "v1.36.3")
	if _, err := e.upgrade("tenant-a", &capn.NestedClusterUpgrade{Version: "v1.37.2"}, nil); err != nil {
		t.Fatal(err)
	}
	nc := e.get("tenant-a")
	nc.Status.Upgrade = &capn.UpgradeStatus{From: "v1.36.3", To: "v1.37.2", Component: "kube-apiserver"}
	if _, err := e.updateStatus(nc); err != nil {
		t.Fatal(err)
	}
	// Mid-upgrade only a rollback to the source is allowed.
	_, err := e.upgrade("tenant-a", &capn.NestedClusterUpgrade{Version: "v1.37.1"}, nil)
	expectInvalidAt(t, err, "version")
	if _, err := e.upgrade("tenant-a", &capn.NestedClusterUpgrade{Version: "v1.36.3"}, nil); err != nil {
		t.Errorf("rollback to the upgrade's source: %v", err)
	}
	if got := e.get("tenant-a").Spec.Version; got != "v1.36.3" {
		t.Errorf("version after rollback = %s, want v1.36.3", got)
	}
}

func TestUpgradeDryRun(t *testing.T) {
	e := newEnv(t)
	created := e.create("tenant-a", "v1.36.3")

	obj, err := e.upgrade("tenant-a", &capn.NestedClusterUpgrade{Version: "v1.37.2"}, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*capn.NestedCluster); got.Spec.Version != "v1.37.2" || got.Generation != 2 {
		t.Errorf("dry-run result: version %s generation %d; want v1.37.2 and 2", got.Spec.Version, got.Generation)
	}
	stored := e.get("tenant-a")
	if stored.Spec.Version != "v1.36.3" || stored.ResourceVersion != created.ResourceVersion || stored.Generation != 1 {
		t.Errorf("dry run was stored: version %s rv %s (was %s) generation %d", stored.Spec.Version, stored.ResourceVersion, created.ResourceVersion, stored.Generation)
	}

	// A dry run is still validated.
	_, err = e.upgrade("tenant-a", &capn.NestedClusterUpgrade{Version: "v1.38.0"}, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	expectInvalidAt(t, err, "version")
}

func TestUpgradePreconditions(t *testing.T) {
	e := newEnv(t)
	stale := e.create("tenant-a", "v1.36.3")
	nc := stale.DeepCopy()
	nc.Labels = map[string]string{"touched": "yes"}
	if _, err := e.update(nc); err != nil {
		t.Fatal(err)
	}

	req := &capn.NestedClusterUpgrade{ObjectMeta: metav1.ObjectMeta{ResourceVersion: stale.ResourceVersion}, Version: "v1.37.2"}
	if _, err := e.upgrade("tenant-a", req, nil); !apierrors.IsConflict(err) {
		t.Errorf("stale resourceVersion: want Conflict, got %v", err)
	}
	req = &capn.NestedClusterUpgrade{ObjectMeta: metav1.ObjectMeta{UID: "someone-else"}, Version: "v1.37.2"}
	if _, err := e.upgrade("tenant-a", req, nil); !apierrors.IsConflict(err) {
		t.Errorf("wrong UID: want Conflict, got %v", err)
	}
	if got := e.get("tenant-a").Spec.Version; got != "v1.36.3" {
		t.Errorf("conflicting upgrades changed the version to %s", got)
	}

	// A current resourceVersion and the right UID and name go through.
	cur := e.get("tenant-a")
	req = &capn.NestedClusterUpgrade{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", UID: cur.UID, ResourceVersion: cur.ResourceVersion}, Version: "v1.37.2"}
	if _, err := e.upgrade("tenant-a", req, nil); err != nil {
		t.Errorf("upgrade with current preconditions: %v", err)
	}

	if _, err := e.upgrade("missing", &capn.NestedClusterUpgrade{Version: "v1.37.2"}, nil); !apierrors.IsNotFound(err) {
		t.Errorf("upgrade of missing: want NotFound, got %v", err)
	}
	if _, err := e.s.NestedCluster.Get(e.ctx, "missing", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("upgrade created the missing cluster: %v", err)
	}

	req = &capn.NestedClusterUpgrade{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Version: "v1.37.2"}
	if _, err := e.upgrade("tenant-a", req, nil); !apierrors.IsBadRequest(err) {
		t.Errorf("name mismatch: want BadRequest, got %v", err)
	}
	if _, err := e.s.Upgrade.Create(e.ctx, "tenant-a", &capn.NestedCluster{}, nil, &metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("wrong body type: want BadRequest, got %v", err)
	}
}

func TestUpgradeAdmission(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "v1.36.3")
	denied := apierrors.NewForbidden(capn.Resource("nestedclusters/upgrade"), "tenant-a", errors.New("denied by policy"))
	var seen runtime.Object
	_, err := e.s.Upgrade.Create(e.ctx, "tenant-a", &capn.NestedClusterUpgrade{Version: "v1.37.2"},
		func(_ context.Context, obj runtime.Object) error { seen = obj; return denied }, &metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("admission denial: want Forbidden, got %v", err)
	}
	if _, ok := seen.(*capn.NestedClusterUpgrade); !ok {
		t.Errorf("admission saw %T, want the NestedClusterUpgrade request", seen)
	}
	if got := e.get("tenant-a").Spec.Version; got != "v1.36.3" {
		t.Errorf("denied upgrade changed the version to %s", got)
	}
}

// `kubectl get nc NAME --subresource=scale` asks the /scale storage for a
// table of a Scale object.
func TestScaleTable(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "")
	s := e.scale("tenant-a")
	table, err := e.s.Scale.ConvertToTable(e.ctx, s, nil)
	if err != nil {
		t.Fatalf("table of a Scale: %v", err)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "tenant-a" {
		t.Errorf("scale table rows = %+v, want one row for tenant-a", table.Rows)
	}
}
