// Package authz asks the management cluster's authorizer, on behalf of the
// user behind a write, what capn's strategies need to know beyond the
// object itself: may this user read the Secret they reference, use the pool
// they name. The answer is "" when allowed, else the reason, for a
// field.Forbidden.
package authz

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Denied returns "" when the requester may do verb on the resource, else
// why not; why is appended to a denial to say what the check protects.
func Denied(ctx context.Context, a authorizer.Authorizer, attrs authorizer.AttributesRecord, why string) string {
	what := fmt.Sprintf("permission %q on %s %q", attrs.Verb, qualified(attrs), attrs.Name)
	if attrs.Namespace != "" {
		what += fmt.Sprintf(" in namespace %q", attrs.Namespace)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return "no user to check " + what
	}
	attrs.User = u
	attrs.ResourceRequest = true
	decision, _, err := a.Authorize(ctx, attrs)
	switch {
	case err != nil && decision != authorizer.DecisionAllow:
		return fmt.Sprintf("could not check %s: %v", what, err)
	case decision != authorizer.DecisionAllow:
		return fmt.Sprintf("user %q lacks %s: %s", u.GetName(), what, why)
	}
	return ""
}

// CanGetSecret is Denied for reading one Secret.
func CanGetSecret(ctx context.Context, a authorizer.Authorizer, namespace, name string) string {
	return Denied(ctx, a, authorizer.AttributesRecord{Verb: "get", Namespace: namespace, Resource: "secrets", Name: name},
		"referencing a Secret requires reading it")
}

func qualified(attrs authorizer.AttributesRecord) string {
	if attrs.APIGroup == "" {
		return attrs.Resource
	}
	return attrs.Resource + "." + attrs.APIGroup
}

// IsCapnOrAdmin reports whether the request comes from capn itself (its
// loopback identity) or a member of one of adminGroups: who may remove
// capn's finalizers. The loopback user's name alone is not proof (a
// front-proxied user could carry it); the superuser group with it is.
func IsCapnOrAdmin(ctx context.Context, adminGroups []string) bool {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return false
	}
	groups := u.GetGroups()
	if u.GetName() == user.APIServerUser && slices.Contains(groups, user.SystemPrivilegedGroup) {
		return true
	}
	for _, g := range groups {
		if slices.Contains(adminGroups, g) {
			return true
		}
	}
	return false
}
