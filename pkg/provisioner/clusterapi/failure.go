package clusterapi

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// failure is why a sync stopped short, as the Reconciled condition says it.
type failure struct {
	reason, message string
	// terminal: retrying cannot help until something changes (the user's
	// spec, another object); the object's own events requeue it.
	terminal bool
	err      error
}

func (f *failure) Error() string { return f.message }

func (f *failure) Unwrap() error { return f.err }

// retry is a failure a later attempt may get past (a cache miss, a
// conflict, the API unavailable).
func retry(err error) *failure {
	return &failure{reason: ReasonRefused, message: err.Error(), err: err}
}

// refused reports an API answer: invalid or forbidden input is terminal
// (the NestedCluster API said why, with the field), anything else retried.
func refused(reason, doing string, err error) *failure {
	terminal := apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
	return &failure{reason: reason, message: fmt.Sprintf("%s: %v", doing, err), terminal: terminal, err: err}
}
