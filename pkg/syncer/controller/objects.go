package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// managedBySelector selects the syncer's host objects.
const (
	managedByLabel    = "app.kubernetes.io/managed-by"
	managedBySelector = managedByLabel + "=" + names.ManagedByValue
)

// gcMinAge keeps the collector off copies made for a pod that is about to
// be created: they are referenced only once it exists.
const gcMinAge = time.Minute

// syncReferences creates or updates the host copies of the ConfigMaps and
// Secrets res references in namespace ns, and names the ones the tenant
// does not have (yet).
func (s *Syncer) syncReferences(ctx context.Context, ns string, res *translate.Result) ([]string, error) {
	var missing []string
	for _, name := range res.ConfigMaps {
		cm, err := s.tenantConfigMaps.ConfigMaps(ns).Get(name)
		if apierrors.IsNotFound(err) {
			missing = append(missing, "configmap "+name)
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := s.copyConfigMap(ctx, cm); err != nil {
			return nil, err
		}
	}
	for _, name := range res.Secrets {
		sec, err := s.tenantSecrets.Secrets(ns).Get(name)
		if apierrors.IsNotFound(err) {
			missing = append(missing, "secret "+name)
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := s.copySecret(ctx, sec); err != nil {
			return nil, err
		}
	}
	return missing, nil
}

func (s *Syncer) hostMeta(tenant metav1.Object) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        names.Host(tenant.GetNamespace(), tenant.GetName()),
		Namespace:   s.o.WorkloadNamespace,
		Labels:      translate.HostLabels(tenant.GetNamespace(), string(tenant.GetUID()), nil),
		Annotations: map[string]string{names.TenantNameAnnotation: tenant.GetName()},
	}
}

func (s *Syncer) copyConfigMap(ctx context.Context, t *corev1.ConfigMap) error {
	want := &corev1.ConfigMap{ObjectMeta: s.hostMeta(t), Data: t.Data, BinaryData: t.BinaryData}
	client := s.o.Host.CoreV1().ConfigMaps(s.o.WorkloadNamespace)
	cur, err := s.hostConfigMaps.ConfigMaps(s.o.WorkloadNamespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = client.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("configmap %s: not in the cache yet", want.Name)
		}
		return err
	}
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(cur.Data, want.Data) && equality.Semantic.DeepEqual(cur.BinaryData, want.BinaryData) &&
		equality.Semantic.DeepEqual(cur.Labels, want.Labels) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Data, upd.BinaryData, upd.Labels, upd.Annotations = want.Data, want.BinaryData, want.Labels, want.Annotations
	_, err = client.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	return err
}

// hostSecretType: a service-account-token Secret on the host would be
// handled by the host's token controller; its copy is Opaque.
func hostSecretType(t corev1.SecretType) corev1.SecretType {
	if t == corev1.SecretTypeServiceAccountToken {
		return corev1.SecretTypeOpaque
	}
	return t
}

func (s *Syncer) copySecret(ctx context.Context, t *corev1.Secret) error {
	want := &corev1.Secret{ObjectMeta: s.hostMeta(t), Type: hostSecretType(t.Type), Data: t.Data}
	client := s.o.Host.CoreV1().Secrets(s.o.WorkloadNamespace)
	cur, err := s.hostSecrets.Secrets(s.o.WorkloadNamespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = client.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("secret %s: not in the cache yet", want.Name)
		}
		return err
	}
	if err != nil {
		return err
	}
	if cur.Type != want.Type {
		// Type is immutable: replace it.
		if err := client.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return fmt.Errorf("secret %s: type changed, recreating", want.Name)
	}
	if equality.Semantic.DeepEqual(cur.Data, want.Data) && equality.Semantic.DeepEqual(cur.Labels, want.Labels) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Data, upd.Labels, upd.Annotations = want.Data, want.Labels, want.Annotations
	_, err = client.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	return err
}

// syncObject keeps an existing host copy of a tenant ConfigMap or Secret up
// to date (copies are made when a pod needs them), or collects garbage.
func (s *Syncer) syncObject(ctx context.Context, k string) error {
	switch k {
	case gcKey:
		return s.collect(ctx)
	case webhookKey:
		return s.syncWebhook(ctx)
	case dnsKey:
		return s.syncDNS(ctx)
	}
	kind, rest, _ := strings.Cut(k, "/")
	ns, name, _ := strings.Cut(rest, "/")
	host := names.Host(ns, name)
	switch kind {
	case "configmap":
		if _, err := s.hostConfigMaps.ConfigMaps(s.o.WorkloadNamespace).Get(host); apierrors.IsNotFound(err) {
			return nil
		}
		t, err := s.tenantConfigMaps.ConfigMaps(ns).Get(name)
		if apierrors.IsNotFound(err) {
			return nil // kept while pods use it, as a kubelet keeps a mounted copy
		}
		if err != nil {
			return err
		}
		return s.copyConfigMap(ctx, t)
	case "secret":
		if _, err := s.hostSecrets.Secrets(s.o.WorkloadNamespace).Get(host); apierrors.IsNotFound(err) {
			return nil
		}
		t, err := s.tenantSecrets.Secrets(ns).Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.copySecret(ctx, t)
	}
	return nil
}

// collect deletes host ConfigMaps and Secrets that no host pod references.
func (s *Syncer) collect(ctx context.Context) error {
	pods, err := s.hostPods.Pods(s.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	cms, secrets := sets.New[string](), sets.New[string]()
	for _, p := range pods {
		refsOf(&p.Spec, cms, secrets)
	}
	old := func(o metav1.Object) bool { return s.now().Sub(o.GetCreationTimestamp().Time) > gcMinAge }
	hostCMs, err := s.hostConfigMaps.ConfigMaps(s.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var retry bool
	for _, cm := range hostCMs {
		if cms.Has(cm.Name) {
			continue
		}
		if !old(cm) {
			retry = true
			continue
		}
		if err := s.o.Host.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	hostSecrets, err := s.hostSecrets.Secrets(s.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, sec := range hostSecrets {
		if secrets.Has(sec.Name) {
			continue
		}
		if !old(sec) {
			retry = true
			continue
		}
		if err := s.o.Host.CoreV1().Secrets(sec.Namespace).Delete(ctx, sec.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sec.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if retry {
		s.objects.AddAfter(gcKey, gcMinAge)
	}
	return nil
}

// refsOf adds the ConfigMaps and Secrets spec references.
func refsOf(spec *corev1.PodSpec, cms, secrets sets.Set[string]) {
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			cms.Insert(v.ConfigMap.Name)
		}
		if v.Secret != nil {
			secrets.Insert(v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					cms.Insert(src.ConfigMap.Name)
				}
				if src.Secret != nil {
					secrets.Insert(src.Secret.Name)
				}
			}
		}
	}
	for _, ps := range spec.ImagePullSecrets {
		secrets.Insert(ps.Name)
	}
	for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				cms.Insert(e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				secrets.Insert(e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, ef := range c.EnvFrom {
			if ef.ConfigMapRef != nil {
				cms.Insert(ef.ConfigMapRef.Name)
			}
			if ef.SecretRef != nil {
				secrets.Insert(ef.SecretRef.Name)
			}
		}
	}
}
