package translate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/tenant/names"
)

// Tenant storage. A tenant PersistentVolumeClaim becomes a host claim in
// the workload namespace, which the provider's provisioner serves; the
// tenant sees the volume as a PersistentVolume that the syncer writes as
// an external provisioner would, pre-bound to the claim, so the tenant's
// own controllers bind it and its scheduler waits for it as on any
// cluster. The tenant PV is a view: nothing on the host ever reads one, so
// a PV a tenant writes itself reaches no disk.
//
// The tenant's StorageClasses are read-only copies of the provider's
// allow-listed host classes, which carry the provisioner, binding mode,
// reclaim policy and expansion a claim gets, and none of the host's
// parameters (host paths, credentials).

// Annotations of the storage protocol Kubernetes itself defines.
const (
	// AnnSelectedNode is where the scheduler puts a WaitForFirstConsumer
	// claim's node; a provisioner makes the volume there.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnProvisionedBy names the provisioner of a PV; one outside
	// kubernetes.io/ tells the PV controller an external one deletes it.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnDefaultStorageClass marks the default class.
	AnnDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
)

// TenantVolumeDriver is the source of every tenant PV: a CSI driver no
// node has, so nothing in the tenant (which runs no kubelet of its own for
// virtual Nodes, and whose virtual Nodes leave attach to no controller)
// attaches or mounts it, and the PV names no host path. CSI, not
// FlexVolume: the tenant's expand controller treats a FlexVolume as
// resizable by the kubelet and writes the PV's capacity itself, while it
// leaves a CSI volume to an external resizer, here the syncer, which
// copies the host's.
const TenantVolumeDriver = "management-volume.capn.dev"

// TenantPVName is the tenant PV of the claim with UID uid, named as
// dynamic provisioning names one.
func TenantPVName(uid string) string { return "pvc-" + uid }

// StorageContext is what a claim's translation needs besides the claim.
type StorageContext struct {
	WorkloadNamespace string
	// Classes are the StorageClasses tenants may name (AllowedStorageClasses).
	Classes []string
	// SelectedNode is the host node the tenant's scheduler chose for a
	// WaitForFirstConsumer claim, if it is one of this tenant's nodes.
	SelectedNode string
}

// HostClaim is the host claim of a tenant claim, built from an
// allow-list: access modes, the storage request and limit, the class and
// the node the tenant's scheduler chose. What would reach another claim's
// volume or a PV the tenant names (volumeName, selector, dataSource) or
// the raw device (volumeMode Block) is refused, with paths in the tenant
// claim's terms.
func HostClaim(t *corev1.PersistentVolumeClaim, c StorageContext) (*corev1.PersistentVolumeClaim, field.ErrorList) {
	errs := AdmitClaim(t, c.Classes)
	if len(errs) > 0 {
		return nil, errs
	}
	res := corev1.VolumeResourceRequirements{Requests: storageOnly(t.Spec.Resources.Requests), Limits: storageOnly(t.Spec.Resources.Limits)}
	ann := map[string]string{names.TenantNameAnnotation: t.Name}
	if c.SelectedNode != "" {
		ann[AnnSelectedNode] = c.SelectedNode
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        names.Host(t.Namespace, t.Name),
			Namespace:   c.WorkloadNamespace,
			Labels:      HostLabels(t.Namespace, string(t.UID)),
			Annotations: ann,
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      slices.Clone(t.Spec.AccessModes),
			Resources:        res,
			StorageClassName: t.Spec.StorageClassName,
			VolumeMode:       ptr.To(corev1.PersistentVolumeFilesystem),
		},
	}, nil
}

