package nestedcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

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
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		groups := u.GetGroups()
		// capn's loopback identity: the name alone is not proof (a
		// front-proxied user could carry it), the superuser group with it is.
		if u.GetName() == user.APIServerUser && slices.Contains(groups, user.SystemPrivilegedGroup) {
			return nil
		}
		for _, g := range groups {
			if slices.Contains(p.FinalizerAdminGroups, g) {
				return nil
			}
		}
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
