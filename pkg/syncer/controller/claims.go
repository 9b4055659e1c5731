package controller

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// Reasons on tenant PersistentVolumeClaims.
const (
	// ReasonClaimRefused: the claim asks for what the shared data plane
	// does not give tenants (another volume, a class off the list).
	ReasonClaimRefused = "ClaimRefused"
	// ReasonHostVolumeReplaced: a bound claim's host claim was gone (a
	// restore, a provider's hand); a new, empty volume serves it.
	ReasonHostVolumeReplaced = "HostVolumeReplaced"
)

// claimIndex indexes the tenant PVs by the claim ("<namespace>/<name>")
// they are bound to.
const claimIndex = "claim"

func claimOf(obj any) ([]string, error) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok || pv.Spec.ClaimRef == nil {
		return nil, nil
	}
	return []string{pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name}, nil
}

// claimKind gives each tenant PersistentVolumeClaim its host claim, and
// the tenant the PV of the volume the host bound it to, as an external
// provisioner would: the tenant's PV controller binds the two, and its
// scheduler's wait for a WaitForFirstConsumer claim ends. The host
// claim's resize and conditions come back to the tenant claim. A claim
// gone from the tenant (its pods gone first: pvc-protection) takes its
// host claim, whose volume the host's provisioner deletes, and its PV.
type claimKind struct{ *Syncer }

func (k *claimKind) name() string { return kindClaims }

func (k *claimKind) register(r *registrar) {
	q := r.queue(kindClaims)
	handle(k.tenant.Core().V1().PersistentVolumeClaims().Informer(), func(obj any) { q.Add(key(obj)) })
	handle(k.host.Core().V1().PersistentVolumeClaims().Informer(), byIdentity(q))
	handle(k.tenant.Core().V1().PersistentVolumes().Informer(), func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.Labels[managedByLabel] == names.ManagedByValue && pv.Spec.ClaimRef != nil {
			q.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
		}
	})
	// A class coming into the allow-list serves the claims that named it.
	handle(k.hostCluster.Storage().V1().StorageClasses().Informer(), func(any) {
		claims, err := k.tenantClaims.List(everything)
		if err != nil {
			return
		}
		for _, c := range claims {
			if c.Spec.VolumeName == "" {
				q.Add(c.Namespace + "/" + c.Name)
			}
		}
	})
}

// sync converges the tenant claim key, its host claim and its tenant PV.
func (k *claimKind) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	hostClient := k.o.Host.CoreV1().PersistentVolumeClaims(k.o.WorkloadNamespace)
	tenant, err := cached(k.tenantClaims.PersistentVolumeClaims(ns).Get(name))
	if err != nil {
		return err
	}
	host, err := cached(k.hostClaims.PersistentVolumeClaims(k.o.WorkloadNamespace).Get(names.Host(ns, name)))
	if err != nil {
		return err
	}
	if err := k.deleteStaleVolumes(ctx, key, tenant); err != nil {
		return err
	}
	// A host claim made for an earlier tenant claim of the same name is
	// that claim's: its volume goes with it.
	if host != nil && (tenant == nil || host.Labels[names.TenantUIDLabel] != string(tenant.UID)) {
		return deleteUID(ctx, hostClient.Delete, host)
	}
	if tenant == nil {
		return nil
	}
	if tenant.DeletionTimestamp != nil {
		// pvc-protection holds it while a pod uses it; the host claim
		// stays until it is gone, and the host's own protection holds
		// that while the host pod is.
		return nil
	}
	if tenant.Spec.StorageClassName == nil {
		// The tenant's PV controller gives it the default class once the
		// tenant has one.
		return nil
	}
	classes, err := k.allowedClassNames()
	if err != nil {
		return err
	}
	want, errs := translate.HostClaim(tenant, translate.StorageContext{
		WorkloadNamespace: k.o.WorkloadNamespace, Classes: classes, SelectedNode: k.selectedNode(tenant),
	})
	if len(errs) > 0 {
		if host == nil {
			k.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonClaimRefused, "not available on the shared data plane: %s", refusal(errs))
		}
		return nil
	}
	if host == nil && tenant.Spec.VolumeName != "" {
		k.recorder.Event(tenant, corev1.EventTypeWarning, ReasonHostVolumeReplaced,
			"the claim's volume on the management cluster was gone; a new, empty volume is provisioned for it")
	}
	host, _, err = applyIfChanged(ctx, hostClient, host, want, hostClaimFields)
	if apierrors.IsForbidden(err) {
		k.recorder.Event(tenant, corev1.EventTypeWarning, ReasonHostQuotaExceeded, "the tenant's data-plane storage quota is used up; the claim waits")
	}
	if err != nil {
		return fmt.Errorf("claim %s: %w", key, err)
	}
	if err := k.syncVolume(ctx, tenant, host); err != nil {
		return err
	}
	return k.syncClaimStatus(ctx, tenant, host)
}

// selectedNode is the node the tenant's scheduler chose for tenant, if
// it is one of this syncer's: the host provisioner makes the volume there.
func (k *claimKind) selectedNode(tenant *corev1.PersistentVolumeClaim) string {
	n := tenant.Annotations[translate.AnnSelectedNode]
	if n == "" {
		return ""
	}
	if _, err := k.hostNodes.Get(n); err != nil {
		return ""
	}
	return n
}

