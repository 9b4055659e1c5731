// Package validation holds the rules a NestedCluster must satisfy before it is
// stored. The functions are pure: the registry strategies call them after
// defaulting, so "required" here means "required after defaulting".
package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/versions"
)

// MaxNameLength caps NestedCluster names. Every object capn creates for a
// cluster is named after it with a fixed prefix or suffix (the management
// namespace, "<name>-apiserver" and "<name>-etcd" Services, StatefulSet pods
// such as "<name>-etcd-2" whose DNS labels live under the headless Service),
// and each of those must stay a DNS label of at most 63 characters. 40 leaves
// 23 characters for the longest decoration.
const MaxNameLength = 40

// generatedSuffixLength is what the registry appends to metadata.generateName.
const generatedSuffixLength = 5

// ValidateNestedClusterName checks a name (or, with prefix, a generateName)
// is a DNS-1035 label short enough for the names derived from it.
func ValidateNestedClusterName(name string, prefix bool) []string {
	errs := apimachineryvalidation.NameIsDNS1035Label(name, prefix)
	limit := MaxNameLength
	if prefix {
		limit -= generatedSuffixLength
	}
	if len(name) > limit {
		errs = append(errs, fmt.Sprintf("must be no more than %d characters: names of the objects capn creates for the cluster are derived from it", limit))
	}
	return errs
}

// ValidateNestedCluster validates a NestedCluster on create.
func ValidateNestedCluster(nc *capn.NestedCluster) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&nc.ObjectMeta, true, ValidateNestedClusterName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateNestedClusterSpec(&nc.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateRemovedFlags(&nc.Spec, field.NewPath("spec"))...)
}

// ValidateNestedClusterUpdate validates a spec update: the new object must be
// valid on its own, fields that cannot change after create must not, and a
// version change must respect the skew policy. The old object's
// status.upgrade is what tells whether an upgrade is running.
func ValidateNestedClusterUpdate(newNC, oldNC *capn.NestedCluster) field.ErrorList {
	specPath := field.NewPath("spec")
	// ValidateObjectMetaUpdate already re-validates labels, annotations and
	// owner references; the name cannot change, so it needs no new check.
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newNC.ObjectMeta, &oldNC.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ratchet(validateNestedClusterSpec(&newNC.Spec, specPath), &newNC.Spec, &oldNC.Spec, specPath)...)
	// Not ratcheted: an upgrade must name the flags its version removed,
	// however long they have been set.
	allErrs = append(allErrs, validateRemovedFlags(&newNC.Spec, specPath)...)
	allErrs = append(allErrs, validateNetworkUpdate(&newNC.Spec.ClusterNetwork, &oldNC.Spec.ClusterNetwork, specPath.Child("clusterNetwork"))...)
	allErrs = append(allErrs, validateEtcdUpdate(&newNC.Spec.Etcd, &oldNC.Spec.Etcd, specPath.Child("etcd"))...)
	allErrs = append(allErrs, validateDataPlaneUpdate(&newNC.Spec.DataPlane, &oldNC.Spec.DataPlane, specPath.Child("dataPlane"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newNC.Spec.RestoreFrom, oldNC.Spec.RestoreFrom, specPath.Child("restoreFrom"))...)
	// A malformed new version is already reported by the spec validation;
	// the skew check would only repeat it.
	if len(validateVersion(specPath.Child("version"), newNC.Spec.Version)) == 0 {
		allErrs = append(allErrs, ValidateVersionChange(specPath.Child("version"), oldNC.Spec.Version, newNC.Spec.Version, oldNC.Status.Upgrade)...)
	}
	allErrs = append(allErrs, ValidateAwakeForUpgrade(specPath.Child("version"), oldNC.Spec.Version, newNC.Spec.Version, newNC.Spec.Sleep.Asleep)...)
	return allErrs
}

