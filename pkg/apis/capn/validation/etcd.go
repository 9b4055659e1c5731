package validation

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

// supportedEtcdReplicas: one member for development, three for quorum that
// survives a node loss. Even sizes add no fault tolerance and five is more
// than a tenant control plane needs.
var supportedEtcdReplicas = []string{"1", "3"}

var supportedStorageTypes = []capn.EtcdStorageType{
	capn.EtcdStorageMemory, capn.EtcdStorageEmptyDir, capn.EtcdStoragePersistentVolumeClaim,
}

func validateEtcd(e *capn.EtcdSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	set := 0
	for _, isSet := range []bool{e.Managed != nil, e.External != nil, e.Pool != ""} {
		if isSet {
			set++
		}
	}
	switch {
	case set == 0:
		allErrs = append(allErrs, field.Required(fldPath, "one of managed, external or pool must be set"))
	case set > 1:
		// The later field is the one reported, so the path points at
		// something the user added to a working choice.
		p := fldPath.Child("external")
		if e.Pool != "" {
			p = fldPath.Child("pool")
		}
		allErrs = append(allErrs, field.Forbidden(p, "only one of managed, external or pool may be set"))
	}
	if e.Managed != nil {
		allErrs = append(allErrs, validateManagedEtcd(e.Managed, fldPath.Child("managed"))...)
	}
	if e.External != nil {
		allErrs = append(allErrs, validateExternalEtcd(e.External, fldPath.Child("external"))...)
	}
	if e.Pool != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(e.Pool, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("pool"), e.Pool, msg))
		}
	}
	return allErrs
}

func validateManagedEtcd(m *capn.ManagedEtcd, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rp := fldPath.Child("replicas")
	switch {
	case m.Replicas == nil:
		allErrs = append(allErrs, field.Required(rp, ""))
	case !contains(supportedEtcdReplicas, strconv.Itoa(int(*m.Replicas))):
		allErrs = append(allErrs, field.NotSupported(rp, *m.Replicas, supportedEtcdReplicas))
	}
	if m.Image != "" {
		allErrs = append(allErrs, validateImage(fldPath.Child("image"), m.Image)...)
	}
	allErrs = append(allErrs, validateResources(m.Resources, fldPath.Child("resources"))...)

	sp := fldPath.Child("storage")
	s := &m.Storage
	switch {
	case s.Type == "":
		allErrs = append(allErrs, field.Required(sp.Child("type"), ""))
	case !contains(supportedStorageTypes, s.Type):
		allErrs = append(allErrs, field.NotSupported(sp.Child("type"), s.Type, supportedStorageTypes))
	}
	isPVC := s.Type == capn.EtcdStoragePersistentVolumeClaim
	switch {
	case s.Size == nil && isPVC:
		allErrs = append(allErrs, field.Required(sp.Child("size"), "required when type is PersistentVolumeClaim"))
	case s.Size != nil && s.Size.Sign() <= 0:
		allErrs = append(allErrs, field.Invalid(sp.Child("size"), s.Size.String(), "must be greater than zero"))
	}
	if s.StorageClassName != nil {
		scp := sp.Child("storageClassName")
		if !isPVC {
			allErrs = append(allErrs, field.Forbidden(scp, "may only be set when type is PersistentVolumeClaim"))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(*s.StorageClassName) {
				allErrs = append(allErrs, field.Invalid(scp, *s.StorageClassName, msg))
			}
		}
	}
	return allErrs
}

