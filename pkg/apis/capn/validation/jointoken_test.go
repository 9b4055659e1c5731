package validation

import (
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
)

func TestValidateJoinTokenRequest(t *testing.T) {
	max := time.Hour
	for _, tc := range []struct {
		name    string
		seconds *int64
		status  capn.NestedClusterJoinTokenRequestStatus
		want    string // substring of the error; empty means valid
	}{
		{name: "default", seconds: nil},
		{name: "minimum", seconds: ptr.To[int64](60)},
		{name: "maximum", seconds: ptr.To[int64](3600)},
		{name: "too short", seconds: ptr.To[int64](59), want: "spec.expirationSeconds: Invalid value: 59: must be at least 60 (1m0s)"},
		{name: "zero", seconds: ptr.To[int64](0), want: "spec.expirationSeconds: Invalid value: 0: must be at least 60"},
		{name: "negative", seconds: ptr.To[int64](-1), want: "spec.expirationSeconds: Invalid value: -1"},
		{name: "overflowing", seconds: ptr.To[int64](9223372037), want: "spec.expirationSeconds: Invalid value: 9223372037: must be at most 3600"},
		{name: "max int64", seconds: ptr.To[int64](math.MaxInt64), want: "spec.expirationSeconds: Invalid value: 9223372036854775807: must be at most 3600"},
		{name: "too long", seconds: ptr.To[int64](3601), want: "spec.expirationSeconds: Invalid value: 3601: must be at most 3600, this server's maximum (1h0m0s)"},
		{name: "token set", status: capn.NestedClusterJoinTokenRequestStatus{Token: "abcdef.0123456789abcdef"}, want: "status: Forbidden: is set by the server"},
		{name: "endpoint set", status: capn.NestedClusterJoinTokenRequestStatus{Endpoint: "https://evil:443"}, want: "status: Forbidden: is set by the server"},
		{name: "hashes set", status: capn.NestedClusterJoinTokenRequestStatus{CACertHashes: []string{"sha256:00"}}, want: "status: Forbidden: is set by the server"},
		{name: "expiration set", status: capn.NestedClusterJoinTokenRequestStatus{ExpirationTimestamp: metav1.Unix(1, 0)}, want: "status: Forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &capn.NestedClusterJoinTokenRequest{}
			req.Spec.ExpirationSeconds = tc.seconds
			req.Status = tc.status
			errs := ValidateJoinTokenRequest(req, max)
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

func TestJoinTokenTTL(t *testing.T) {
	req := &capn.NestedClusterJoinTokenRequest{}
	if got := JoinTokenTTL(req, time.Hour); got != 15*time.Minute {
		t.Errorf("default under a 1h maximum: %s", got)
	}
	if got := JoinTokenTTL(req, 5*time.Minute); got != 5*time.Minute {
		t.Errorf("default under a 5m maximum: %s, want the maximum", got)
	}
	req.Spec.ExpirationSeconds = ptr.To[int64](120)
	if got := JoinTokenTTL(req, time.Hour); got != 2*time.Minute {
		t.Errorf("120 s asked: %s", got)
	}
}
