package validation

import (
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

// maxPoolEndpoints bounds spec.endpoints: an etcd cluster has a handful of
// members, and capn dials each one it is given.
const maxPoolEndpoints = 7

// ValidateNestedEtcdPool validates a pool on create.
func ValidateNestedEtcdPool(p *capn.NestedEtcdPool) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validatePoolSpec(&p.Spec, field.NewPath("spec"))...)
}

// ValidateNestedEtcdPoolUpdate validates a spec update. The endpoints may
// change (members are replaced, a load balancer moves) and so may the
// Secret (credentials rotate): the tenants' data stays where it is.
func ValidateNestedEtcdPoolUpdate(newP, oldP *capn.NestedEtcdPool) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newP.ObjectMeta, &oldP.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validatePoolSpec(&newP.Spec, field.NewPath("spec"))...)
}

// ValidateNestedEtcdPoolStatusUpdate validates what the provisioner writes.
func ValidateNestedEtcdPoolStatusUpdate(newP, oldP *capn.NestedEtcdPool) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newP.ObjectMeta, &oldP.ObjectMeta, field.NewPath("metadata"))
	sp := field.NewPath("status")
	st := &newP.Status
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(st.ObservedGeneration, sp.Child("observedGeneration"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(st.Tenants), sp.Child("tenants"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(st.DBSizeBytes, sp.Child("dbSizeBytes"))...)
	return append(allErrs, metav1validation.ValidateConditions(st.Conditions, sp.Child("conditions"))...)
}

func validatePoolSpec(s *capn.NestedEtcdPoolSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	ep := fldPath.Child("endpoints")
	switch {
	case len(s.Endpoints) == 0:
		allErrs = append(allErrs, field.Required(ep, "at least one etcd client URL is required"))
	case len(s.Endpoints) > maxPoolEndpoints:
		allErrs = append(allErrs, field.TooMany(ep, len(s.Endpoints), maxPoolEndpoints))
	}
	seen := map[string]bool{}
	for i, e := range s.Endpoints {
		if i >= maxPoolEndpoints {
			break
		}
		if seen[e] {
			allErrs = append(allErrs, field.Duplicate(ep.Index(i), e))
			continue
		}
		seen[e] = true
		errs := validateEtcdEndpoint(ep.Index(i), e)
		// A pool tells tenants apart by their client certificates: without
		// TLS there is no certificate and so no tenant boundary.
		if len(errs) == 0 && !strings.HasPrefix(e, "https://") {
			errs = append(errs, field.Invalid(ep.Index(i), e, "must be https: tenants authenticate to a pool by client certificate"))
		}
		allErrs = append(allErrs, errs...)
	}
	rp := fldPath.Child("credentialsSecretRef")
	r := &s.CredentialsSecretRef
	if r.Namespace == "" {
		allErrs = append(allErrs, field.Required(rp.Child("namespace"), ""))
	} else {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(r.Namespace, false) {
			allErrs = append(allErrs, field.Invalid(rp.Child("namespace"), r.Namespace, msg))
		}
	}
	allErrs = append(allErrs, validateSecretRef(&capn.SecretReference{Name: r.Name}, rp)...)
	return allErrs
}
