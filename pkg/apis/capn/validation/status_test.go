package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

func readyCondition() metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllComponentsAvailable", LastTransitionTime: started}
}

func TestValidateNestedClusterStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(st *capn.NestedClusterStatus)
		want   *wantErr
	}{
		{"healthy status", func(st *capn.NestedClusterStatus) {
			st.Phase = capn.PhaseReady
			st.ObservedGeneration = 3
			st.Conditions = []metav1.Condition{readyCondition()}
			st.APIServer = capn.ComponentStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Version: "v1.37.2"}
			st.Upgrade = &capn.UpgradeStatus{From: "v1.36.3", To: "v1.37.2", StartedAt: &started, FinishedAt: &started,
				Steps: []capn.UpgradeStep{{Component: "kube-apiserver", Version: "v1.37.2", StartedAt: &started, FinishedAt: &started}}}
			st.Replicas, st.Selector = 2, "app=kube-apiserver"
		}, nil},
		{"empty phase", func(st *capn.NestedClusterStatus) { st.Phase = "" }, nil},
		{"unknown phase", func(st *capn.NestedClusterStatus) { st.Phase = "Exploded" },
			&wantErr{"status.phase", field.ErrorTypeNotSupported, "Provisioning"}},
		{"negative observedGeneration", func(st *capn.NestedClusterStatus) { st.ObservedGeneration = -1 },
			&wantErr{"status.observedGeneration", field.ErrorTypeInvalid, ""}},
		{"negative scale replicas", func(st *capn.NestedClusterStatus) { st.Replicas = -1 },
			&wantErr{"status.replicas", field.ErrorTypeInvalid, ""}},
		{"negative ready replicas", func(st *capn.NestedClusterStatus) { st.Scheduler.ReadyReplicas = -2 },
			&wantErr{"status.scheduler.readyReplicas", field.ErrorTypeInvalid, ""}},
		{"negative etcd replicas", func(st *capn.NestedClusterStatus) { st.Etcd.Replicas = -1 },
			&wantErr{"status.etcd.replicas", field.ErrorTypeInvalid, ""}},
		{"condition without reason", func(st *capn.NestedClusterStatus) {
			c := readyCondition()
			c.Reason = ""
			st.Conditions = []metav1.Condition{c}
		}, &wantErr{"status.conditions[0].reason", field.ErrorTypeRequired, ""}},
		{"duplicate condition", func(st *capn.NestedClusterStatus) {
			st.Conditions = []metav1.Condition{readyCondition(), readyCondition()}
		}, &wantErr{"status.conditions[1]", field.ErrorTypeDuplicate, ""}},
		{"upgrade with malformed from", func(st *capn.NestedClusterStatus) {
			st.Upgrade = &capn.UpgradeStatus{From: "1.36", To: "v1.37.2"}
		}, &wantErr{"status.upgrade.from", field.ErrorTypeInvalid, ""}},
		{"upgrade without to", func(st *capn.NestedClusterStatus) {
			st.Upgrade = &capn.UpgradeStatus{From: "v1.36.3"}
		}, &wantErr{"status.upgrade.to", field.ErrorTypeRequired, ""}},
		{"upgrade step with malformed version", func(st *capn.NestedClusterStatus) {
			st.Upgrade = &capn.UpgradeStatus{From: "v1.36.3", To: "v1.37.2", Steps: []capn.UpgradeStep{{Component: "kube-apiserver", Version: "1.37"}}}
		}, &wantErr{"status.upgrade.steps[0].version", field.ErrorTypeInvalid, ""}},
		{"upgrade step without component", func(st *capn.NestedClusterStatus) {
			st.Upgrade = &capn.UpgradeStatus{From: "v1.36.3", To: "v1.37.2", Steps: []capn.UpgradeStep{{Version: "v1.37.2"}}}
		}, &wantErr{"status.upgrade.steps[0].component", field.ErrorTypeRequired, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validNC(t)
			nc := old.DeepCopy()
			tc.mutate(&nc.Status)
			errs := ValidateNestedClusterStatusUpdate(nc, old)
			if tc.want == nil {
				expectNoErrors(t, errs)
			} else {
				expectError(t, errs, *tc.want)
			}
		})
	}
}
