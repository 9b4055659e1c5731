package controller

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// everything selects every object a lister holds.
var everything = labels.Everything()

// storageClassesKey is the StorageClass queue's one key: the tenant's
// classes are one set, the allow-list's.
const storageClassesKey = "storageclasses"

// storageClassKind keeps the tenant's StorageClasses the read-only copies
// of the provider's allow-listed host classes (Options.StorageClasses):
// made, restored when edited, replaced when the host's is, removed when
// off the list, and the default mark where the provider's default is.
type storageClassKind struct{ *Syncer }

func (k *storageClassKind) name() string { return kindStorageClasses }

func (k *storageClassKind) register(r *registrar) {
	q := r.queue(kindStorageClasses)
	enqueue := func(any) { q.Add(storageClassesKey) }
	handle(k.hostCluster.Storage().V1().StorageClasses().Informer(), enqueue)
	handle(k.tenant.Storage().V1().StorageClasses().Informer(), enqueue)
	r.afterSync(func(context.Context) error {
		q.Add(storageClassesKey)
		return nil
	})
}

// allowedClasses are the host classes tenants may use, and the default.
func (s *Syncer) allowedClasses() ([]*storagev1.StorageClass, string, error) {
	host, err := s.hostStorageClasses.List(everything)
	if err != nil {
		return nil, "", err
	}
	allowed, def := translate.AllowedStorageClasses(host, s.o.StorageClasses)
	return allowed, def, nil
}

// allowedClassNames are allowedClasses' names.
func (s *Syncer) allowedClassNames() ([]string, error) {
	allowed, _, err := s.allowedClasses()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(allowed))
	for _, c := range allowed {
		out = append(out, c.Name)
	}
	return out, nil
}

func (k *storageClassKind) sync(ctx context.Context, _ string) error {
	allowed, def, err := k.allowedClasses()
	if err != nil {
		return err
	}
	client := k.o.Tenant.StorageV1().StorageClasses()
	keep := map[string]bool{}
	for _, h := range allowed {
		keep[h.Name] = true
		want := translate.TenantStorageClass(h, h.Name == def)
		cur, err := cached(k.tenantStorageClasses.Get(h.Name))
		if err != nil {
			return err
		}
		// One of the same name that is not this copy (the tenant's own,
		// made while the webhook did not answer, or the host's replaced)
		// would mislead: claims naming it get the host's class.
		if cur != nil && (cur.Labels[managedByLabel] != names.ManagedByValue || !translate.SameStorageClass(cur, want)) {
			if err := deleteUID(ctx, client.Delete, cur); err != nil {
				return err
			}
			return fmt.Errorf("storageclass %s: replaced, recreating", h.Name)
		}
		if _, _, err := applyIfChanged(ctx, client, cur, want, storageClassFields); err != nil {
			return err
		}
	}
	tenant, err := k.tenantStorageClasses.List(labels.SelectorFromSet(labels.Set{managedByLabel: names.ManagedByValue}))
	if err != nil {
		return err
	}
	for _, t := range tenant {
		if !keep[t.Name] {
			if err := deleteUID(ctx, client.Delete, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// storageClassFields: expansion and the default mark; other annotations
// and labels are the tenant admin's to add.
var storageClassFields = owned[*storagev1.StorageClass]{
	equal: func(cur, want *storagev1.StorageClass) bool {
		return equalBoolPtr(cur.AllowVolumeExpansion, want.AllowVolumeExpansion) &&
			cur.Annotations[translate.AnnDefaultStorageClass] == want.Annotations[translate.AnnDefaultStorageClass]
	},
	merge: func(cur, want *storagev1.StorageClass) *storagev1.StorageClass {
		upd := cur.DeepCopy()
		upd.AllowVolumeExpansion = want.AllowVolumeExpansion
		if v, ok := want.Annotations[translate.AnnDefaultStorageClass]; ok {
			if upd.Annotations == nil {
				upd.Annotations = map[string]string{}
			}
			upd.Annotations[translate.AnnDefaultStorageClass] = v
		} else {
			delete(upd.Annotations, translate.AnnDefaultStorageClass)
		}
		return upd
	},
}

func equalBoolPtr(a, b *bool) bool {
	return (a == nil || !*a) == (b == nil || !*b)
}
