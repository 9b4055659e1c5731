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

// syncService gives a tenant Service its host Service, with the same
// ClusterIP, or removes the host Service of one that is gone.
func (s *Syncer) syncService(ctx context.Context, k string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return nil
	}
	if ns == metav1.NamespaceDefault && name == "kubernetes" {
		return nil // the tenant apiserver: pods reach it through env and hostAliases
	}
	client := s.o.Host.CoreV1().Services(s.o.WorkloadNamespace)
	hostName := names.Host(ns, name)
	cur, err := s.hostServices.Services(s.o.WorkloadNamespace).Get(hostName)
	if apierrors.IsNotFound(err) {
		cur = nil
	} else if err != nil {
		return err
	}
	tenant, err := s.tenantServices.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		tenant = nil
	} else if err != nil {
		return err
	}
	var want *corev1.Service
	if tenant != nil && tenant.DeletionTimestamp == nil {
		var errs []string
		w, ferrs := translate.HostService(tenant, s.o.WorkloadNamespace)
		for _, e := range ferrs {
			errs = append(errs, e.Error())
		}
		if len(errs) > 0 {
			s.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonServiceRefused, "not available on the shared data plane: %v", errs)
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
		if age := s.now().Sub(cur.CreationTimestamp.Time); age < pendingServiceGrace {
			s.services.AddAfter(k, pendingServiceGrace-age)
			return nil
		}
	}
	if cur != nil && (want == nil || cur.Labels[names.TenantUIDLabel] != string(tenant.UID) || cur.Spec.ClusterIP != want.Spec.ClusterIP) {
		// Gone, replaced, or its ClusterIP (immutable) changed.
		err := client.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
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
	if cur == nil {
		// Without the webhook (a Service from before it, or made while it
		// was off) the host is asked for the tenant's IP, which it may have
		// given away.
		_, err := client.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("service %s: not in the cache yet", hostName)
		}
		if apierrors.IsInvalid(err) {
			s.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonClusterIPConflict, "the management cluster cannot give this Service its ClusterIP %s", want.Spec.ClusterIP)
		}
		return err
	}
	if equality.Semantic.DeepEqual(cur.Spec.Ports, want.Spec.Ports) && equality.Semantic.DeepEqual(cur.Spec.Selector, want.Spec.Selector) &&
		cur.Spec.SessionAffinity == want.Spec.SessionAffinity && cur.Spec.PublishNotReadyAddresses == want.Spec.PublishNotReadyAddresses {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Spec.Ports, upd.Spec.Selector = want.Spec.Ports, want.Spec.Selector
	upd.Spec.SessionAffinity, upd.Spec.SessionAffinityConfig = want.Spec.SessionAffinity, want.Spec.SessionAffinityConfig
	upd.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
	_, err = client.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	return err
}
