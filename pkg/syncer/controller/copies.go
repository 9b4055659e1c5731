package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	cmdsyncer "capn.dev/capn/pkg/cmd/syncer"
	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// The bound on copied bytes is read from the informer caches: two workers
// creating pods at once may each see room the other is about to use, so
// the total may pass the bound by what is in flight (at most one pod's
// references per worker), never by more.

func (s *Syncer) maxCopiedBytes() resource.Quantity {
	if s.o.MaxCopiedBytes.IsZero() {
		return resource.MustParse(names.MaxCopiedBytes)
	}
	return s.o.MaxCopiedBytes
}

// hostCopies are the ConfigMaps and Secrets in the workload namespace
// with their sizes: the copies, and the pods' own Secrets, which are this
// tenant's data in the management etcd too.
func (s *Syncer) hostCopies() (translate.Copies, error) {
	out := translate.Copies{}
	cms, err := s.hostConfigMaps.ConfigMaps(s.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, cm := range cms {
		out[translate.CopyKey{Name: cm.Name}] = translate.ConfigMapSize(cm)
	}
	secrets, err := s.hostSecrets.Secrets(s.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, sec := range secrets {
		out[translate.CopyKey{Secret: true, Name: sec.Name}] = translate.SecretSize(sec)
	}
	return out, nil
}

// wantedCopies are the copies res references, at the size of the tenant's
// objects now. Those the tenant does not have are left out:
// syncReferences makes the pod wait for them, and it is checked again
// when they exist.
func (s *Syncer) wantedCopies(ns string, res *translate.Result) (translate.Copies, error) {
	out := translate.Copies{}
	ws := s.o.WorkloadNamespace
	if err := addWanted(out, false, ns, res.ConfigMaps, s.tenantConfigMaps.ConfigMaps(ns).Get,
		func(cm *corev1.ConfigMap) int64 { return translate.ConfigMapSize(translate.HostConfigMap(cm, ws)) }); err != nil {
		return nil, err
	}
	if err := addWanted(out, true, ns, res.Secrets, s.tenantSecrets.Secrets(ns).Get,
		func(sec *corev1.Secret) int64 { return translate.SecretSize(translate.HostSecret(sec, ws)) }); err != nil {
		return nil, err
	}
	return out, nil
}

// addWanted adds the copies of the tenant objects refs of namespace ns.
func addWanted[T any](out translate.Copies, secret bool, ns string, refs []string, get func(string) (T, error), size func(T) int64) error {
	for _, name := range refs {
		o, err := get(name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		out[translate.CopyKey{Secret: secret, Name: names.Host(ns, name)}] = size(o)
	}
	return nil
}

// checkCopies is the refusal of a pod whose references would take the
// copies past --max-copied-bytes, nil if they fit.
func (s *Syncer) checkCopies(ns string, res *translate.Result) (*field.Error, error) {
	want, err := s.wantedCopies(ns, res)
	if err != nil || len(want) == 0 {
		return nil, err
	}
	host, err := s.hostCopies()
	if err != nil {
		return nil, err
	}
	return translate.CheckCopiedBytes(host, want, s.maxCopiedBytes(), field.NewPath("spec")), nil
}

// copyFits reports whether writing key at size keeps the copies within
// the bound. One that would not is not written: the old copy stays, which
// the pods using it already run with, rather than failing them or
// retrying a write that cannot succeed until the tenant shrinks it.
func (s *Syncer) copyFits(ctx context.Context, key translate.CopyKey, size int64) (bool, error) {
	host, err := s.hostCopies()
	if err != nil {
		return false, fmt.Errorf("sizing the host copies: %w", err)
	}
	bound := s.maxCopiedBytes()
	if ferr := translate.CheckCopiedBytes(host, translate.Copies{key: size}, bound, field.NewPath("data")); ferr != nil {
		klog.FromContext(ctx).Info("Not updating a host copy: it would take the copies past the bound; the old copy is kept",
			"name", key.Name, "secret", key.Secret, "size", size, "flag", "--"+cmdsyncer.FlagMaxCopiedBytes, "bound", bound.String())
		return false, nil
	}
	return true, nil
}
