package validation

import (
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

// Join tokens (nestedclusters/NAME/jointoken).
const (
	// MinJoinTokenTTL is the shortest bootstrap token a request may ask
	// for: enough for a kubelet that is already waiting to send its CSR.
	// The tenant apiserver and capn share the management cluster's clock,
	// so the kubeconfig's clock-skew margin is not needed here.
	MinJoinTokenTTL = time.Minute
	// DefaultJoinTokenTTL applies when a request names no lifetime (or
	// the server's maximum, if shorter): a manual join or a machine that
	// boots and starts its kubelet.
	DefaultJoinTokenTTL = 15 * time.Minute
	// MaxJoinTokenTTL bounds the server's --max-join-token-ttl. A longer
	// lived token is a standing credential; a tenant admin who wants one
	// can make it in the tenant.
	MaxJoinTokenTTL = 24 * time.Hour
)

// ValidateJoinTokenRequest validates the body of POST
// nestedclusters/NAME/jointoken against the server's maximum lifetime.
// More than the maximum is refused rather than shortened, as for
// kubeconfigs, so no node is provisioned with a token that dies earlier
// than its owner planned for.
func ValidateJoinTokenRequest(req *capn.NestedClusterJoinTokenRequest, maxTTL time.Duration) field.ErrorList {
	var errs field.ErrorList
	if s := req.Spec.ExpirationSeconds; s != nil {
		p := field.NewPath("spec", "expirationSeconds")
		// Compared in seconds: a hostile value overflows a Duration.
		switch {
		case *s < int64(MinJoinTokenTTL/time.Second):
			errs = append(errs, field.Invalid(p, *s, fmt.Sprintf("must be at least %d (%s)", int64(MinJoinTokenTTL/time.Second), MinJoinTokenTTL)))
		case *s > int64(maxTTL/time.Second):
			errs = append(errs, field.Invalid(p, *s, fmt.Sprintf("must be at most %d, this server's maximum (%s)", int64(maxTTL/time.Second), maxTTL)))
		}
	}
	if !apiequality.Semantic.DeepEqual(req.Status, capn.NestedClusterJoinTokenRequestStatus{}) {
		errs = append(errs, field.Forbidden(field.NewPath("status"), "is set by the server"))
	}
	return errs
}

// JoinTokenTTL is the lifetime a valid request gets: its own, or the
// default capped at the server's maximum.
func JoinTokenTTL(req *capn.NestedClusterJoinTokenRequest, maxTTL time.Duration) time.Duration {
	if s := req.Spec.ExpirationSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return min(DefaultJoinTokenTTL, maxTTL)
}
