package validation

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

// QuotaResources are the resources spec.dataPlane.quota may name: those a
// synced pod or Service consumes in the workload namespace, ephemeral
// storage (the node's disk under emptyDirs, logs and writable layers)
// included, the NetworkPolicies the syncer translates, and the claims and
// storage of persistent volumes. Anything else (extended resources) is
// not synced, so a limit on it would be a promise capn cannot keep.
var QuotaResources = []corev1.ResourceName{
	corev1.ResourcePods,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
	corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourceServices, corev1.ResourceConfigMaps, corev1.ResourceSecrets,
	ResourceNetworkPolicies,
	corev1.ResourceRequestsStorage, corev1.ResourcePersistentVolumeClaims,
}

// ResourceNetworkPolicies counts the workload namespace's NetworkPolicies:
// each is rules in the node's engine, which every tenant shares.
const ResourceNetworkPolicies corev1.ResourceName = "count/networkpolicies.networking.k8s.io"

// maxNodeSelectorLabels bounds spec.dataPlane.nodeSelector.
const maxNodeSelectorLabels = 16

var dataPlaneModes = []capn.DataPlaneMode{capn.DataPlaneNone, capn.DataPlaneShared}

// validateDataPlane checks the data plane on its own; the provider's caps
// on quota are the registry's (it knows the provider's flags).
func validateDataPlane(dp *capn.DataPlaneSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	// Empty is how an object stored before the field reads (None); a
	// create always has a mode by now (the registry sets Shared).
	if dp.Mode != "" && !slices.Contains(dataPlaneModes, dp.Mode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("mode"), dp.Mode, dataPlaneModes))
	}
	shared := dp.Mode == capn.DataPlaneShared
	sp := fldPath.Child("nodeSelector")
	if len(dp.NodeSelector) > 0 && !shared {
		allErrs = append(allErrs, field.Forbidden(sp, "only applies to mode Shared"))
	}
	if len(dp.NodeSelector) > maxNodeSelectorLabels {
		allErrs = append(allErrs, field.TooMany(sp, len(dp.NodeSelector), maxNodeSelectorLabels))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabels(dp.NodeSelector, sp)...)
	}
	qp := fldPath.Child("quota")
	if len(dp.Quota) > 0 && !shared {
		allErrs = append(allErrs, field.Forbidden(qp, "only applies to mode Shared"))
	}
	for _, name := range slices.Sorted(maps.Keys(dp.Quota)) {
		p := qp.Key(string(name))
		if !slices.Contains(QuotaResources, name) {
			allErrs = append(allErrs, field.NotSupported(p, name, QuotaResources))
			continue
		}
		if q := dp.Quota[name]; q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), "must be non-negative"))
		}
	}
	return allErrs
}

// validateDataPlaneUpdate keeps the mode: switching would move every
// running tenant pod, and None→Shared would change the service range
// every Service IP was handed out from. An object stored before the field
// existed reads "" and may be written back as None.
func validateDataPlaneUpdate(newDP, oldDP *capn.DataPlaneSpec, fldPath *field.Path) field.ErrorList {
	oldMode, newMode := oldDP.Mode, newDP.Mode
	if oldMode == "" {
		oldMode = capn.DataPlaneNone
	}
	if newMode == "" {
		newMode = capn.DataPlaneNone
	}
	return apimachineryvalidation.ValidateImmutableField(newMode, oldMode, fldPath.Child("mode"))
}

// ValidateQuotaCaps refuses a quota above the provider's maximum. A
// resource the maximum does not name is uncapped.
func ValidateQuotaCaps(quota, max corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(quota)) {
		m, ok := max[name]
		if q := quota[name]; ok && q.Cmp(m) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(string(name)), q.String(),
				fmt.Sprintf("must be at most %s, the provider's maximum", m.String())))
		}
	}
	return allErrs
}

var dnsModes = []capn.DNSMode{capn.DNSCoreDNS, capn.DNSNone}

// validateDNS checks spec.dns. The addon runs as a tenant workload through
// the syncer, so it exists only with a Shared data plane; asking for it
// (or for its image) without one is refused rather than ignored.
func validateDNS(dns *capn.DNSSpec, dataPlane capn.DataPlaneMode, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if dns.Mode != "" && !slices.Contains(dnsModes, dns.Mode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("mode"), dns.Mode, dnsModes))
	}
	shared := dataPlane == capn.DataPlaneShared
	if dns.Mode == capn.DNSCoreDNS && !shared {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("mode"), "CoreDNS only applies to spec.dataPlane.mode Shared"))
	}
	if dns.Image != "" {
		if !shared {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("image"), "only applies to spec.dataPlane.mode Shared"))
		}
		if dns.Mode == capn.DNSNone {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("image"), "must be empty with mode None"))
		}
		allErrs = append(allErrs, validateImage(fldPath.Child("image"), dns.Image)...)
	}
	return allErrs
}

var metricsModes = []capn.MetricsMode{capn.MetricsServer, capn.MetricsNone}

// validateMetrics checks spec.metrics as validateDNS checks spec.dns, for
// the same reason: the addon is a tenant workload the syncer runs, so it
// exists only with a Shared data plane.
func validateMetrics(m *capn.MetricsSpec, dataPlane capn.DataPlaneMode, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if m.Mode != "" && !slices.Contains(metricsModes, m.Mode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("mode"), m.Mode, metricsModes))
	}
	shared := dataPlane == capn.DataPlaneShared
	if m.Mode == capn.MetricsServer && !shared {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("mode"), "MetricsServer only applies to spec.dataPlane.mode Shared"))
	}
	if m.Image != "" {
		if !shared {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("image"), "only applies to spec.dataPlane.mode Shared"))
		}
		if m.Mode == capn.MetricsNone {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("image"), "must be empty with mode None"))
		}
		allErrs = append(allErrs, validateImage(fldPath.Child("image"), m.Image)...)
	}
	return allErrs
}
