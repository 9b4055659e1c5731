package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// Reasons on tenant Services.
const (
	ReasonServiceRefused    = "ServiceRefused"
	ReasonClusterIPConflict = "ClusterIPConflict"
)

// serviceKind gives each tenant ClusterIP Service its host Service.
type serviceKind struct {
	*Syncer
	// q is its own queue: a Service the webhook made waits on it.
	q queue
}

func (k *serviceKind) name() string { return kindServices }

func (k *serviceKind) register(r *registrar) {
	k.q = r.queue(kindServices)
	dns := r.queue(kindDNS)
	handle(k.tenant.Core().V1().Services().Informer(), func(obj any) {
		k.q.Add(key(obj))
		if isDNSObject(obj) {
			dns.Add(dnsKey)
		}
	})
	// By namespace and name, not identity(): a host Service the webhook
	// made has no tenant UID until sync adopts it.
	handle(k.host.Core().V1().Services().Informer(), func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			ns, name := m.GetLabels()[names.TenantNamespaceLabel], m.GetAnnotations()[names.TenantNameAnnotation]
			if ns != "" && name != "" {
				k.q.Add(ns + "/" + name)
			}
		}
	})
}

// serviceFields: what the tenant sets and the host may change in place.
// The ClusterIP is immutable (sync replaces the Service), and what the
// host's apiserver defaults stays as it is.
var serviceFields = owned[*corev1.Service]{
	equal: func(cur, want *corev1.Service) bool {
		return equality.Semantic.DeepEqual(cur.Spec.Ports, want.Spec.Ports) && equality.Semantic.DeepEqual(cur.Spec.Selector, want.Spec.Selector) &&
			cur.Spec.SessionAffinity == want.Spec.SessionAffinity && cur.Spec.PublishNotReadyAddresses == want.Spec.PublishNotReadyAddresses
	},
	merge: func(cur, want *corev1.Service) *corev1.Service {
		upd := cur.DeepCopy()
		upd.Spec.Ports, upd.Spec.Selector = want.Spec.Ports, want.Spec.Selector
		upd.Spec.SessionAffinity, upd.Spec.SessionAffinityConfig = want.Spec.SessionAffinity, want.Spec.SessionAffinityConfig
		upd.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
		return upd
	},
}

// sync gives a tenant Service its host Service, with the same ClusterIP,
// or removes the host Service of one that is gone.
func (k *serviceKind) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if ns == metav1.NamespaceDefault && name == "kubernetes" {
		return nil // the tenant apiserver: pods reach it through env and hostAliases
	}
	client := k.o.Host.CoreV1().Services(k.o.WorkloadNamespace)
	hostName := names.Host(ns, name)
	cur, err := cached(k.hostServices.Services(k.o.WorkloadNamespace).Get(hostName))
	if err != nil {
		return err
	}
	tenant, err := cached(k.tenantServices.Services(ns).Get(name))
	if err != nil {
		return err
	}
	var want *corev1.Service
	if tenant != nil && tenant.DeletionTimestamp == nil {
		var errs []string
		w, ferrs := translate.HostService(tenant, k.o.WorkloadNamespace)
		for _, e := range ferrs {
			errs = append(errs, e.Error())
		}
		if len(errs) > 0 {
			k.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonServiceRefused, "not available on the shared data plane: %v", errs)
		}
		want = w
	}
	if cur != nil && cur.Labels[names.TenantUIDLabel] == "" {
		// The webhook allocated it for a create that may still land.
		if want != nil && cur.Spec.ClusterIP == want.Spec.ClusterIP {
			upd := cur.DeepCopy()
			upd.Labels = want.Labels
			_, err := client.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
			return err
		}
		if age := k.now().Sub(cur.CreationTimestamp.Time); age < pendingServiceGrace {
			k.q.AddAfter(key, pendingServiceGrace-age)
			return nil
		}
	}
	if cur != nil && (want == nil || cur.Labels[names.TenantUIDLabel] != string(tenant.UID) || cur.Spec.ClusterIP != want.Spec.ClusterIP) {
		// Gone, replaced, or its ClusterIP (immutable) changed.
		if err := deleteUID(ctx, client.Delete, cur); err != nil {
			return err
		}
		if want == nil {
			return nil
		}
		return fmt.Errorf("service %s: replaced, recreating", hostName)
	}
	if want == nil {
		return nil
	}
	// Without the webhook (a Service from before it, or made while it was
	// off) a create asks the host for the tenant's IP, which it may have
	// given away.
	_, _, err = applyIfChanged(ctx, client, cur, want, serviceFields)
	if cur == nil && apierrors.IsInvalid(err) {
		k.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonClusterIPConflict, "the management cluster cannot give this Service its ClusterIP %s", want.Spec.ClusterIP)
	}
	return err
}
