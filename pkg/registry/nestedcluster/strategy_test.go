package nestedcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apiserver"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

// storedCluster is a cluster as it sits in storage: created, with a
// generation and a status the provisioner has written.
func storedCluster(t *testing.T) *capn.NestedCluster {
	nc := newCluster(t, "team-a", "tenant-a", "")
	nc.ResourceVersion = "10"
	nc.Generation = 4
	nc.Labels = map[string]string{"env": "prod"}
	nc.Status = capn.NestedClusterStatus{
		ObservedGeneration: 4,
		Phase:              capn.PhaseReady,
		Endpoint:           "https://tenant-a.example:6443",
		APIServer:          capn.ComponentStatus{Replicas: 1, ReadyReplicas: 1},
	}
	return nc
}

func TestStrategyBasics(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, nestedcluster.Policy{})
	if !s.NamespaceScoped() {
		t.Error("NestedCluster must be namespace scoped")
	}
	if s.AllowCreateOnUpdate(context.Background()) {
		t.Error("update must not create")
	}
	if !s.AllowUnconditionalUpdate(context.Background()) {
		t.Error("unconditional updates (no resourceVersion) should be allowed")
	}
}

func TestPrepareForCreate(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, nestedcluster.Policy{})
	nc := storedCluster(t)
	wantSpec := *nc.Spec.DeepCopy()
	wantSpec.DataPlane.Mode = capn.DataPlaneShared // set on create only
	nc.Generation = 7

	s.PrepareForCreate(context.Background(), nc)

	if !apiequality.Semantic.DeepEqual(nc.Status, capn.NestedClusterStatus{}) {
		t.Errorf("status not cleared on create: %+v", nc.Status)
	}
	if nc.Generation != 1 {
		t.Errorf("generation = %d, want 1", nc.Generation)
	}
	if !apiequality.Semantic.DeepEqual(nc.Spec, wantSpec) {
		t.Errorf("spec changed on create:\n got %+v\nwant %+v", nc.Spec, wantSpec)
	}
	if errs := s.Validate(context.Background(), nc); len(errs) > 0 {
		t.Errorf("defaulted cluster should validate, got %v", errs)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(*capn.NestedCluster)
		wantGen  int64
		wantSpec func(*capn.NestedCluster) // applied to the old spec for the expectation
	}{
		{
			name:    "no change",
			mutate:  func(*capn.NestedCluster) {},
			wantGen: 4,
		},
		{
			name:    "label only",
			mutate:  func(nc *capn.NestedCluster) { nc.Labels["team"] = "blue" },
			wantGen: 4,
		},
		{
			name:    "annotation only",
			mutate:  func(nc *capn.NestedCluster) { nc.Annotations = map[string]string{"note": "x"} },
			wantGen: 4,
		},
		{
			name:     "spec replicas",
			mutate:   func(nc *capn.NestedCluster) { nc.Spec.APIServer.Replicas = int32Ptr(3) },
			wantGen:  5,
			wantSpec: func(nc *capn.NestedCluster) { nc.Spec.APIServer.Replicas = int32Ptr(3) },
		},
		{
			name:     "spec paused",
			mutate:   func(nc *capn.NestedCluster) { nc.Spec.Paused = true },
			wantGen:  5,
			wantSpec: func(nc *capn.NestedCluster) { nc.Spec.Paused = true },
		},
		{
			name: "status only is dropped",
			mutate: func(nc *capn.NestedCluster) {
				nc.Status.Phase = capn.PhaseDegraded
				nc.Status.ObservedGeneration = 99
			},
			wantGen: 4,
		},
		{
			name: "spec and status",
			mutate: func(nc *capn.NestedCluster) {
				nc.Spec.Scheduler.Replicas = int32Ptr(2)
				nc.Status = capn.NestedClusterStatus{}
			},
			wantGen:  5,
			wantSpec: func(nc *capn.NestedCluster) { nc.Spec.Scheduler.Replicas = int32Ptr(2) },
		},
	}
	s := nestedcluster.NewStrategy(apiserver.Scheme, nestedcluster.Policy{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := storedCluster(t)
			nc := old.DeepCopy()
			tc.mutate(nc)
			wantLabels := nc.DeepCopy().Labels
			want := old.DeepCopy()
			if tc.wantSpec != nil {
				tc.wantSpec(want)
			}

			s.PrepareForUpdate(context.Background(), nc, old)

			if nc.Generation != tc.wantGen {
				t.Errorf("generation = %d, want %d", nc.Generation, tc.wantGen)
			}
			if !apiequality.Semantic.DeepEqual(nc.Status, old.Status) {
				t.Errorf("status must be kept from the stored object:\n got %+v\nwant %+v", nc.Status, old.Status)
			}
			if !apiequality.Semantic.DeepEqual(nc.Spec, want.Spec) {
				t.Errorf("spec = %+v, want %+v", nc.Spec, want.Spec)
			}
			if !apiequality.Semantic.DeepEqual(nc.Labels, wantLabels) {
				t.Errorf("labels = %v, want the user's %v", nc.Labels, wantLabels)
			}
			if errs := s.ValidateUpdate(context.Background(), nc, old); len(errs) > 0 {
				t.Errorf("unexpected validation errors: %v", errs)
			}
		})
	}
}

