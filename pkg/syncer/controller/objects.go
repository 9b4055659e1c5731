package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

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

// recentUses are the host ConfigMaps and Secrets that pod creates relied
// on, and when. The collector reads references from the host pod cache,
// which shows a new pod only after its create: a copy that already
// existed (an old one, or the pod's own Secret, which a StatefulSet pod's
// replacement inherits by name) would look unreferenced and old enough in
// between, and its deletion would leave the new pod failing to mount it.
type recentUses struct {
	mu sync.Mutex
	at map[translate.CopyKey]time.Time
}

func (u *recentUses) mark(now time.Time, keys ...translate.CopyKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.at == nil {
		u.at = map[translate.CopyKey]time.Time{}
	}
	for _, k := range keys {
		u.at[k] = now
	}
}

// recent reports whether k was used within gcMinAge of now, and forgets
// the uses that are older.
func (u *recentUses) recent(k translate.CopyKey, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for key, at := range u.at {
		if now.Sub(at) > gcMinAge {
			delete(u.at, key)
		}
	}
	_, ok := u.at[k]
	return ok
}

// markUsed records what the pod of res is about to reference.
func (s *Syncer) markUsed(ns string, res *translate.Result) {
	keys := make([]translate.CopyKey, 0, len(res.ConfigMaps)+len(res.Secrets)+1)
	for _, n := range res.ConfigMaps {
		keys = append(keys, translate.CopyKey{Name: names.Host(ns, n)})
	}
	for _, n := range res.Secrets {
		keys = append(keys, translate.CopyKey{Secret: true, Name: names.Host(ns, n)})
	}
	if res.SecretName != "" {
		keys = append(keys, translate.CopyKey{Secret: true, Name: res.SecretName})
	}
	s.justUsed.mark(s.now(), keys...)
}

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
	// claimKind makes host claims; a pod waits for its claims' (the
	// tenant's scheduler binds a pod only once its claims are bound, so
	// this is a cache that is behind).
	for _, name := range res.Claims {
		c, err := cached(s.hostClaims.PersistentVolumeClaims(s.o.WorkloadNamespace).Get(names.Host(ns, name)))
		if err != nil {
			return nil, err
		}
		if c == nil {
			missing = append(missing, "persistentvolumeclaim "+name)
		}
	}
	return missing, nil
}

// copyConfigMap creates or updates the host copy of t. A new copy was
// sized with its pod (checkCopies); an update that would take the copies
// past the bound is not made (copyFits).
func (s *Syncer) copyConfigMap(ctx context.Context, t *corev1.ConfigMap) error {
	want := translate.HostConfigMap(t, s.o.WorkloadNamespace)
	cur, err := cached(s.hostConfigMaps.ConfigMaps(s.o.WorkloadNamespace).Get(want.Name))
	if err != nil {
		return err
	}
	if cur != nil {
		if fits, err := s.copyFits(ctx, translate.CopyKey{Name: want.Name}, translate.ConfigMapSize(want)); !fits {
			return err
		}
	}
	_, _, err = applyIfChanged(ctx, s.o.Host.CoreV1().ConfigMaps(s.o.WorkloadNamespace), cur, want, configMapFields)
	return err
}

// configMapFields: the data and the identity labels; the annotations
// follow the data, as the syncer's alone.
var configMapFields = owned[*corev1.ConfigMap]{
	equal: func(cur, want *corev1.ConfigMap) bool {
		return equality.Semantic.DeepEqual(cur.Data, want.Data) && equality.Semantic.DeepEqual(cur.BinaryData, want.BinaryData) &&
			equality.Semantic.DeepEqual(cur.Labels, want.Labels)
	},
	merge: func(cur, want *corev1.ConfigMap) *corev1.ConfigMap {
		upd := cur.DeepCopy()
		upd.Data, upd.BinaryData, upd.Labels, upd.Annotations = want.Data, want.BinaryData, want.Labels, want.Annotations
		return upd
	},
}

// copySecret creates or updates the host copy of t; one whose type
// (immutable) changed is deleted, and made again by the retry.
func (s *Syncer) copySecret(ctx context.Context, t *corev1.Secret) error {
	want := translate.HostSecret(t, s.o.WorkloadNamespace)
	client := s.o.Host.CoreV1().Secrets(s.o.WorkloadNamespace)
	cur, err := cached(s.hostSecrets.Secrets(s.o.WorkloadNamespace).Get(want.Name))
	if err != nil {
		return err
	}
	if cur != nil && cur.Type != want.Type {
		if err := deleteUID(ctx, client.Delete, cur); err != nil {
			return err
		}
		return fmt.Errorf("secret %s: type changed, recreating", want.Name)
	}
	if cur != nil {
		if fits, err := s.copyFits(ctx, translate.CopyKey{Secret: true, Name: want.Name}, translate.SecretSize(want)); !fits {
			return err
		}
	}
	_, _, err = applyIfChanged(ctx, client, cur, want, secretFields)
	return err
}

