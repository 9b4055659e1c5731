package validation

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The grammar of github.com/distribution/reference, restated here so the API
// types do not pull a registry client library into every consumer of them:
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain "/" ] path-component ( "/" path-component )*
//	domain    := host [ ":" port ]
//
// Digests are limited to sha256 and sha512, the ones registries serve.
const (
	refAlnum           = `[a-z0-9]+`
	refSeparator       = `(?:[._]|__|[-]+)`
	refPathComponent   = refAlnum + `(?:` + refSeparator + refAlnum + `)*`
	refDomainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refDomainName      = refDomainComponent + `(?:\.` + refDomainComponent + `)*`
	refIPv6            = `\[[a-fA-F0-9:]+\]`
	refDomain          = `(?:` + refDomainName + `|` + refIPv6 + `)(?::[0-9]+)?`
	refName            = `(?:` + refDomain + `/)?` + refPathComponent + `(?:/` + refPathComponent + `)*`
	refTag             = `[\w][\w.-]{0,127}`
	refDigest          = `(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})`
)

var imageRefRE = regexp.MustCompile(`^(` + refName + `)(?::` + refTag + `)?(?:@` + refDigest + `)?$`)

// maxImageNameLength is the registry limit on the repository part.
const maxImageNameLength = 255

// IsImageReference returns why s is not a valid container image reference,
// or nil when it is.
func IsImageReference(s string) []string {
	m := imageRefRE.FindStringSubmatch(s)
	if m == nil {
		return []string{"must be a valid image reference, e.g. registry.k8s.io/kube-apiserver:v1.37.2 or repo/name@sha256:<64 hex digits>"}
	}
	if len(m[1]) > maxImageNameLength {
		return []string{"repository name must be no more than 255 characters"}
	}
	return nil
}

func validateImage(fldPath *field.Path, s string) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range IsImageReference(s) {
		allErrs = append(allErrs, field.Invalid(fldPath, s, msg))
	}
	return allErrs
}
