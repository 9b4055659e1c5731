#!/usr/bin/env bash
# Regenerates everything under pkg/generated and the zz_generated files in
# pkg/apis with the code-generator version pinned in go.mod.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
# go list names the module's directory only once it is in the module cache,
# which a new machine's is not.
go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"
# The OpenAPI definitions must include the core and autoscaling types our
# spec and /scale refer to, but those packages live in the module cache:
# mark them read-only or openapi-gen rewrites their model-name files there.
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/core/v1 k8s.io/api/autoscaling/v1)

THIS_PKG=capn.dev/capn
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

kube::codegen::gen_helpers --boilerplate "${BOILERPLATE}" "${ROOT}/pkg/apis"

kube::codegen::gen_openapi \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${THIS_PKG}/pkg/generated/openapi" \
    --output-model-name-file zz_generated.model_name.go \
    --extra-pkgs k8s.io/api/core/v1 \
    --extra-pkgs k8s.io/api/autoscaling/v1 \
    --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
    --report-filename "${ROOT}/hack/api-violations.list" \
    --update-report \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-openapi-schema <(go run "${THIS_PKG}/pkg/generated/openapi/cmd/models-schema") \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${THIS_PKG}/pkg/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

# The Cluster API provider's CRDs, from the OpenAPI definitions just written.
go run ./hack/crdgen artifacts/deploy/clusterapi/crds.yaml