// secretFields: as configMapFields.
var secretFields = owned[*corev1.Secret]{
	equal: func(cur, want *corev1.Secret) bool {
		return equality.Semantic.DeepEqual(cur.Data, want.Data) && equality.Semantic.DeepEqual(cur.Labels, want.Labels)
	},
	merge: func(cur, want *corev1.Secret) *corev1.Secret {
		upd := cur.DeepCopy()
		upd.Data, upd.Labels, upd.Annotations = want.Data, want.Labels, want.Annotations
		return upd
	},
}

// configMapKind keeps the host copies of tenant ConfigMaps up to date.
// Copies are made when a pod needs them (podKind), and kept while pods use
// them, as a kubelet keeps a mounted copy, even after the tenant's is
// deleted (gcKind collects them).
type configMapKind struct{ *Syncer }

func (k *configMapKind) name() string { return kindConfigMaps }

func (k *configMapKind) register(r *registrar) {
	q, dns := r.queue(kindConfigMaps), r.queue(kindDNS)
	handle(k.tenant.Core().V1().ConfigMaps().Informer(), func(obj any) {
		q.Add(key(obj))
		if isDNSObject(obj) {
			dns.Add(dnsKey)
		}
	})
	handle(k.host.Core().V1().ConfigMaps().Informer(), byIdentity(q))
}

func (k *configMapKind) sync(ctx context.Context, key string) error {
	return syncCopy(ctx, key, k.hostConfigMaps.ConfigMaps(k.o.WorkloadNamespace).Get, k.tenantConfigMaps.ConfigMaps, k.copyConfigMap)
}

// secretKind is configMapKind's twin for Secrets.
type secretKind struct{ *Syncer }

func (k *secretKind) name() string { return kindSecrets }

func (k *secretKind) register(r *registrar) {
	q := r.queue(kindSecrets)
	handle(k.tenant.Core().V1().Secrets().Informer(), func(obj any) { q.Add(key(obj)) })
	handle(k.host.Core().V1().Secrets().Informer(), byIdentity(q))
}

func (k *secretKind) sync(ctx context.Context, key string) error {
	return syncCopy(ctx, key, k.hostSecrets.Secrets(k.o.WorkloadNamespace).Get, k.tenantSecrets.Secrets, k.copySecret)
}

// namespaceGetter is a lister's namespaced half.
type namespaceGetter[T any] interface{ Get(name string) (T, error) }

// syncCopy updates the host copy of the tenant object key, if there is
// one (a pod needed it) and the tenant's is still there: a copy is kept
// while pods use it, as a kubelet keeps a mounted copy.
func syncCopy[O any, T object[O], G namespaceGetter[T]](ctx context.Context, key string,
	hostGet func(string) (T, error), tenantNS func(string) G, update func(context.Context, T) error) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if _, err := hostGet(names.Host(ns, name)); apierrors.IsNotFound(err) {
		return nil
	}
	t, err := cached(tenantNS(ns).Get(name))
	if t == nil || err != nil {
		return err
	}
	return update(ctx, t)
}

// gcKey is the gc queue's one key.
const gcKey = "gc"

// gcKind removes host ConfigMaps and Secrets no host pod references any
// more, once a host pod is gone.
type gcKind struct {
	*Syncer
	q queue
}

func (k *gcKind) name() string { return kindGC }

// register collects when a host pod leaves the cache, not when the syncer
// asks for its deletion: a terminating pod still holds its references,
// and its removal is the last event there is about it.
func (k *gcKind) register(r *registrar) {
	k.q = r.queue(kindGC)
	_, _ = k.host.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(any) { k.q.AddAfter(gcKey, time.Second) },
	})
}

func (k *gcKind) sync(ctx context.Context, _ string) error { return k.collect(ctx) }

// collect deletes host ConfigMaps and Secrets that no host pod references.
func (k *gcKind) collect(ctx context.Context) error {
	pods, err := k.hostPods.Pods(k.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	cms, secrets := sets.New[string](), sets.New[string]()
	for _, p := range pods {
		refsOf(&p.Spec, cms, secrets)
	}
	old := func(o metav1.Object) bool { return k.now().Sub(o.GetCreationTimestamp().Time) > gcMinAge }
	hostCMs, err := k.hostConfigMaps.ConfigMaps(k.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var retry bool
	for _, cm := range hostCMs {
		if cms.Has(cm.Name) {
			continue
		}
		if !old(cm) || k.justUsed.recent(translate.CopyKey{Name: cm.Name}, k.now()) {
			retry = true
			continue
		}
		if err := deleteUID(ctx, k.o.Host.CoreV1().ConfigMaps(cm.Namespace).Delete, cm); err != nil {
			return err
		}
	}
	hostSecrets, err := k.hostSecrets.Secrets(k.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, sec := range hostSecrets {
		if secrets.Has(sec.Name) {
			continue
		}
		if !old(sec) || k.justUsed.recent(translate.CopyKey{Secret: true, Name: sec.Name}, k.now()) {
			retry = true
			continue
		}
		if err := deleteUID(ctx, k.o.Host.CoreV1().Secrets(sec.Namespace).Delete, sec); err != nil {
			return err
		}
	}
	if retry {
		k.q.AddAfter(gcKey, gcMinAge)
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