func storageOnly(l corev1.ResourceList) corev1.ResourceList {
	q, ok := l[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	return corev1.ResourceList{corev1.ResourceStorage: q.DeepCopy()}
}

// AdmitClaim is what a tenant claim must be to run on the shared data
// plane: the tenant's Service webhook answers a create with it, and
// HostClaim refuses the same, for a claim made while no webhook answered.
func AdmitClaim(t *corev1.PersistentVolumeClaim, classes []string) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	switch sc := t.Spec.StorageClassName; {
	case sc == nil:
		errs = append(errs, field.Required(spec.Child("storageClassName"),
			fmt.Sprintf("the cluster has no default StorageClass; name one of: %s", classList(classes))))
	case *sc == "":
		errs = append(errs, field.Invalid(spec.Child("storageClassName"), "",
			fmt.Sprintf("binding to an existing PersistentVolume is not available; name one of: %s", classList(classes))))
	case !slices.Contains(classes, *sc):
		errs = append(errs, field.NotSupported(spec.Child("storageClassName"), *sc, classes))
	}
	if t.Spec.Selector != nil {
		errs = append(errs, field.Forbidden(spec.Child("selector"), "claiming an existing PersistentVolume by selector is not available; volumes are provisioned for each claim"))
	}
	// The tenant's PV controller sets volumeName to the PV the syncer made
	// for this claim; any other name is a claim on someone's volume.
	if v := t.Spec.VolumeName; v != "" && (t.UID == "" || v != TenantPVName(string(t.UID))) {
		errs = append(errs, field.Forbidden(spec.Child("volumeName"), "claiming an existing PersistentVolume by name is not available; volumes are provisioned for each claim"))
	}
	if t.Spec.DataSource != nil {
		errs = append(errs, field.Forbidden(spec.Child("dataSource"), "cloning and populating volumes is not available"))
	} else if t.Spec.DataSourceRef != nil {
		errs = append(errs, field.Forbidden(spec.Child("dataSourceRef"), "cloning and populating volumes is not available"))
	}
	if m := t.Spec.VolumeMode; m != nil && *m != corev1.PersistentVolumeFilesystem {
		errs = append(errs, field.NotSupported(spec.Child("volumeMode"), *m, []corev1.PersistentVolumeMode{corev1.PersistentVolumeFilesystem}))
	}
	if t.Spec.VolumeAttributesClassName != nil {
		errs = append(errs, field.Forbidden(spec.Child("volumeAttributesClassName"), "volume attributes classes are not available"))
	}
	return errs
}

func classList(classes []string) string {
	if len(classes) == 0 {
		return "(none: the provider allows no StorageClass)"
	}
	return strings.Join(classes, ", ")
}

// ClaimResize is the host claim's storage request after the tenant's
// changed: only a growth, as the API allows.
func ClaimResize(t, host *corev1.PersistentVolumeClaim) (resource.Quantity, bool) {
	want, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]
	cur := host.Spec.Resources.Requests[corev1.ResourceStorage]
	return want, ok && want.Cmp(cur) > 0
}

// TenantPV is the tenant's view of the volume the host claim is bound
// to: pre-bound to the tenant claim by UID, with the host claim's capacity
// and access modes, and node affinity to node's hostname, which the
// virtual Node of the same name carries. nil while the host claim is not
// bound.
func TenantPV(t, host *corev1.PersistentVolumeClaim, provisioner string, node *corev1.Node) *corev1.PersistentVolume {
	if host.Status.Phase != corev1.ClaimBound || host.Spec.VolumeName == "" {
		return nil
	}
	capacity, ok := host.Status.Capacity[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        TenantPVName(string(t.UID)),
			Labels:      map[string]string{"app.kubernetes.io/managed-by": names.ManagedByValue},
			Annotations: map[string]string{AnnProvisionedBy: provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: capacity.DeepCopy()},
			AccessModes:                   slices.Clone(host.Status.AccessModes),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              ptr.Deref(t.Spec.StorageClassName, ""),
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: t.Namespace, Name: t.Name, UID: t.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: TenantVolumeDriver, VolumeHandle: TenantPVName(string(t.UID)),
			}},
		},
	}
	if len(pv.Spec.AccessModes) == 0 {
		pv.Spec.AccessModes = slices.Clone(t.Spec.AccessModes)
	}
	if node != nil && node.Labels[corev1.LabelHostname] != "" {
		hn := node.Labels[corev1.LabelHostname]
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hn}}},
		}}}}
	}
	return pv
}

// ClaimStatus is the tenant claim's status with what only the host knows:
// its conditions (resizing, pending file-system resize) and what was
// allocated, and, once the tenant PV controller has bound the claim, its
// capacity: the PV controller sets that only when it binds, and a resize
// grows it later, as an external resizer would. Phase and access modes are
// the tenant PV controller's.
func ClaimStatus(t, host *corev1.PersistentVolumeClaim) corev1.PersistentVolumeClaimStatus {
	st := *t.Status.DeepCopy()
	if q, ok := host.Status.Capacity[corev1.ResourceStorage]; ok && t.Status.Phase == corev1.ClaimBound && host.Status.Phase == corev1.ClaimBound {
		st.Capacity = corev1.ResourceList{corev1.ResourceStorage: q.DeepCopy()}
	}
	st.Conditions = nil
	for _, c := range host.Status.Conditions {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
	}
	st.AllocatedResources = storageOnly(host.Status.AllocatedResources)
	st.AllocatedResourceStatuses = nil
	if s, ok := host.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; ok {
		st.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: s}
	}
	return st
}

