package validation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
)

var started = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// upgrading marks old as midway through from -> to, as the provisioner would
// after accepting the change.
func upgrading(old *capn.NestedCluster, from, to string) {
	old.Spec.Version = to
	old.Status.Upgrade = &capn.UpgradeStatus{From: from, To: to, Component: "kube-apiserver", StartedAt: &started}
}

func TestValidateNestedClusterUpdate(t *testing.T) {
	cases := []struct {
		name   string
		old    func(old *capn.NestedCluster)
		mutate func(nc *capn.NestedCluster)
		want   *wantErr // nil: valid
	}{
		// immutables
		{"etcd replicas", nil, func(nc *capn.NestedCluster) { nc.Spec.Etcd.Managed.Replicas = ptr.To[int32](3) },
			&wantErr{"spec.etcd.managed.replicas", field.ErrorTypeInvalid, "field is immutable: etcd membership changes are not supported; etcd replicas are fixed at create"}},
		{"etcd storage type", nil, func(nc *capn.NestedCluster) { nc.Spec.Etcd.Managed.Storage.Type = capn.EtcdStorageMemory },
			&wantErr{"spec.etcd.managed.storage", field.ErrorTypeInvalid, "field is immutable"}},
		{"etcd storage size",
			func(old *capn.NestedCluster) {
				old.Spec.Etcd.Managed.Storage = capn.EtcdStorage{Type: capn.EtcdStoragePersistentVolumeClaim, Size: ptr.To(resource.MustParse("8Gi"))}
			},
			func(nc *capn.NestedCluster) { nc.Spec.Etcd.Managed.Storage.Size = ptr.To(resource.MustParse("16Gi")) },
			&wantErr{"spec.etcd.managed.storage", field.ErrorTypeInvalid, "field is immutable"}},
		{"managed to external", nil, func(nc *capn.NestedCluster) { external(nc) },
			&wantErr{"spec.etcd", field.ErrorTypeInvalid, "cannot switch between managed, external and pooled etcd"}},
		{"external to managed", func(old *capn.NestedCluster) { external(old) },
			func(nc *capn.NestedCluster) {
				nc.Spec.Etcd = capn.EtcdSpec{Managed: &capn.ManagedEtcd{Replicas: ptr.To[int32](1), Storage: capn.EtcdStorage{Type: capn.EtcdStorageEmptyDir}}}
			},
			&wantErr{"spec.etcd", field.ErrorTypeInvalid, "field is immutable"}},
		{"pool to another pool", func(old *capn.NestedCluster) { old.Spec.Etcd = capn.EtcdSpec{Pool: "a"} },
			func(nc *capn.NestedCluster) { nc.Spec.Etcd = capn.EtcdSpec{Pool: "b"} },
			&wantErr{"spec.etcd", field.ErrorTypeInvalid, "or between pools"}},
		{"managed to pool", nil, func(nc *capn.NestedCluster) { nc.Spec.Etcd = capn.EtcdSpec{Pool: "a"} },
			&wantErr{"spec.etcd", field.ErrorTypeInvalid, "field is immutable"}},
		{"serviceCIDR", nil, func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.ServiceCIDR = "10.112.0.0/12" },
			&wantErr{"spec.clusterNetwork.serviceCIDR", field.ErrorTypeInvalid, "field is immutable"}},
		{"podCIDR", nil, func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.PodCIDR = "10.245.0.0/16" },
			&wantErr{"spec.clusterNetwork.podCIDR", field.ErrorTypeInvalid, "field is immutable"}},
		{"dnsDomain", nil, func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.DNSDomain = "tenant.local" },
			&wantErr{"spec.clusterNetwork.dnsDomain", field.ErrorTypeInvalid, "field is immutable"}},
		{"name", nil, func(nc *capn.NestedCluster) { nc.Name = "tenant-b" },
			&wantErr{"metadata.name", field.ErrorTypeInvalid, "field is immutable"}},
		{"resourceVersion missing", nil, func(nc *capn.NestedCluster) { nc.ResourceVersion = "" },
			&wantErr{"metadata.resourceVersion", field.ErrorTypeInvalid, ""}},
		{"new spec still validated", nil, func(nc *capn.NestedCluster) { nc.Spec.APIServer.Replicas = ptr.To[int32](0) },
			&wantErr{"spec.apiServer.replicas", field.ErrorTypeInvalid, ""}},

		// version changes
		{"unchanged", func(old *capn.NestedCluster) { old.Spec.Version = "v1.36.3" },
			func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.36.3" }, nil},
		{"patch upgrade", func(old *capn.NestedCluster) { old.Spec.Version = "v1.37.0" },
			func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.37.2" }, nil},
		{"one minor up", func(old *capn.NestedCluster) { old.Spec.Version = "v1.36.3" },
			func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.37.2" }, nil},
		{"downgrade", func(old *capn.NestedCluster) { old.Spec.Version = "v1.37.2" },
			func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.36.3" },
			&wantErr{"spec.version", field.ErrorTypeInvalid, "downgrade"}},
		{"patch downgrade", func(old *capn.NestedCluster) { old.Spec.Version = "v1.37.2" },
			func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.37.1" },
			&wantErr{"spec.version", field.ErrorTypeInvalid, "downgrade"}},
		{"skipped minor from an old stored version", func(old *capn.NestedCluster) { old.Spec.Version = "v1.35.4" },
			func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.37.2" },
			&wantErr{"spec.version", field.ErrorTypeInvalid, "cannot skip minor versions"}},
		{"target changed during upgrade", func(old *capn.NestedCluster) { upgrading(old, "v1.36.3", "v1.37.0") },
			func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.37.2" },
			&wantErr{"spec.version", field.ErrorTypeForbidden, "in progress"}},
		{"rollback to from during upgrade", func(old *capn.NestedCluster) { upgrading(old, "v1.36.3", "v1.37.2") },
			func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.36.3" }, nil},
		{"upgrade with a flag the target removed", func(old *capn.NestedCluster) {
			old.Spec.Version = "v1.36.3"
			old.Spec.ControllerManager.ExtraArgs = map[string]string{"concurrent-service-syncs": "2"}
		}, func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.37.2" },
			&wantErr{"spec.controllerManager.extraArgs[concurrent-service-syncs]", field.ErrorTypeForbidden, "kube-controller-manager 1.37 removed this flag; remove it (before upgrading to v1.37.2)"}},
		{"that flag on the version that still has it", func(old *capn.NestedCluster) { old.Spec.Version = "v1.36.3" },
			func(nc *capn.NestedCluster) {
				nc.Spec.ControllerManager.ExtraArgs = map[string]string{"concurrent-service-syncs": "2"}
			}, nil},
		{"rollback after upgrade finished", func(old *capn.NestedCluster) {
			upgrading(old, "v1.36.3", "v1.37.2")
			old.Status.Upgrade.FinishedAt = &started
		}, func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.36.3" },
			&wantErr{"spec.version", field.ErrorTypeInvalid, "downgrade"}},

		// mutable fields
		{"scale apiserver and change images", nil, func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.Replicas = ptr.To[int32](3)
			nc.Spec.Etcd.Managed.Image = "registry.k8s.io/etcd:3.6.5-0"
			nc.Spec.Paused = true
		}, nil},
		{"external endpoints change", func(old *capn.NestedCluster) { external(old) },
			func(nc *capn.NestedCluster) { external(nc).Endpoints = []string{"https://etcd-new:2379"} }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validNC(t)
			if tc.old != nil {
				tc.old(old)
			}
			nc := old.DeepCopy()
			tc.mutate(nc)
			errs := ValidateNestedClusterUpdate(nc, old)
			if tc.want == nil {
				expectNoErrors(t, errs)
			} else {
				expectError(t, errs, *tc.want)
			}
		})
	}
}

