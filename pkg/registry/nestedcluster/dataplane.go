package nestedcluster

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
)

// DataPlanePolicy is the provider's side of spec.dataPlane and spec.syncer:
// a tenant value may narrow it, never widen it.
type DataPlanePolicy struct {
	// ServiceCIDR is the management cluster's service range, which a Shared
	// tenant's must be (Service IPs mean the same on both sides). Empty
	// when capn could not learn it; Shared clusters then keep the API
	// default.
	ServiceCIDR string
	// QuotaMax caps spec.dataPlane.quota.
	QuotaMax corev1.ResourceList
	// SyncerImages are the images spec.syncer.image may name besides the
	// default: the syncer holds a management credential, so a tenant may
	// not run code of its own choosing with it.
	SyncerImages []string
}

// prepareDataPlaneOnCreate defaults what only a create may default: the
// mode (objects stored before the field existed stay None), and in Shared
// mode the service range. An explicit range equal to the API default is
// read as unset: decoding has already filled it in, so the two cannot be
// told apart here.
func (p DataPlanePolicy) prepareOnCreate(nc *capn.NestedCluster) {
	dp := &nc.Spec.DataPlane
	if dp.Mode == "" {
		dp.Mode = capn.DataPlaneShared
	}
	n := &nc.Spec.ClusterNetwork
	if dp.Mode == capn.DataPlaneShared && p.ServiceCIDR != "" && (n.ServiceCIDR == "" || n.ServiceCIDR == v1alpha1.DefaultServiceCIDR) {
		n.ServiceCIDR = p.ServiceCIDR
	}
}

// errors checks nc against the provider's limits. oldNC is nil on create;
// on update only what changed is checked (ratcheting: a provider that
// lowers a cap does not make every stored tenant unwritable).
func (p DataPlanePolicy) errors(nc, oldNC *capn.NestedCluster) field.ErrorList {
	spec := field.NewPath("spec")
	var allErrs field.ErrorList
	if nc.Spec.DataPlane.Mode != capn.DataPlaneShared {
		return nil
	}
	if oldNC == nil && p.ServiceCIDR != "" && nc.Spec.ClusterNetwork.ServiceCIDR != p.ServiceCIDR {
		allErrs = append(allErrs, field.Invalid(spec.Child("clusterNetwork", "serviceCIDR"), nc.Spec.ClusterNetwork.ServiceCIDR,
			fmt.Sprintf("must be the management cluster's service range %s in dataPlane mode Shared (leave it unset)", p.ServiceCIDR)))
	}
	quota := nc.Spec.DataPlane.Quota
	if oldNC != nil {
		quota = corev1.ResourceList{}
		for name, q := range nc.Spec.DataPlane.Quota {
			if old, ok := oldNC.Spec.DataPlane.Quota[name]; !ok || old.Cmp(q) != 0 {
				quota[name] = q
			}
		}
	}
	allErrs = append(allErrs, validation.ValidateQuotaCaps(quota, p.QuotaMax, spec.Child("dataPlane", "quota"))...)
	img := nc.Spec.Syncer.Image
	if img != "" && (oldNC == nil || oldNC.Spec.Syncer.Image != img) && !slices.Contains(p.SyncerImages, img) {
		allErrs = append(allErrs, field.Forbidden(spec.Child("syncer", "image"),
			"the syncer holds a management credential: only the provider's images may run it (capn-apiserver --allowed-syncer-images)"))
	}
	if c := nc.Spec.Syncer.Command; len(c) > 0 && (oldNC == nil || !slices.Equal(oldNC.Spec.Syncer.Command, c)) {
		allErrs = append(allErrs, field.Forbidden(spec.Child("syncer", "command"),
			"the syncer holds a management credential: its command is the image's"))
	}
	return allErrs
}
