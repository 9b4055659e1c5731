package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/versions"
)

// validateVersionSyntax checks only the form, for places (status) where an
// unsupported but well-formed version is a fact to record, not an error.
func validateVersionSyntax(fldPath *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if _, err := versions.Parse(v); err != nil {
		return field.ErrorList{field.Invalid(fldPath, v, err.Error())}
	}
	return nil
}

// validateVersion checks a requested version is well formed and its minor is
// one capn can run.
func validateVersion(fldPath *field.Path, v string) field.ErrorList {
	if errs := validateVersionSyntax(fldPath, v); len(errs) > 0 {
		return errs
	}
	parsed, _ := versions.Parse(v)
	if !versions.IsSupported(parsed) {
		return field.ErrorList{field.NotSupported(fldPath, v, versions.SupportedMinors())}
	}
	return nil
}

// ValidateVersionChange applies the skew policy to a change of spec.version
// from oldVersion to newVersion. While an upgrade is running the only moves
// are staying on its target or rolling back to its source; the rollback is a
// downgrade, but one to a version the untouched etcd and the not-yet-rolled
// components still run, so it is safe.
func ValidateVersionChange(fldPath *field.Path, oldVersion, newVersion string, upgrade *capn.UpgradeStatus) field.ErrorList {
	if oldVersion == newVersion {
		return nil
	}
	if upgrade != nil && upgrade.FinishedAt == nil {
		if newVersion == upgrade.To || newVersion == upgrade.From {
			return nil
		}
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf(
			"an upgrade from %s to %s is in progress: the version may only stay %s or roll back to %s",
			upgrade.From, upgrade.To, upgrade.To, upgrade.From))}
	}
	newV, err := versions.Parse(newVersion)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, newVersion, err.Error())}
	}
	oldV, err := versions.Parse(oldVersion)
	if err != nil {
		// A stored version that no longer parses cannot be stepped from;
		// refusing would leave the object impossible to repair.
		return nil
	}
	if msg := versions.CheckStep(oldV, newV); msg != "" {
		return field.ErrorList{field.Invalid(fldPath, newVersion, msg)}
	}
	return nil
}

// ValidateAwakeForUpgrade refuses a version change for a cluster that is
// (or is being put) asleep: an ordered upgrade checks each component's pods
// before the next, and a sleeping cluster has none, so it would "finish"
// without having run anything at the new version. Waking in the same
// update is allowed: the upgrade then runs on pods that start.
func ValidateAwakeForUpgrade(fldPath *field.Path, oldVersion, newVersion string, asleep bool) field.ErrorList {
	if oldVersion == newVersion || !asleep {
		return nil
	}
	return field.ErrorList{field.Forbidden(fldPath,
		"the cluster is asleep (spec.sleep.asleep): wake it before changing its version")}
}

// ValidateUpgradeRequest validates the body of POST nestedclusters/NAME/upgrade.
// The skew check against the cluster's current version is the caller's, via
// ValidateVersionChange, because it needs the stored object.
func ValidateUpgradeRequest(req *capn.NestedClusterUpgrade) field.ErrorList {
	return validateVersion(field.NewPath("version"), req.Version)
}
