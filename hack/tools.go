//go:build tools

// Package tools pins code-generator in go.mod so hack/update-codegen.sh uses
// the same version as the libraries we build against.
package tools

import _ "k8s.io/code-generator"