func TestValidateVersionChange(t *testing.T) {
	p := field.NewPath("spec", "version")
	inProgress := &capn.UpgradeStatus{From: "v1.36.3", To: "v1.37.0"}
	finished := &capn.UpgradeStatus{From: "v1.36.3", To: "v1.37.0", FinishedAt: &started}
	cases := []struct {
		name     string
		old, new string
		upgrade  *capn.UpgradeStatus
		wantType field.ErrorType // "" means allowed
	}{
		{"unchanged", "v1.37.2", "v1.37.2", nil, ""},
		{"unchanged mid-upgrade", "v1.37.0", "v1.37.0", inProgress, ""},
		{"patch up", "v1.37.0", "v1.37.2", nil, ""},
		{"minor up", "v1.36.3", "v1.37.0", nil, ""},
		{"minor up after a finished upgrade", "v1.36.0", "v1.37.0", finished, ""},
		{"patch down", "v1.37.2", "v1.37.1", nil, field.ErrorTypeInvalid},
		{"minor down", "v1.37.0", "v1.36.9", nil, field.ErrorTypeInvalid},
		{"skip a minor", "v1.35.0", "v1.37.0", nil, field.ErrorTypeInvalid},
		{"major change", "v1.37.0", "v2.0.0", nil, field.ErrorTypeInvalid},
		{"rollback mid-upgrade", "v1.37.0", "v1.36.3", inProgress, ""},
		{"forward again after rollback mid-upgrade", "v1.36.3", "v1.37.0", inProgress, ""},
		{"new target mid-upgrade", "v1.37.0", "v1.37.2", inProgress, field.ErrorTypeForbidden},
		{"other downgrade mid-upgrade", "v1.37.0", "v1.36.0", inProgress, field.ErrorTypeForbidden},
		{"downgrade to from after finish", "v1.37.0", "v1.36.3", finished, field.ErrorTypeInvalid},
		{"malformed new", "v1.37.0", "latest", nil, field.ErrorTypeInvalid},
		{"unparsable stored version can be repaired", "1.37", "v1.37.2", nil, ""},
		{"overlong stored version can be repaired", "v1.37.99999999999999999999999", "v1.37.2", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateVersionChange(p, tc.old, tc.new, tc.upgrade)
			if tc.wantType == "" {
				expectNoErrors(t, errs)
				return
			}
			expectError(t, errs, wantErr{"spec.version", tc.wantType, ""})
		})
	}
}