// AllowedStorageClasses are the host classes tenants may use: those named
// (in that order, the ones that exist), or with none named the host's
// default class alone. defaultClass is the host's default, if allowed: the
// tenant's default follows the provider's.
func AllowedStorageClasses(host []*storagev1.StorageClass, named []string) (allowed []*storagev1.StorageClass, defaultClass string) {
	def := hostDefault(host)
	if len(named) == 0 {
		if def == nil {
			return nil, ""
		}
		return []*storagev1.StorageClass{def}, def.Name
	}
	for _, n := range named {
		i := slices.IndexFunc(host, func(c *storagev1.StorageClass) bool { return c.Name == n })
		if i >= 0 {
			allowed = append(allowed, host[i])
		}
	}
	if def != nil && slices.ContainsFunc(allowed, func(c *storagev1.StorageClass) bool { return c.Name == def.Name }) {
		defaultClass = def.Name
	}
	return allowed, defaultClass
}

// hostDefault is the default class as the DefaultStorageClass admission
// plugin picks it: of those marked, the newest, then the first by name.
func hostDefault(host []*storagev1.StorageClass) *storagev1.StorageClass {
	var def *storagev1.StorageClass
	for _, c := range host {
		if c.Annotations[AnnDefaultStorageClass] != "true" {
			continue
		}
		if def == nil || c.CreationTimestamp.After(def.CreationTimestamp.Time) ||
			(c.CreationTimestamp.Equal(&def.CreationTimestamp) && c.Name < def.Name) {
			def = c
		}
	}
	return def
}

// TenantStorageClass is the tenant's read-only copy of an allowed host
// class: what decides how a claim is served (provisioner, reclaim policy,
// binding mode, expansion), none of its parameters or mount options,
// which are the host's, and the default mark if it is the default.
func TenantStorageClass(host *storagev1.StorageClass, isDefault bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:   host.Name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": names.ManagedByValue},
		},
		Provisioner:          host.Provisioner,
		ReclaimPolicy:        host.ReclaimPolicy,
		VolumeBindingMode:    host.VolumeBindingMode,
		AllowVolumeExpansion: host.AllowVolumeExpansion,
	}
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
	}
	if isDefault {
		sc.Annotations = map[string]string{AnnDefaultStorageClass: "true"}
	}
	return sc
}

// SameStorageClass reports that cur holds want's immutable fields: a host
// class replaced under the same name replaces the tenant's copy.
func SameStorageClass(cur, want *storagev1.StorageClass) bool {
	return cur.Provisioner == want.Provisioner && ptr.Equal(cur.ReclaimPolicy, want.ReclaimPolicy) && ptr.Equal(cur.VolumeBindingMode, want.VolumeBindingMode)
}

// ClaimQuotaExceeded is what the workload namespace's quota admission
// would answer the host claim of a claim asking for storage, in its
// words; "" if the claim fits. The tenant hears it at the create, where
// the host's answer would come later, as an Event.
func ClaimQuotaExceeded(quotas []corev1.ResourceQuota, storage resource.Quantity) string {
	asks := []struct {
		name corev1.ResourceName
		q    resource.Quantity
	}{{corev1.ResourceRequestsStorage, storage}, {corev1.ResourcePersistentVolumeClaims, resource.MustParse("1")}}
	for _, quota := range quotas {
		for _, a := range asks {
			hard, ok := quota.Status.Hard[a.name]
			if !ok {
				continue
			}
			used := quota.Status.Used[a.name]
			sum := used.DeepCopy()
			sum.Add(a.q)
			if sum.Cmp(hard) > 0 {
				return fmt.Sprintf("exceeded quota: %s, requested: %s=%s, used: %s=%s, limited: %s=%s",
					quota.Name, a.name, a.q.String(), a.name, used.String(), a.name, hard.String())
			}
		}
	}
	return ""
}
