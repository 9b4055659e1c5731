package validation

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

// MinKubeconfigExpiration is the shortest certificate a kubeconfig request
// may ask for, as for TokenRequest: shorter ones expire before clock skew
// between the management cluster and a client is even noticed.
const MinKubeconfigExpiration = 10 * time.Minute

// ValidateKubeconfigRequest validates the body of POST
// nestedclusters/NAME/kubeconfig against the server's maximum lifetime.
// Asking for more than the maximum is refused rather than silently
// shortened, so a client never holds a credential that dies earlier than it
// planned for.
func ValidateKubeconfigRequest(req *capn.NestedClusterKubeconfigRequest, maxExpiration time.Duration) field.ErrorList {
	var errs field.ErrorList
	if s := req.Spec.ExpirationSeconds; s != nil {
		p := field.NewPath("spec", "expirationSeconds")
		// Compared in seconds: converting a hostile value such as
		// 9223372037 to a Duration first overflows into a negative one.
		switch {
		case *s < int64(MinKubeconfigExpiration/time.Second):
			errs = append(errs, field.Invalid(p, *s, fmt.Sprintf("must be at least %d (%s)", int64(MinKubeconfigExpiration/time.Second), MinKubeconfigExpiration)))
		case *s > int64(maxExpiration/time.Second):
			errs = append(errs, field.Invalid(p, *s, fmt.Sprintf("must be at most %d, this server's maximum (%s)", int64(maxExpiration/time.Second), maxExpiration)))
		}
	}
	if req.Status.Kubeconfig != "" {
		errs = append(errs, field.Forbidden(field.NewPath("status"), "is set by the server"))
	}
	return errs
}