func TestStatusStrategyPrepareForUpdate(t *testing.T) {
	s := nestedcluster.NewStatusStrategy(nestedcluster.NewStrategy(apiserver.Scheme, nestedcluster.Policy{}))
	old := storedCluster(t)
	nc := old.DeepCopy()
	nc.Spec.Paused = true
	nc.Spec.APIServer.Replicas = int32Ptr(5)
	nc.Labels = map[string]string{"sneaky": "label"}
	nc.Annotations = map[string]string{"provisioner": "note"}
	nc.Status.Phase = capn.PhaseDegraded
	nc.Status.ObservedGeneration = 4
	nc.Status.APIServer.ReadyReplicas = 0
	wantStatus := *nc.Status.DeepCopy()

	s.PrepareForUpdate(context.Background(), nc, old)

	if !apiequality.Semantic.DeepEqual(nc.Spec, old.Spec) {
		t.Errorf("status write changed spec:\n got %+v\nwant %+v", nc.Spec, old.Spec)
	}
	if !apiequality.Semantic.DeepEqual(nc.Labels, old.Labels) {
		t.Errorf("status write changed labels: got %v, want %v", nc.Labels, old.Labels)
	}
	if !apiequality.Semantic.DeepEqual(nc.Status, wantStatus) {
		t.Errorf("status write lost status:\n got %+v\nwant %+v", nc.Status, wantStatus)
	}
	if nc.Annotations["provisioner"] != "note" {
		t.Errorf("status write may change annotations; got %v", nc.Annotations)
	}
	if nc.Generation != old.Generation {
		t.Errorf("status write changed generation to %d", nc.Generation)
	}
	if errs := s.ValidateUpdate(context.Background(), nc, old); len(errs) > 0 {
		t.Errorf("unexpected validation errors: %v", errs)
	}

	// The status strategy validates status, not spec.
	bad := nc.DeepCopy()
	bad.Status.Phase = "Exploded"
	errs := s.ValidateUpdate(context.Background(), bad, old)
	if len(errs) != 1 || errs[0].Field != "status.phase" {
		t.Errorf("want one error at status.phase, got %v", errs)
	}
}

func TestGetResetFields(t *testing.T) {
	main := nestedcluster.NewStrategy(apiserver.Scheme, nestedcluster.Policy{})
	status := nestedcluster.NewStatusStrategy(main)
	cases := []struct {
		name string
		got  map[fieldpath.APIVersion]*fieldpath.Set
		want *fieldpath.Set
	}{
		{"main", main.GetResetFields(), fieldpath.NewSet(fieldpath.MakePathOrDie("status"))},
		{"status", status.GetResetFields(), fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "labels"),
		)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.got) != 1 {
				t.Fatalf("want reset fields for exactly one version, got %v", tc.got)
			}
			set, ok := tc.got["capn.dev/v1alpha1"]
			if !ok {
				t.Fatalf("no reset fields for capn.dev/v1alpha1: %v", tc.got)
			}
			if !set.Equals(tc.want) {
				t.Errorf("reset fields = %v, want %v", set, tc.want)
			}
		})
	}
}

func TestGetAttrs(t *testing.T) {
	nc := storedCluster(t)
	ls, fs, err := nestedcluster.GetAttrs(nc)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Get("env") != "prod" {
		t.Errorf("labels = %v, want env=prod", ls)
	}
	want := fields.Set{
		"metadata.name":      "tenant-a",
		"metadata.namespace": "team-a",
		"status.phase":       "Ready",
	}
	for k, v := range want {
		if got, ok := fs[k]; !ok || got != v {
			t.Errorf("field %s = %q (present %v), want %q", k, got, ok, v)
		}
	}

	// An unreported phase is still a selectable (empty) field.
	nc.Status.Phase = ""
	if _, fs, _ := nestedcluster.GetAttrs(nc); !fs.Has("status.phase") || fs["status.phase"] != "" {
		t.Errorf("status.phase should be present and empty, got %v", fs)
	}

	if _, _, err := nestedcluster.GetAttrs(&capn.NestedClusterList{}); err == nil {
		t.Error("GetAttrs of a non-NestedCluster should fail")
	}

	// Over HTTP the selector is converted by the scheme before it reaches
	// GetAttrs; status.phase must survive that step.
	gvk := v1alpha1.SchemeGroupVersion.WithKind("NestedCluster")
	if l, v, err := apiserver.Scheme.ConvertFieldLabel(gvk, "status.phase", "Ready"); err != nil || l != "status.phase" || v != "Ready" {
		t.Errorf("ConvertFieldLabel(status.phase) = %q, %q, %v", l, v, err)
	}
	if _, _, err := apiserver.Scheme.ConvertFieldLabel(gvk, "spec.version", "v1.37.2"); err == nil {
		t.Error("spec.version is not a selectable field; conversion should refuse it")
	}
}