func validateExternalEtcd(x *capn.ExternalEtcd, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	ep := fldPath.Child("endpoints")
	if len(x.Endpoints) == 0 {
		allErrs = append(allErrs, field.Required(ep, "at least one etcd client URL is required"))
	}
	seen := map[string]bool{}
	for i, e := range x.Endpoints {
		if seen[e] {
			allErrs = append(allErrs, field.Duplicate(ep.Index(i), e))
			continue
		}
		seen[e] = true
		allErrs = append(allErrs, validateEtcdEndpoint(ep.Index(i), e)...)
	}
	allErrs = append(allErrs, validateSecretRef(&x.CASecretRef, fldPath.Child("caSecretRef"))...)
	allErrs = append(allErrs, validateSecretRef(&x.ClientSecretRef, fldPath.Child("clientSecretRef"))...)
	pp := fldPath.Child("prefix")
	switch {
	case x.Prefix == "":
		allErrs = append(allErrs, field.Required(pp, ""))
	case !strings.HasPrefix(x.Prefix, "/"):
		allErrs = append(allErrs, field.Invalid(pp, x.Prefix, "must start with '/'"))
	}
	return allErrs
}

// validateEtcdEndpoint accepts what kube-apiserver's --etcd-servers takes for
// one member: scheme://host:port and nothing else. Credentials in the URL
// would end up in the apiserver's command line, visible to anyone who can
// read the pod.
func validateEtcdEndpoint(fldPath *field.Path, e string) field.ErrorList {
	u, err := url.Parse(e)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, e, fmt.Sprintf("must be a URL: %v", err))}
	}
	var problems []string
	if u.Scheme != "https" && u.Scheme != "http" {
		problems = append(problems, "scheme must be https or http")
	}
	if u.Hostname() == "" {
		problems = append(problems, "must have a host")
	}
	if p := u.Port(); p == "" {
		problems = append(problems, "must have a port")
	} else if n, err := strconv.Atoi(p); err != nil || len(utilvalidation.IsValidPortNum(n)) > 0 {
		problems = append(problems, "port must be between 1 and 65535")
	}
	if u.User != nil {
		problems = append(problems, "must not contain credentials")
	}
	if u.Opaque != "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		problems = append(problems, "must not have a path, query or fragment")
	}
	var allErrs field.ErrorList
	for _, p := range problems {
		allErrs = append(allErrs, field.Invalid(fldPath, e, p+", e.g. https://etcd-0.example.com:2379"))
	}
	return allErrs
}

func validateSecretRef(r *capn.SecretReference, fldPath *field.Path) field.ErrorList {
	np := fldPath.Child("name")
	if r.Name == "" {
		return field.ErrorList{field.Required(np, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(r.Name) {
		allErrs = append(allErrs, field.Invalid(np, r.Name, msg))
	}
	return allErrs
}

func etcdKind(e *capn.EtcdSpec) string {
	switch {
	case e.Managed != nil:
		return "managed"
	case e.External != nil:
		return "external"
	case e.Pool != "":
		return "pool " + e.Pool
	}
	return ""
}

// validateEtcdUpdate keeps the data where it is: capn does not migrate data
// between etcds, change membership or move volumes.
func validateEtcdUpdate(newE, oldE *capn.EtcdSpec, fldPath *field.Path) field.ErrorList {
	if errs := apimachineryvalidation.ValidateImmutableField(etcdKind(newE), etcdKind(oldE), fldPath); len(errs) > 0 {
		return explain(errs, "cannot switch between managed, external and pooled etcd or between pools: capn does not migrate etcd data")
	}
	if newE.Managed == nil || oldE.Managed == nil {
		return nil
	}
	mp := fldPath.Child("managed")
	allErrs := explain(apimachineryvalidation.ValidateImmutableField(newE.Managed.Replicas, oldE.Managed.Replicas, mp.Child("replicas")),
		"etcd membership changes are not supported; etcd replicas are fixed at create")
	allErrs = append(allErrs, explain(apimachineryvalidation.ValidateImmutableField(newE.Managed.Storage, oldE.Managed.Storage, mp.Child("storage")),
		"capn does not move etcd data to a new volume")...)
	return allErrs
}

// explain appends why to "field is immutable", so the user learns what to do
// instead of only that the change was refused.
func explain(errs field.ErrorList, why string) field.ErrorList {
	for _, e := range errs {
		e.Detail += ": " + why
	}
	return errs
}
