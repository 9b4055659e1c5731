package validation

import (
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
)

func TestValidateKubeconfigRequest(t *testing.T) {
	max := 24 * time.Hour
	for _, tc := range []struct {
		name    string
		seconds *int64
		status  string
		want    string // substring of the error; empty means valid
	}{
		{name: "default", seconds: nil},
		{name: "minimum", seconds: ptr.To[int64](600)},
		{name: "maximum", seconds: ptr.To[int64](86400)},
		{name: "too short", seconds: ptr.To[int64](599), want: "spec.expirationSeconds: Invalid value: 599: must be at least 600"},
		{name: "negative", seconds: ptr.To[int64](-1), want: "spec.expirationSeconds: Invalid value: -1"},
		// time.Duration(s)*time.Second overflows negative for these.
		{name: "overflowing", seconds: ptr.To[int64](9223372037), want: "spec.expirationSeconds: Invalid value: 9223372037: must be at most 86400"},
		{name: "max int64", seconds: ptr.To[int64](math.MaxInt64), want: "spec.expirationSeconds: Invalid value: 9223372036854775807: must be at most 86400"},
		{name: "too long", seconds: ptr.To[int64](86401), want: "spec.expirationSeconds: Invalid value: 86401: must be at most 86400, this server's maximum (24h0m0s)"},
		{name: "status set", status: "apiVersion: v1", want: "status: Forbidden: is set by the server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &capn.NestedClusterKubeconfigRequest{}
			req.Spec.ExpirationSeconds = tc.seconds
			req.Status.Kubeconfig = tc.status
			errs := ValidateKubeconfigRequest(req, max)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("want one error containing %q, got %v", tc.want, errs)
			}
		})
	}
}