// ratchet drops errors in component fields an update leaves unchanged:
// validation that tightened since an object was stored (the pod-template
// allow-list, resource and size bounds) must not make it impossible to
// edit anything else, remove a finalizer or scale. A changed field is
// validated in full.
func ratchet(errs field.ErrorList, newSpec, oldSpec *capn.NestedClusterSpec, specPath *field.Path) field.ErrorList {
	type pair struct {
		name     string
		new, old *capn.ComponentSpec
	}
	var unchanged []string
	// Whole-spec fields that tightened: a stored, now-invalid version or
	// network (immutable anyway) must not block every other update.
	if newSpec.Version == oldSpec.Version {
		unchanged = append(unchanged, specPath.Child("version").String())
	}
	if newSpec.ClusterNetwork == oldSpec.ClusterNetwork {
		unchanged = append(unchanged, specPath.Child("clusterNetwork").String())
	}
	for _, c := range []pair{
		{"apiServer", &newSpec.APIServer.ComponentSpec, &oldSpec.APIServer.ComponentSpec},
		{"controllerManager", &newSpec.ControllerManager, &oldSpec.ControllerManager},
		{"scheduler", &newSpec.Scheduler, &oldSpec.Scheduler},
		{"syncer", &newSpec.Syncer, &oldSpec.Syncer},
	} {
		p := specPath.Child(c.name)
		for _, f := range []struct {
			name  string
			equal bool
		}{
			{"podTemplate", apiequality.Semantic.DeepEqual(c.new.PodTemplate, c.old.PodTemplate)},
			{"resources", apiequality.Semantic.DeepEqual(c.new.Resources, c.old.Resources)},
			{"extraArgs", apiequality.Semantic.DeepEqual(c.new.ExtraArgs, c.old.ExtraArgs)},
			{"env", apiequality.Semantic.DeepEqual(c.new.Env, c.old.Env)},
			{"command", apiequality.Semantic.DeepEqual(c.new.Command, c.old.Command)},
		} {
			if f.equal {
				unchanged = append(unchanged, p.Child(f.name).String())
			}
		}
		// Per flag as well: a stored flag a rule now refuses must not
		// block changing another.
		for k, v := range c.new.ExtraArgs {
			if ov, ok := c.old.ExtraArgs[k]; ok && ov == v {
				unchanged = append(unchanged, p.Child("extraArgs").Key(k).String())
			}
		}
	}
	var out field.ErrorList
	for _, e := range errs {
		keep := true
		for _, u := range unchanged {
			if e.Field == u || strings.HasPrefix(e.Field, u+".") || strings.HasPrefix(e.Field, u+"[") {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}

func validateNestedClusterSpec(spec *capn.NestedClusterSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateVersion(fldPath.Child("version"), spec.Version)
	allErrs = append(allErrs, validateClusterNetwork(&spec.ClusterNetwork, fldPath.Child("clusterNetwork"))...)
	allErrs = append(allErrs, validateEtcd(&spec.Etcd, fldPath.Child("etcd"))...)
	allErrs = append(allErrs, validateAPIServer(&spec.APIServer, fldPath.Child("apiServer"))...)
	allErrs = append(allErrs, validateComponent(&spec.ControllerManager, v1alpha1.ComponentControllerManager, fldPath.Child("controllerManager"))...)
	allErrs = append(allErrs, validateComponent(&spec.Scheduler, v1alpha1.ComponentScheduler, fldPath.Child("scheduler"))...)
	allErrs = append(allErrs, validateDataPlane(&spec.DataPlane, fldPath.Child("dataPlane"))...)
	allErrs = append(allErrs, validateDNS(&spec.DNS, spec.DataPlane.Mode, fldPath.Child("dns"))...)
	allErrs = append(allErrs, validateMetrics(&spec.Metrics, spec.DataPlane.Mode, fldPath.Child("metrics"))...)
	allErrs = append(allErrs, validateSleep(&spec.Sleep, fldPath.Child("sleep"))...)
	allErrs = append(allErrs, validateRestoreFrom(spec, fldPath.Child("restoreFrom"))...)
	if spec.DataPlane.Mode == capn.DataPlaneShared {
		allErrs = append(allErrs, validateComponent(&spec.Syncer, v1alpha1.ComponentSyncer, fldPath.Child("syncer"))...)
	}
	return allErrs
}

// validateRemovedFlags refuses extraArgs the spec's version no longer
// accepts. On an upgrade the error names the flag, so the user removes it
// first instead of meeting a crash-looping component halfway through.
func validateRemovedFlags(spec *capn.NestedClusterSpec, fldPath *field.Path) field.ErrorList {
	v, err := versions.Parse(spec.Version)
	if err != nil {
		return nil // reported by validateVersion
	}
	var allErrs field.ErrorList
	for _, c := range []struct {
		name string
		args map[string]string
		path *field.Path
	}{
		{v1alpha1.ComponentAPIServer, spec.APIServer.ExtraArgs, fldPath.Child("apiServer", "extraArgs")},
		{v1alpha1.ComponentControllerManager, spec.ControllerManager.ExtraArgs, fldPath.Child("controllerManager", "extraArgs")},
		{v1alpha1.ComponentScheduler, spec.Scheduler.ExtraArgs, fldPath.Child("scheduler", "extraArgs")},
	} {
		for _, k := range slices.Sorted(maps.Keys(c.args)) {
			if m := versions.FlagRemoved(v, c.name, k); m != 0 {
				allErrs = append(allErrs, field.Forbidden(c.path.Key(k),
					fmt.Sprintf("%s 1.%d removed this flag; remove it (before upgrading to %s)", c.name, m, spec.Version)))
			}
		}
	}
	return allErrs
}

var knownPhases = []capn.NestedClusterPhase{
	capn.PhaseProvisioning, capn.PhaseReady, capn.PhaseUpgrading,
	capn.PhaseDegraded, capn.PhaseDeleting, capn.PhasePaused, capn.PhaseSleeping,
}

// ValidateNestedClusterStatusUpdate validates a write to the status
// subresource. The provisioner is the only writer, so this is a sanity net
// against bugs rather than a policy.
func ValidateNestedClusterStatusUpdate(newNC, oldNC *capn.NestedCluster) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newNC.ObjectMeta, &oldNC.ObjectMeta, field.NewPath("metadata"))
	st := &newNC.Status
	fldPath := field.NewPath("status")

	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(st.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(st.Replicas), fldPath.Child("replicas"))...)
	if st.Phase != "" && !contains(knownPhases, st.Phase) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("phase"), st.Phase, knownPhases))
	}
	allErrs = append(allErrs, metav1validation.ValidateConditions(st.Conditions, fldPath.Child("conditions"))...)
	// A slice, not a map, so errors come out in a stable order.
	for _, c := range []struct {
		name string
		cs   *capn.ComponentStatus
	}{
		{"etcd", &st.Etcd}, {"apiServer", &st.APIServer},
		{"controllerManager", &st.ControllerManager}, {"scheduler", &st.Scheduler},
		{"syncer", &st.Syncer},
	} {
		p, cs := fldPath.Child(c.name), c.cs
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(cs.Replicas), p.Child("replicas"))...)
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(cs.ReadyReplicas), p.Child("readyReplicas"))...)
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(cs.UpdatedReplicas), p.Child("updatedReplicas"))...)
	}
	if u := st.Upgrade; u != nil {
		p := fldPath.Child("upgrade")
		// Both ends must parse, or the skew check on the next spec update
		// could not tell a rollback from a downgrade.
		allErrs = append(allErrs, validateVersionSyntax(p.Child("from"), u.From)...)
		allErrs = append(allErrs, validateVersionSyntax(p.Child("to"), u.To)...)
		for i, step := range u.Steps {
			sp := p.Child("steps").Index(i)
			if step.Component == "" {
				allErrs = append(allErrs, field.Required(sp.Child("component"), ""))
			}
			allErrs = append(allErrs, validateVersionSyntax(sp.Child("version"), step.Version)...)
		}
	}
	return allErrs
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
