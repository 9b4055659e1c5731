package validation

import (
	"slices"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

// maxBackupMessage bounds status.message (capn writes a fixed text).
const maxBackupMessage = 1024

// ValidateNestedClusterBackup validates a backup on create.
func ValidateNestedClusterBackup(b *capn.NestedClusterBackup) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	p := field.NewPath("spec", "clusterName")
	if b.Spec.ClusterName == "" {
		return append(allErrs, field.Required(p, "the NestedCluster in this namespace to back up"))
	}
	for _, msg := range ValidateNestedClusterName(b.Spec.ClusterName, false) {
		allErrs = append(allErrs, field.Invalid(p, b.Spec.ClusterName, msg))
	}
	return allErrs
}

// ValidateNestedClusterBackupUpdate keeps the spec as created: a backup is
// of one cluster, once.
func ValidateNestedClusterBackupUpdate(newB, oldB *capn.NestedClusterBackup) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newB.ObjectMeta, &oldB.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, apimachineryvalidation.ValidateImmutableField(newB.Spec, oldB.Spec, field.NewPath("spec"))...)
}

var backupPhases = []capn.BackupPhase{"", capn.BackupPending, capn.BackupCompleted, capn.BackupFailed}

// ValidateNestedClusterBackupStatusUpdate validates what the provisioner
// writes; a Completed or Failed backup stays so.
func ValidateNestedClusterBackupStatusUpdate(newB, oldB *capn.NestedClusterBackup) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newB.ObjectMeta, &oldB.ObjectMeta, field.NewPath("metadata"))
	sp := field.NewPath("status")
	st := &newB.Status
	if !slices.Contains(backupPhases, st.Phase) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("phase"), st.Phase, []string{string(capn.BackupPending), string(capn.BackupCompleted), string(capn.BackupFailed)}))
	}
	if done := oldB.Status.Phase; (done == capn.BackupCompleted || done == capn.BackupFailed) && st.Phase != done {
		allErrs = append(allErrs, field.Forbidden(sp.Child("phase"), "a "+string(done)+" backup stays "+string(done)))
	}
	if len(st.Message) > maxBackupMessage {
		allErrs = append(allErrs, field.TooLong(sp.Child("message"), "", maxBackupMessage))
	}
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(st.Revision, sp.Child("revision"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(st.Keys, sp.Child("keys"))...)
	return append(allErrs, apimachineryvalidation.ValidateNonnegativeField(st.SizeBytes, sp.Child("sizeBytes"))...)
}

// validateRestoreFrom checks spec.restoreFrom's shape. Whether the backup
// exists, is Completed and may be read by the requester is the registry's
// to check, on create.
func validateRestoreFrom(spec *capn.NestedClusterSpec, fldPath *field.Path) field.ErrorList {
	r := spec.RestoreFrom
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	if r.Backup == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("backup"), "the name of a NestedClusterBackup in this namespace"))
	}
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(r.Backup, false) {
		if r.Backup != "" {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("backup"), r.Backup, msg))
		}
	}
	if spec.Etcd.External != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath, "capn writes a backup only into an etcd it manages or a pool; restore an external etcd where it runs"))
	}
	return allErrs
}