func TestMatch(t *testing.T) {
	nc := storedCluster(t)
	cases := []struct {
		label string
		field string
		want  bool
	}{
		{"", "status.phase=Ready", true},
		{"", "status.phase=Degraded", false},
		{"env=prod", "", true},
		{"env=dev", "", false},
		{"env=prod", "status.phase!=Ready", false},
		{"", "metadata.name=tenant-a", true},
	}
	for _, tc := range cases {
		ls, err := labels.Parse(tc.label)
		if err != nil {
			t.Fatal(err)
		}
		fsel, err := fields.ParseSelector(tc.field)
		if err != nil {
			t.Fatal(err)
		}
		pred := nestedcluster.Match(ls, fsel)
		got, err := pred.Matches(nc)
		if err != nil {
			t.Fatalf("Matches(%q, %q): %v", tc.label, tc.field, err)
		}
		if got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.label, tc.field, got, tc.want)
		}
	}
}

func TestMemoryStorageWarning(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, nestedcluster.Policy{})
	status := nestedcluster.NewStatusStrategy(s)
	ctx := context.Background()

	emptyDir := newCluster(t, "team-a", "tenant-a", "")
	if emptyDir.Spec.Etcd.Managed == nil || emptyDir.Spec.Etcd.Managed.Storage.Type != capn.EtcdStorageEmptyDir {
		t.Fatalf("default etcd should be managed EmptyDir, got %+v", emptyDir.Spec.Etcd)
	}
	if w := s.WarningsOnCreate(ctx, emptyDir); len(w) != 0 {
		t.Errorf("EmptyDir should not warn, got %q", w)
	}

	external := emptyDir.DeepCopy()
	external.Spec.Etcd = capn.EtcdSpec{External: &capn.ExternalEtcd{Endpoints: []string{"https://etcd:2379"}}}
	if w := s.WarningsOnCreate(ctx, external); len(w) != 0 {
		t.Errorf("external etcd should not warn, got %q", w)
	}

	memory := emptyDir.DeepCopy()
	memory.Spec.Etcd.Managed.Storage.Type = capn.EtcdStorageMemory
	for name, w := range map[string][]string{
		"create": s.WarningsOnCreate(ctx, memory),
		"update": s.WarningsOnUpdate(ctx, memory, emptyDir),
	} {
		if len(w) != 1 || !strings.Contains(w[0], "spec.etcd.managed.storage.type") || !strings.Contains(w[0], "Memory") {
			t.Errorf("%s: want one warning about Memory storage, got %q", name, w)
		}
	}
	// Status writes come from the provisioner; warning it about the user's
	// spec choice would be noise.
	if w := status.WarningsOnUpdate(ctx, memory, memory); len(w) != 0 {
		t.Errorf("status update should not warn, got %q", w)
	}
}

// The provider's default sleep is given at creation to a cluster that sets
// no sleep, stored where the tenant sees it; one that sets any is kept, and
// an update that removes it is not defaulted again.
func TestDefaultSleepAfterInactivityOnCreateOnly(t *testing.T) {
	s := nestedcluster.NewStrategy(apiserver.Scheme, nestedcluster.Policy{DefaultSleepAfterInactivity: 10 * time.Minute})
	nc := storedCluster(t)
	nc.Spec.Sleep = capn.SleepSpec{}
	s.PrepareForCreate(context.Background(), nc)
	require.NotNil(t, nc.Spec.Sleep.AfterInactivity)
	assert.Equal(t, 10*time.Minute, nc.Spec.Sleep.AfterInactivity.Duration)

	own := storedCluster(t)
	own.Spec.Sleep = capn.SleepSpec{AfterInactivity: &metav1.Duration{Duration: time.Hour}}
	s.PrepareForCreate(context.Background(), own)
	assert.Equal(t, time.Hour, own.Spec.Sleep.AfterInactivity.Duration)

	asleep := storedCluster(t)
	asleep.Spec.Sleep = capn.SleepSpec{Asleep: true}
	s.PrepareForCreate(context.Background(), asleep)
	assert.Nil(t, asleep.Spec.Sleep.AfterInactivity, "asleep: already decided")

	removed := nc.DeepCopy()
	removed.Spec.Sleep.AfterInactivity = nil
	s.PrepareForUpdate(context.Background(), removed, nc)
	assert.Nil(t, removed.Spec.Sleep.AfterInactivity, "removing it on update turns it off")
}
