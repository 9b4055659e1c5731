package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/tenant/names"
)

// addonDeployments registers enqueue for the addon Deployments and
// ServiceAccounts that mine selects, on informers every addon kind shares:
// kube-system only, only what carries the syncer's managed-by label. The
// factory is made by the first kind that asks and started before the
// caches sync.
func (s *Syncer) addonDeployments(r *registrar, mine func(any) bool, enqueue func()) (appslisters.DeploymentLister, corelisters.ServiceAccountLister) {
	if s.addons == nil {
		s.addons = informers.NewSharedInformerFactoryWithOptions(s.o.TenantWatch, s.o.ResyncPeriod,
			informers.WithNamespace(names.DNSNamespace),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = managedBySelector }))
		f := s.addons
		r.beforeSync(func(ctx context.Context) error {
			f.Start(ctx.Done())
			return nil
		})
	}
	deps := s.addons.Apps().V1().Deployments()
	sas := s.addons.Core().V1().ServiceAccounts()
	r.waitFor(deps.Informer().HasSynced, sas.Informer().HasSynced)
	add := func(obj any) {
		if mine(obj) {
			enqueue()
		}
	}
	// A Deployment's status moves with its pods; only a change to what
	// capn applies (the spec, its labels) needs an apply.
	_, _ = deps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: add,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(metav1.Object)
			c, ok2 := cur.(metav1.Object)
			if ok1 && ok2 && o.GetGeneration() == c.GetGeneration() &&
				labels.Equals(o.GetLabels(), c.GetLabels()) && labels.Equals(o.GetAnnotations(), c.GetAnnotations()) {
				return
			}
			add(cur)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			add(obj)
		},
	})
	handle(sas.Informer(), add)
	return deps.Lister(), sas.Lister()
}

// addonObject is one object of an addon: how to read it from a cache and
// how to delete it.
type addonObject struct {
	get func() (metav1.Object, error)
	del func() error
}

// removeAddon deletes, in order, the objects that exist and carry the
// syncer's managed-by label: a tenant's own object of the same name is
// not capn's to remove.
func removeAddon(addon string, objs []addonObject) error {
	for _, o := range objs {
		m, err := o.get()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if m.GetLabels()[managedByLabel] != names.ManagedByValue {
			continue
		}
		if err := o.del(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the %s addon: %w", addon, err)
		}
	}
	return nil
}
