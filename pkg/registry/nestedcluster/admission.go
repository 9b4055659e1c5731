package nestedcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/registry/authz"
)

// DefaultFinalizerAdminGroups may remove capn's finalizer besides capn
// itself: the management cluster's superusers, whom no tenant can join.
var DefaultFinalizerAdminGroups = []string{user.SystemPrivilegedGroup}

// Policy is what the strategies decide from who is asking, beyond what
// validation decides from the object alone.
type Policy struct {
	// Authorizer answers whether the requester may read the Secrets a
	// NestedCluster references and use the pool it names; capn-apiserver
	// passes its delegated
	// authorizer, so the answer is the management cluster's RBAC.
	Authorizer authorizer.Authorizer
	// FinalizerAdminGroups may remove v1alpha1.ProvisionerFinalizer: the
	// provider's break-glass path for a cluster capn cannot clean up.
	FinalizerAdminGroups []string
	// DataPlane is the provider's side of spec.dataPlane and spec.syncer.
	DataPlane DataPlanePolicy
	// DefaultSleepAfterInactivity, when not zero, is given at creation to
	// a NestedCluster whose spec.sleep sets nothing. It is stored, so the
	// tenant sees it and can remove it; a later change of the provider's
	// default does not touch existing clusters.
	DefaultSleepAfterInactivity time.Duration
	// Backup reads the NestedClusterBackup a create's spec.restoreFrom
	// names; nil refuses every restoreFrom.
	Backup func(ctx context.Context, namespace, name string) (*capn.NestedClusterBackup, error)
}

func (p Policy) complete() (Policy, error) {
	if p.Authorizer == nil {
		return p, errors.New("nestedclusters storage needs an authorizer for Secret references")
	}
	return p, nil
}

// finalizerErrors refuses an update that drops capn's finalizer unless capn
// itself (its loopback identity) or a provider admin sends it. Otherwise a
// tenant could patch it away and delete the object before capn re-adds it,
// orphaning a running control plane.
func (p Policy) finalizerErrors(ctx context.Context, newNC, oldNC *capn.NestedCluster) field.ErrorList {
	if !slices.Contains(oldNC.Finalizers, v1alpha1.ProvisionerFinalizer) || slices.Contains(newNC.Finalizers, v1alpha1.ProvisionerFinalizer) {
		return nil
	}
	if authz.IsCapnOrAdmin(ctx, p.FinalizerAdminGroups) {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
		fmt.Sprintf("%s is removed by capn once the control plane is deleted; only capn and the provider's break-glass groups may remove it", v1alpha1.ProvisionerFinalizer))}
}

// secretErrors proves the requester may get every Secret the cluster
// references and did not before (old is nil on create). Without it a
// tenant could name a Secret it cannot read and have capn mount it into a
// pod whose image and command the tenant chooses.
func (p Policy) secretErrors(ctx context.Context, newNC, oldNC *capn.NestedCluster) field.ErrorList {
	ext := newNC.Spec.Etcd.External
	if ext == nil {
		return nil
	}
	var before map[string]bool
	if oldNC != nil && oldNC.Spec.Etcd.External != nil {
		o := oldNC.Spec.Etcd.External
		before = map[string]bool{o.CASecretRef.Name: true, o.ClientSecretRef.Name: true}
	}
	refs := field.NewPath("spec", "etcd", "external")
	var errs field.ErrorList
	for _, ref := range []struct {
		path *field.Path
		name string
	}{
		{refs.Child("caSecretRef", "name"), ext.CASecretRef.Name},
		{refs.Child("clientSecretRef", "name"), ext.ClientSecretRef.Name},
	} {
		if ref.name == "" || before[ref.name] {
			continue
		}
		if msg := authz.CanGetSecret(ctx, p.Authorizer, newNC.Namespace, ref.name); msg != "" {
			errs = append(errs, field.Forbidden(ref.path, msg))
		}
	}
	return errs
}

// poolErrors proves the requester may use the NestedEtcdPool the cluster
// names (checked on create only: the field is immutable). Without it any
// tenant could put its state, and its load, in any pool the provider runs.
func (p Policy) poolErrors(ctx context.Context, newNC, oldNC *capn.NestedCluster) field.ErrorList {
	pool := newNC.Spec.Etcd.Pool
	if pool == "" || oldNC != nil {
		return nil
	}
	// In the cluster's namespace, as PodSecurityPolicy's "use" was: a
	// RoleBinding there grants a team a pool, a ClusterRoleBinding everyone.
	msg := authz.Denied(ctx, p.Authorizer, authorizer.AttributesRecord{Verb: "use", APIGroup: capn.GroupName, Resource: "nestedetcdpools", Name: pool, Namespace: newNC.Namespace},
		"a provider grants the use of a pool through RBAC")
	if msg == "" {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "etcd", "pool"), msg)}
}

// restoreErrors proves, on create, that the requester may restore the
// backup spec.restoreFrom names, and that it is Completed: a restore from
// anything else would start a cluster that can never become what was
// asked for. The verb is "restore", not "get": a restore makes its
// requester cluster-admin over every Secret of the backed-up cluster,
// which is edit's trust (a kubeconfig), not view's.
func (p Policy) restoreErrors(ctx context.Context, newNC *capn.NestedCluster) field.ErrorList {
	r := newNC.Spec.RestoreFrom
	if r == nil || len(apimachineryvalidation.NameIsDNSSubdomain(r.Backup, false)) > 0 {
		return nil // validation says what is wrong with the name
	}
	fld := field.NewPath("spec", "restoreFrom", "backup")
	if msg := authz.Denied(ctx, p.Authorizer, authorizer.AttributesRecord{Verb: "restore", APIGroup: capn.GroupName, Resource: "nestedclusterbackups", Name: r.Backup, Namespace: newNC.Namespace},
		"a restore reads every Secret of the backed-up cluster"); msg != "" {
		return field.ErrorList{field.Forbidden(fld, msg)}
	}
	if p.Backup == nil {
		return field.ErrorList{field.Forbidden(fld, "this capn-apiserver serves no backups")}
	}
	b, err := p.Backup(ctx, newNC.Namespace, r.Backup)
	switch {
	case apierrors.IsNotFound(err):
		return field.ErrorList{field.NotFound(fld, r.Backup)}
	case err != nil:
		return field.ErrorList{field.InternalError(fld, fmt.Errorf("reading the backup: %w", err))}
	case b.DeletionTimestamp != nil:
		return field.ErrorList{field.Invalid(fld, r.Backup, "the backup is being deleted")}
	case b.Status.Phase != capn.BackupCompleted:
		return field.ErrorList{field.Invalid(fld, r.Backup, fmt.Sprintf("the backup is %s, not %s", orPending(b.Status.Phase), capn.BackupCompleted))}
	}
	return nil
}

func orPending(p capn.BackupPhase) capn.BackupPhase {
	if p == "" {
		return capn.BackupPending
	}
	return p
}
