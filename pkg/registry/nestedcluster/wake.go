package nestedcluster

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// requestWake stamps v1alpha1.WakeRequestedAnnotation on nc when it sleeps
// for inactivity: asking for a kubeconfig means someone is about to use
// the cluster. The provisioner wakes it. A cluster put to sleep by
// spec.sleep.asleep stays asleep: that is the user's word, not a guess.
// It is a metadata write through the store, so the requester needs no
// update right on the NestedCluster; it sets nothing but the time.
func requestWake(ctx context.Context, store *genericregistry.Store, nc *capn.NestedCluster, now time.Time) error {
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionInactive) {
		return nil
	}
	stamp := now.UTC().Format(time.RFC3339)
	_, _, err := store.Update(ctx, nc.Name, rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		cur := old.DeepCopyObject().(*capn.NestedCluster)
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[v1alpha1.WakeRequestedAnnotation] = stamp
		return cur, nil
	}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{FieldManager: "capn-apiserver"})
	return err
}
