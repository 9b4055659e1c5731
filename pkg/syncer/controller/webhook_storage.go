package controller

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// The storage webhooks answer, in the tenant's terms and at the create,
// what claimKind would otherwise only refuse with an Event: a claim on a
// volume that is not provisioned for it, a class off the provider's list,
// a size over the quota. They are not the boundary (a tenant admin may
// delete the configuration until the syncer restores it): the host claim
// is built from an allow-list whatever the tenant wrote, and no tenant PV
// or StorageClass is ever read on the host.
const (
	ClaimWebhookPath   = "/validate-claims"
	StorageWebhookPath = "/validate-storage"
	claimWebhookName   = "claims.syncer.capn.dev"
	storageWebhookName = "storage.syncer.capn.dev"
)

var claimsResource = schema.GroupResource{Resource: "persistentvolumeclaims"}

// admitClaim refuses a tenant claim the shared data plane would not
// serve, and one the workload namespace's quota has no room for.
func (s *Syncer) admitClaim(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "PersistentVolumeClaim" || req.SubResource != "" {
		return allow
	}
	var pvc corev1.PersistentVolumeClaim
	if err := json.Unmarshal(req.Object.Raw, &pvc); err != nil {
		return deny(apierrors.NewBadRequest("the PersistentVolumeClaim does not decode"))
	}
	classes, err := s.allowedClassNames()
	if err != nil {
		return deny(apierrors.NewServiceUnavailable("could not read the management cluster's StorageClasses; retry"))
	}
	if errs := translate.AdmitClaim(&pvc, classes); len(errs) > 0 {
		return deny(apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim").GroupKind(), pvc.Name, errs))
	}
	quotas, err := s.o.Host.CoreV1().ResourceQuotas(s.o.WorkloadNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reading the workload namespace's quota", "claim", klog.KObj(&pvc))
		return deny(apierrors.NewServiceUnavailable("could not read the tenant's storage quota on the management cluster; retry"))
	}
	if msg := translate.ClaimQuotaExceeded(quotas.Items, pvc.Spec.Resources.Requests[corev1.ResourceStorage]); msg != "" {
		return deny(apierrors.NewForbidden(claimsResource, pvc.Name, errors.New(msg)))
	}
	return allow
}

// admitStorage refuses every PV and StorageClass write that reaches it:
// the match conditions let the syncer's and the PV controller's through.
// A tenant PV is a view of a host volume, and a tenant class a copy of an
// allowed host class; one a tenant writes would claim what it is not.
func admitStorage(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	gr := schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}
	why := "PersistentVolumes are provisioned for claims on the shared data plane; create a PersistentVolumeClaim"
	if gr.Resource == "storageclasses" {
		why = "StorageClasses are the provider's on the shared data plane; name one of them in a PersistentVolumeClaim"
	}
	return deny(apierrors.NewForbidden(gr, req.Name, errors.New(why)))
}

// claimWebhook sends tenant claim creates to admitClaim. failurePolicy
// Fail, as for Services: a claim made while no syncer answers would wait
// for one anyway.
func (s *Syncer) claimWebhook() admissionregistrationv1.MutatingWebhook {
	return s.webhook(claimWebhookName, ClaimWebhookPath, []admissionregistrationv1.RuleWithOperations{
		rule(admissionregistrationv1.NamespacedScope, "", "persistentvolumeclaims", admissionregistrationv1.Create),
	}, nil)
}

// storageWebhook sends PV and StorageClass writes by anyone but the
// syncer and the tenant's kube-controller-manager to admitStorage.
func (s *Syncer) storageWebhook() admissionregistrationv1.MutatingWebhook {
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	return s.webhook(storageWebhookName, StorageWebhookPath, []admissionregistrationv1.RuleWithOperations{
		rule(admissionregistrationv1.ClusterScope, "", "persistentvolumes", ops...),
		rule(admissionregistrationv1.ClusterScope, "storage.k8s.io", "storageclasses", ops...),
	}, []admissionregistrationv1.MatchCondition{{
		Name:       "not-the-syncer-or-the-pv-controller",
		Expression: storageWriters(),
	}})
}

// storageWriters is the CEL that leaves the syncer's and the PV
// controllers' writes alone.
func storageWriters() string {
	users := make([]string, 0, 1+len(names.PVControllerUsers))
	for _, u := range append([]string{names.SyncerUser}, names.PVControllerUsers...) {
		users = append(users, strconv.Quote(u))
	}
	return "!(request.userInfo.username in [" + strings.Join(users, ", ") + "])"
}

func rule(scope admissionregistrationv1.ScopeType, group, resource string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}, Scope: &scope},
	}
}

// webhook is one of the syncer's webhooks, with every field the
// apiserver would default set, so an unchanged configuration compares
// equal.
func (s *Syncer) webhook(name, path string, rules []admissionregistrationv1.RuleWithOperations, conds []admissionregistrationv1.MatchCondition) admissionregistrationv1.MutatingWebhook {
	url := "https://" + s.o.Webhook.AdvertiseAddress + path
	return admissionregistrationv1.MutatingWebhook{
		Name:                    name,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.webhookCA},
		Rules:                   rules,
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](webhookTimeoutSeconds),
		AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		MatchConditions:         conds,
	}
}
