package versions

import "testing"

func TestFlagRemoved(t *testing.T) {
	for _, tc := range []struct {
		v          string
		comp, flag string
		want       int
	}{
		{"v1.36.3", "kube-controller-manager", "concurrent-service-syncs", 0},
		{"v1.37.2", "kube-controller-manager", "concurrent-service-syncs", 37},
		{"v1.37.2", "kube-scheduler", "concurrent-service-syncs", 0},
		{"v1.37.2", "kube-controller-manager", "concurrent-deployment-syncs", 0},
	} {
		v, err := Parse(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if got := FlagRemoved(v, tc.comp, tc.flag); got != tc.want {
			t.Errorf("FlagRemoved(%s, %s, %s) = %d, want %d", tc.v, tc.comp, tc.flag, got, tc.want)
		}
	}
}
