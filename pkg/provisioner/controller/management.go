package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/provisioner/builders"
)

// FieldManager owns every field capn applies in the management cluster.
const FieldManager = "capn-provisioner"

// Management is every call the controller makes to the management cluster.
// It is kept this narrow so that tests can count writes (Apply, Delete)
// and so the controller cannot grow hidden side effects. There is one way
// to write an object, server-side apply, Secrets included.
// Objects are addressed by a prototype: its Go type picks the resource and
// its namespace/name the object.
type Management interface {
	// Get returns the live object, or a NotFound error.
	Get(ctx context.Context, proto builders.Object) (builders.Object, error)
	// ReadSecret returns a Secret capn does not own, live: one a tenant
	// names in its own namespace (external etcd credentials).
	ReadSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// ListSecrets returns the Secrets of a namespace.
	ListSecrets(ctx context.Context, namespace string) ([]corev1.Secret, error)
	// ListPods returns the Pods of a namespace that match selector: an
	// upgrade step that misses its deadline names the pod that is not Ready.
	ListPods(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error)
	// Apply server-side applies obj as manager, forcing conflicts: capn is
	// the only writer of what it renders. Everything rendered is applied as
	// FieldManager; a fact recorded apart from the rendering (the tenant
	// bootstrap) has a manager of its own, so that the next apply of the
	// rendered object neither removes it nor counts it as drift.
	Apply(ctx context.Context, manager string, obj builders.Object) (builders.Object, error)
	Delete(ctx context.Context, proto builders.Object) error
	// StopPods deletes the Pods of namespace that match selector (a
	// sleeping tenant's pods on the shared data plane) and reports how
	// many it found, live: they are not in capn's caches.
	StopPods(ctx context.Context, namespace string, selector labels.Selector) (int, error)
	// DeletingVolumes counts the PersistentVolumes bound to claims of
	// namespace whose reclaim policy deletes them, live: a deleted
	// tenant's volumes are gone before it is released.
	DeletingVolumes(ctx context.Context, namespace string) (int, error)
}

// NewManagement implements Management over a kubernetes clientset.
func NewManagement(c kubernetes.Interface) Management { return kubeManagement{c} }

type kubeManagement struct{ c kubernetes.Interface }

type op int

const (
	opGet op = iota
	opApply
	opDelete
)

func (m kubeManagement) Get(ctx context.Context, proto builders.Object) (builders.Object, error) {
	return m.do(ctx, opGet, "", proto)
}

func (m kubeManagement) Apply(ctx context.Context, manager string, obj builders.Object) (builders.Object, error) {
	return m.do(ctx, opApply, manager, obj)
}

func (m kubeManagement) Delete(ctx context.Context, proto builders.Object) error {
	_, err := m.do(ctx, opDelete, "", proto)
	return err
}

func (m kubeManagement) ReadSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return m.c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (m kubeManagement) ListSecrets(ctx context.Context, namespace string) ([]corev1.Secret, error) {
	l, err := m.c.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (m kubeManagement) ListPods(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	l, err := m.c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (m kubeManagement) DeletingVolumes(ctx context.Context, namespace string) (int, error) {
	l, err := m.c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pv := range l.Items {
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == namespace && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
			n++
		}
	}
	return n, nil
}

// stopPodsPage bounds the pods StopPods reads and deletes per call; any
// more are found by the next sync (the sleep is not settled until none is
// left).
const stopPodsPage = 100

func (m kubeManagement) StopPods(ctx context.Context, namespace string, selector labels.Selector) (int, error) {
	pods := m.c.CoreV1().Pods(namespace)
	l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector.String(), Limit: stopPodsPage})
	if err != nil {
		return 0, err
	}
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		// By UID: a pod of the same name made since the list is not ours to stop.
		err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, err
		}
	}
	return len(l.Items), nil
}

// do dispatches on managedKinds.
func (m kubeManagement) do(ctx context.Context, o op, manager string, obj builders.Object) (builders.Object, error) {
	k, err := managedKindOf(obj)
	if err != nil {
		return nil, fmt.Errorf("management: %w", err)
	}
	return k.do(ctx, m.c, o, manager, obj)
}

// typedClient is the part of every generated typed client that do needs.
type typedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

func call[T builders.Object](ctx context.Context, c typedClient[T], o op, manager string, obj T) (builders.Object, error) {
	var (
		out T
		err error
	)
	switch o {
	case opGet:
		out, err = c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	case opDelete:
		// Background: the namespace's contents go with it server-side. A
		// proto with a UID deletes only that object, not a namesake made
		// since it was read.
		opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
		if uid := obj.GetUID(); uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		return nil, c.Delete(ctx, obj.GetName(), opts)
	case opApply:
		// The typed object serialises as a full apply configuration: the
		// builders set TypeMeta and only the fields capn owns.
		data, merr := json.Marshal(obj)
		if merr != nil {
			return nil, fmt.Errorf("encoding %T %s: %w", obj, obj.GetName(), merr)
		}
		out, err = c.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: manager, Force: ptr.To(true)})
	}
	if err != nil {
		return nil, err // never a typed nil inside the interface
	}
	return out, nil
}