func TestValidateUpgradeRequest(t *testing.T) {
	cases := []struct {
		version  string
		wantType field.ErrorType
	}{
		{"v1.37.2", ""},
		{"v1.36.0", ""},
		{"", field.ErrorTypeRequired},
		{"v1.37", field.ErrorTypeInvalid},
		{"v1.99.0", field.ErrorTypeNotSupported},
	}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			errs := ValidateUpgradeRequest(&capn.NestedClusterUpgrade{Version: tc.version})
			if tc.wantType == "" {
				expectNoErrors(t, errs)
				return
			}
			expectError(t, errs, wantErr{"version", tc.wantType, ""})
		})
	}
}

// Validation that tightened since a NestedCluster was stored ratchets: an
// update that leaves the now-invalid field as it is passes (so the object
// can still be edited, scaled, and have its finalizer removed); an update
// that touches it is validated in full.
func TestUpdateRatchetsTightenedRules(t *testing.T) {
	old := validNC(t)
	old.ResourceVersion = "1"
	old.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{PriorityClassName: "system-cluster-critical"}}
	old.Spec.ControllerManager.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}}
	require.NotEmpty(t, ValidateNestedCluster(old), "the stored object must be invalid under today's rules")

	untouched := old.DeepCopy()
	untouched.Finalizers = nil
	untouched.Spec.Scheduler.Replicas = ptr.To[int32](2)
	assert.Empty(t, ValidateNestedClusterUpdate(untouched, old))

	touched := old.DeepCopy()
	touched.Spec.APIServer.PodTemplate.Spec.PriorityClassName = "other"
	errs := ValidateNestedClusterUpdate(touched, old)
	require.Len(t, errs, 1, "%v", errs)
	assert.Equal(t, "spec.apiServer.podTemplate.spec.priorityClassName", errs[0].Field)
}

// Objects stored before the version and network rules tightened (an
// overlong patch number, an IPv6 service range) keep accepting updates
// that leave those fields alone, and can be repaired.
func TestUpdateRatchetsStoredVersionAndNetwork(t *testing.T) {
	old := validNC(t)
	old.ResourceVersion = "1"
	old.Spec.Version = "v1.37.99999999999999999999999"
	old.Spec.ClusterNetwork = capn.ClusterNetwork{ServiceCIDR: "fd00::/108", PodCIDR: "fd00:1::/64", DNSDomain: "cluster.local"}
	require.NotEmpty(t, ValidateNestedCluster(old), "the stored object must be invalid under today's rules")

	untouched := old.DeepCopy()
	untouched.Finalizers = nil
	untouched.Spec.Scheduler.Replicas = ptr.To[int32](2)
	assert.Empty(t, ValidateNestedClusterUpdate(untouched, old))

	repaired := old.DeepCopy()
	repaired.Spec.Version = "v1.37.2"
	assert.Empty(t, ValidateNestedClusterUpdate(repaired, old))
}