// hostClaimFields: the identity, the node the tenant chose (set once:
// the provisioner reads it once) and a grown request; what the host's
// controllers annotate stays.
var hostClaimFields = owned[*corev1.PersistentVolumeClaim]{
	equal: func(cur, want *corev1.PersistentVolumeClaim) bool {
		_, grow := translate.ClaimResize(want, cur)
		return !grow && maps.Equal(cur.Labels, want.Labels) && subset(want.Annotations, cur.Annotations)
	},
	merge: func(cur, want *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		upd := cur.DeepCopy()
		upd.Labels = want.Labels
		upd.Annotations = withEntries(upd.Annotations, want.Annotations)
		if q, grow := translate.ClaimResize(want, cur); grow {
			upd.Spec.Resources.Requests[corev1.ResourceStorage] = q
		}
		return upd
	},
}

func subset(small, big map[string]string) bool {
	for k, v := range small {
		if w, ok := big[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// syncVolume writes the tenant PV of tenant once host is bound.
func (k *claimKind) syncVolume(ctx context.Context, tenant, host *corev1.PersistentVolumeClaim) error {
	class, err := cached(k.hostStorageClasses.Get(*tenant.Spec.StorageClassName))
	if err != nil || class == nil {
		return err
	}
	var node *corev1.Node
	if n := host.Annotations[translate.AnnSelectedNode]; n != "" {
		if node, err = cached(k.hostNodes.Get(n)); err != nil {
			return err
		}
	}
	want := translate.TenantPV(tenant, host, class.Provisioner, node)
	if want == nil {
		return nil
	}
	cur, err := cached(k.tenantVolumes.Get(want.Name))
	if err != nil {
		return err
	}
	if cur != nil && cur.Labels[managedByLabel] != names.ManagedByValue {
		// Not the syncer's (the webhook refuses tenant PVs; this one was
		// made while it did not answer): the claim stays unbound.
		return nil
	}
	_, _, err = applyIfChanged(ctx, k.o.Tenant.CoreV1().PersistentVolumes(), cur, want, tenantVolumeFields)
	return err
}

// tenantVolumeFields: the capacity (a resize) and the claim it is bound
// to; the tenant PV controller owns its status and finalizers.
var tenantVolumeFields = owned[*corev1.PersistentVolume]{
	equal: func(cur, want *corev1.PersistentVolume) bool {
		return equality.Semantic.DeepEqual(cur.Spec.Capacity, want.Spec.Capacity) && sameClaimRef(cur.Spec.ClaimRef, want.Spec.ClaimRef) &&
			subset(want.Labels, cur.Labels) && subset(want.Annotations, cur.Annotations)
	},
	merge: func(cur, want *corev1.PersistentVolume) *corev1.PersistentVolume {
		upd := cur.DeepCopy()
		upd.Spec.Capacity, upd.Spec.ClaimRef = want.Spec.Capacity, want.Spec.ClaimRef
		upd.Labels = withEntries(upd.Labels, want.Labels)
		upd.Annotations = withEntries(upd.Annotations, want.Annotations)
		return upd
	},
}

// sameClaimRef compares the claim a PV is bound to; the PV controller may
// add a resourceVersion.
func sameClaimRef(a, b *corev1.ObjectReference) bool {
	return a != nil && b != nil && a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID
}

// deleteStaleVolumes deletes the syncer's tenant PVs bound to the claim
// key that are not tenant's (none when it is gone): the PV controller
// leaves a Released volume to the provisioner that made it, the syncer.
func (k *claimKind) deleteStaleVolumes(ctx context.Context, key string, tenant *corev1.PersistentVolumeClaim) error {
	objs, err := k.tenantVolumeIndex.ByIndex(claimIndex, key)
	if err != nil {
		return err
	}
	for _, o := range objs {
		pv, ok := o.(*corev1.PersistentVolume)
		if !ok || pv.Labels[managedByLabel] != names.ManagedByValue || pv.DeletionTimestamp != nil {
			continue
		}
		if tenant != nil && pv.Spec.ClaimRef.UID == tenant.UID {
			continue
		}
		if err := deleteUID(ctx, k.o.Tenant.CoreV1().PersistentVolumes().Delete, pv); err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("deleted a released tenant PV", "pv", pv.Name, "claim", key)
	}
	return nil
}

// syncClaimStatus carries what only the host knows back to the tenant
// claim: resize conditions and allocated resources.
func (k *claimKind) syncClaimStatus(ctx context.Context, tenant, host *corev1.PersistentVolumeClaim) error {
	want := tenant.DeepCopy()
	want.Status = translate.ClaimStatus(tenant, host)
	_, _, err := applyIfChanged(ctx, claimStatusWriter{k.o.Tenant.CoreV1().PersistentVolumeClaims(tenant.Namespace)}, tenant, want, claimStatusFields)
	return err
}

var claimStatusFields = ownedField(func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaimStatus { return &c.Status })

// claimStatusWriter adapts a claim client's status subresource to writer.
type claimStatusWriter struct {
	typedcorev1.PersistentVolumeClaimInterface
}

func (w claimStatusWriter) Update(ctx context.Context, c *corev1.PersistentVolumeClaim, o metav1.UpdateOptions) (*corev1.PersistentVolumeClaim, error) {
	return w.UpdateStatus(ctx, c, o)
}
