package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// The apiserver refuses a CSI driver name that is not a DNS subdomain, so
// no tenant PV could be written.
func TestTenantVolumeDriverIsADNSSubdomain(t *testing.T) {
	assert.Empty(t, validation.IsDNS1123Subdomain(TenantVolumeDriver))
}

// storageInput is a storage case's input.yaml: a tenant claim, and the
// host claim as the host holds it (nil: not made yet) with its node.
type storageInput struct {
	Tenant       corev1.PersistentVolumeClaim  `json:"tenant"`
	Host         *corev1.PersistentVolumeClaim `json:"host,omitempty"`
	Node         *corev1.Node                  `json:"node,omitempty"`
	Classes      []string                      `json:"classes"`
	SelectedNode string                        `json:"selectedNode,omitempty"`
}

type storageGolden struct {
	Errors    []string                            `json:"errors,omitempty"`
	HostClaim *corev1.PersistentVolumeClaim       `json:"hostClaim,omitempty"`
	TenantPV  *corev1.PersistentVolume            `json:"tenantPV,omitempty"`
	Status    *corev1.PersistentVolumeClaimStatus `json:"status,omitempty"`
}

func TestStorageGolden(t *testing.T) {
	eachGolden(t, "storage", func(t *testing.T, c *storageInput) any {
		var g storageGolden
		hc, errs := HostClaim(&c.Tenant, StorageContext{WorkloadNamespace: "capn-w-tenant", Classes: c.Classes, SelectedNode: c.SelectedNode})
		for _, e := range errs {
			g.Errors = append(g.Errors, e.Error())
		}
		g.HostClaim = hc
		if c.Host != nil {
			g.TenantPV = TenantPV(&c.Tenant, c.Host, "rancher.io/local-path", c.Node)
			st := ClaimStatus(&c.Tenant, c.Host)
			g.Status = &st
		}
		return g
	})
}

// A claim is refused whole: no host claim comes with any error.
func TestHostClaimIsRefusedWhole(t *testing.T) {
	base := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data", UID: "u1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("local-path"),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	block := corev1.PersistentVolumeBlock
	for name, mutate := range map[string]func(*corev1.PersistentVolumeClaim){
		"volumeName of another PV": func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pvc-of-another-tenant" },
		"selector":                 func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = &metav1.LabelSelector{} },
		"dataSource": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "x"}
		},
		"dataSourceRef": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "x", Namespace: ptr.To("other")}
		},
		"class off the list": func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("fast") },
		"static binding":     func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("") },
		"no class":           func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = nil },
		"block":              func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = &block },
		"attributes class":   func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To("gold") },
	} {
		t.Run(name, func(t *testing.T) {
			c := base.DeepCopy()
			mutate(c)
			hc, errs := HostClaim(c, StorageContext{WorkloadNamespace: "w", Classes: []string{"local-path"}})
			assert.Nil(t, hc)
			require.Len(t, errs, 1)
			assert.Equal(t, errs, AdmitClaim(c, []string{"local-path"}), "the webhook and the syncer refuse alike")
		})
	}
	hc, errs := HostClaim(&base, StorageContext{WorkloadNamespace: "w", Classes: []string{"local-path"}})
	require.Empty(t, errs)
	require.NotNil(t, hc)
	// The PV the tenant's PV controller bound it to is its own.
	bound := base.DeepCopy()
	bound.Spec.VolumeName = TenantPVName("u1")
	_, errs = HostClaim(bound, StorageContext{WorkloadNamespace: "w", Classes: []string{"local-path"}})
	assert.Empty(t, errs)
}

func TestAllowedStorageClasses(t *testing.T) {
	at := func(s int64) metav1.Time { return metav1.Unix(s, 0) }
	sc := func(name string, def bool, created int64) *storagev1.StorageClass {
		c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created)}, Provisioner: "p"}
		if def {
			c.Annotations = map[string]string{AnnDefaultStorageClass: "true"}
		}
		return c
	}
	host := []*storagev1.StorageClass{sc("slow", false, 1), sc("old-default", true, 1), sc("local-path", true, 2)}
	names := func(l []*storagev1.StorageClass) (out []string) {
		for _, c := range l {
			out = append(out, c.Name)
		}
		return out
	}

	allowed, def := AllowedStorageClasses(host, nil)
	assert.Equal(t, []string{"local-path"}, names(allowed), "none named: the host default alone, the newest marked")
	assert.Equal(t, "local-path", def)

	allowed, def = AllowedStorageClasses(host, []string{"slow", "missing"})
	assert.Equal(t, []string{"slow"}, names(allowed))
	assert.Empty(t, def, "the host default is not allowed, so the tenant has none")

	allowed, def = AllowedStorageClasses(host, []string{"slow", "local-path"})
	assert.Equal(t, []string{"slow", "local-path"}, names(allowed))
	assert.Equal(t, "local-path", def)

	allowed, def = AllowedStorageClasses([]*storagev1.StorageClass{sc("slow", false, 1)}, nil)
	assert.Empty(t, allowed)
	assert.Empty(t, def)
}

func TestTenantStorageClassCarriesNoHostParameters(t *testing.T) {
	host := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: "local-path", Annotations: map[string]string{"secret-ish": "x"}},
		Provisioner:          "rancher.io/local-path",
		Parameters:           map[string]string{"nodePath": "/var/lib/provider/disks"},
		MountOptions:         []string{"nosuid"},
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowVolumeExpansion: ptr.To(true),
	}
	got := TenantStorageClass(host, true)
	assert.Empty(t, got.Parameters)
	assert.Empty(t, got.MountOptions)
	assert.Equal(t, map[string]string{AnnDefaultStorageClass: "true"}, got.Annotations)
	assert.Equal(t, "rancher.io/local-path", got.Provisioner)
	assert.Equal(t, storagev1.VolumeBindingWaitForFirstConsumer, *got.VolumeBindingMode)
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, *got.ReclaimPolicy)
	assert.True(t, *got.AllowVolumeExpansion)
	assert.Empty(t, TenantStorageClass(host, false).Annotations)
}

func TestClaimQuotaExceeded(t *testing.T) {
	q := corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "capn-workloads"},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("10Gi"), corev1.ResourcePersistentVolumeClaims: resource.MustParse("2")},
			Used: corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("8Gi"), corev1.ResourcePersistentVolumeClaims: resource.MustParse("1")},
		},
	}
	assert.Empty(t, ClaimQuotaExceeded([]corev1.ResourceQuota{q}, resource.MustParse("2Gi")), "exactly at the limit fits")
	assert.Equal(t, "exceeded quota: capn-workloads, requested: requests.storage=3Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi",
		ClaimQuotaExceeded([]corev1.ResourceQuota{q}, resource.MustParse("3Gi")))
	q.Status.Used[corev1.ResourcePersistentVolumeClaims] = resource.MustParse("2")
	assert.Contains(t, ClaimQuotaExceeded([]corev1.ResourceQuota{q}, resource.MustParse("1Gi")), "persistentvolumeclaims=1")
	assert.Empty(t, ClaimQuotaExceeded(nil, resource.MustParse("1Ti")), "no quota, no limit")
}
