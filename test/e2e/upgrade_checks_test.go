//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/test/framework"
)

var upgradeOrder = []string{v1alpha1.ComponentAPIServer, v1alpha1.ComponentControllerManager, v1alpha1.ComponentScheduler}

// checkUpgradeStatus checks the recorded history of a finished upgrade and
// returns each step's duration.
func checkUpgradeStatus(t *testing.T, nc *v1alpha1.NestedCluster, from, to string) string {
	t.Helper()
	u := nc.Status.Upgrade
	if u == nil || u.From != from || u.To != to || u.FinishedAt == nil || u.Component != "" {
		t.Fatalf("status.upgrade = %+v, want a finished %s -> %s", u, from, to)
	}
	if len(u.Steps) != len(upgradeOrder) {
		t.Fatalf("status.upgrade.steps = %+v, want one per component in order %v", u.Steps, upgradeOrder)
	}
	var parts []string
	for i, s := range u.Steps {
		if s.Component != upgradeOrder[i] || s.Version != to || s.StartedAt == nil || s.FinishedAt == nil {
			t.Errorf("step %d = %+v, want %s to %s, started and finished", i, s, upgradeOrder[i], to)
			continue
		}
		if i > 0 {
			if prev := u.Steps[i-1].FinishedAt; prev == nil || s.StartedAt.Before(prev) {
				t.Errorf("%s started at %s, before %s finished at %v", s.Component, s.StartedAt, u.Steps[i-1].Component, prev)
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s", s.Component, s.FinishedAt.Sub(s.StartedAt.Time)))
	}
	for name, cs := range map[string]v1alpha1.ComponentStatus{"apiServer": nc.Status.APIServer,
		"controllerManager": nc.Status.ControllerManager, "scheduler": nc.Status.Scheduler} {
		if cs.Version != to || !strings.HasSuffix(cs.Image, ":"+to) {
			t.Errorf("status.%s = version %s image %s, want %s", name, cs.Version, cs.Image, to)
		}
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, "Progressing")
	if c == nil || c.Status != "False" || c.Reason != "UpgradeComplete" || nc.Status.Phase != v1alpha1.PhaseReady {
		t.Errorf("after the upgrade: Progressing %+v, phase %s; want False/UpgradeComplete and Ready", c, nc.Status.Phase)
	}
	return "steps: " + strings.Join(parts, ", ")
}

// checkPodOrder compares the creation times of each component's newest pod:
// the apiserver's came first, then the kcm's, then the scheduler's.
func checkPodOrder(t *testing.T, e *upgradeEnv, ns string) {
	t.Helper()
	var prev time.Time
	for _, comp := range upgradeOrder {
		out := e.admin.MustRun(t, "", "get", "pods", "-n", ns, "-l", v1alpha1.ComponentLabel+"="+comp,
			"-o", "jsonpath={range .items[*]}{.metadata.creationTimestamp} {.spec.containers[0].image}{\"\\n\"}{end}")
		var newest time.Time
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			ts, err := time.Parse(time.RFC3339, f[0])
			if err != nil || len(f) != 2 {
				t.Fatalf("%s pod line %q: %v", comp, line, err)
			}
			if !strings.HasSuffix(f[1], ":v1.37.2") {
				t.Errorf("%s pod runs %s after the upgrade", comp, f[1])
			}
			if ts.After(newest) {
				newest = ts
			}
		}
		// Creation times have 1s resolution: equal is not out of order.
		if newest.Before(prev) {
			t.Errorf("%s's newest pod was created at %s, before the previous component's (%s)", comp, newest, prev)
		}
		prev = newest
	}
}

// versionOf asks the tenant apiserver for /version.
func versionOf(t *testing.T, tk framework.Kubectl) string {
	t.Helper()
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal([]byte(tk.MustRun(t, "", "get", "--raw", "/version")), &v); err != nil {
		t.Fatal(err)
	}
	return v.GitVersion
}

// testRefusedChanges: each refused change names its reason, and the stored
// object does not change.
func testRefusedChanges(t *testing.T, e *upgradeEnv, name string) {
	t.Helper()
	rv := e.k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.metadata.resourceVersion}")
	for _, tc := range []struct {
		what string
		run  func() (string, error)
		want string
	}{
		{"downgrade", func() (string, error) {
			_, errOut, err := e.nested(time.Minute, "upgrade", name, "--to", "v1.36.3")
			return errOut, err
		}, "downgrade"},
		{"skipped minor", func() (string, error) {
			_, errOut, err := e.nested(time.Minute, "upgrade", name, "--to", "v1.39.0")
			return errOut, err
		}, "v1.39.0"},
		{"etcd replicas via patch", func() (string, error) {
			r := e.k.Run("", "patch", "nc", name, "--type=merge", "-p", `{"spec":{"etcd":{"managed":{"replicas":3}}}}`)
			return r.Stderr, r.Err
		}, "etcd replicas are fixed at create"},
		{"etcd via the plugin", func() (string, error) {
			_, errOut, err := e.nested(time.Minute, "scale", name, "--component=etcd", "--replicas=3")
			return errOut, err
		}, "etcd"},
	} {
		msg, err := tc.run()
		if err == nil || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: err %v, stderr %q; want a refusal mentioning %q", tc.what, err, msg, tc.want)
		} else {
			t.Logf("%s refused: %s", tc.what, strings.TrimSpace(msg))
		}
	}
	if now := e.k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.metadata.resourceVersion}"); now != rv {
		t.Errorf("refused changes still changed NestedCluster %s: resourceVersion %s -> %s", name, rv, now)
	}
}
