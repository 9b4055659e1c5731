package controller

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// object is what applyIfChanged writes: a pointer to a Kubernetes object,
// so that an absent one is nil.
type object[O any] interface {
	*O
	metav1.Object
}

// writer is the part of a typed client applyIfChanged needs; every
// client-go typed client has it (statusWriter adapts a status subresource).
type writer[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// owned is the allow-list of one kind: what the syncer owns in the
// object. Whatever merge does not copy from want (resourceVersion, what
// the server set such as a ClusterIP, labels or fields others own) stays
// as in cur.
type owned[T any] struct {
	// equal reports that cur already holds want's allow-listed fields.
	equal func(cur, want T) bool
	// merge returns a copy of cur with want's allow-listed fields.
	merge func(cur, want T) T
}

// ownedField is the allow-list of a kind whose one field (what get
// points at) is the syncer's: a status, a webhook list, the labels.
func ownedField[T interface{ DeepCopy() T }, F any](get func(T) *F) owned[T] {
	return owned[T]{
		equal: func(cur, want T) bool { return equality.Semantic.DeepEqual(*get(cur), *get(want)) },
		merge: func(cur, want T) T {
			upd := cur.DeepCopy()
			*get(upd) = *get(want)
			return upd
		},
	}
}

// withEntries is m with add's entries set and its others kept: a merge
// that owns some labels or annotations of an object, not all of them.
func withEntries(m, add map[string]string) map[string]string {
	if m == nil {
		m = make(map[string]string, len(add))
	}
	maps.Copy(m, add)
	return m
}

// applied is what applyIfChanged did.
type applied int

const (
	unchanged applied = iota
	created
	updated
)

// applyIfChanged creates want when cur (read from a cache) is nil, updates
// cur with want's allowed fields when they differ, and writes nothing
// otherwise: an idle tenant must cost no requests, which is why this is
// not a server-side apply (one with no change is still a write request).
// It returns the object as written, or cur when unchanged.
//
// A create that finds the object already there fails: the cache is
// behind, and the retry reads it. An update that conflicts fails the
// same way: the cache is behind a write of someone else's.
func applyIfChanged[O any, T object[O]](ctx context.Context, w writer[T], cur, want T, f owned[T]) (T, applied, error) {
	if cur == nil {
		got, err := w.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			return nil, unchanged, fmt.Errorf("%s: not in the cache yet: %w", want.GetName(), err)
		}
		if err != nil {
			return nil, unchanged, fmt.Errorf("creating %s: %w", want.GetName(), err)
		}
		return got, created, nil
	}
	if f.equal(cur, want) {
		return cur, unchanged, nil
	}
	got, err := w.Update(ctx, f.merge(cur, want), metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, unchanged, fmt.Errorf("updating %s/%s: %w", cur.GetNamespace(), cur.GetName(), err)
	}
	return got, updated, nil
}

// cached maps a lister's NotFound to a nil object, the absent case of
// applyIfChanged.
func cached[T any](obj T, err error) (T, error) {
	if apierrors.IsNotFound(err) {
		var none T
		return none, nil
	}
	return obj, err
}

// deleteUID deletes the object name only if it is still uid: a newer
// object of the same name is someone else's. Gone already is done.
func deleteUID(ctx context.Context, del func(context.Context, string, metav1.DeleteOptions) error, m metav1.Object) error {
	uid := m.GetUID()
	err := del(ctx, m.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s/%s: %w", m.GetNamespace(), m.GetName(), err)
	}
	return nil
}
