#!/usr/bin/env bash
# Fails when generated code differs from what hack/update-codegen.sh writes.
# It regenerates into the tree, compares with a snapshot, and always puts
# the snapshot back, so a developer's work tree is left as it was.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
PATHS=(pkg/generated pkg/apis hack/api-violations.list artifacts/deploy/clusterapi/crds.yaml)

snap=$(mktemp -d)
trap 'rm -rf "${snap}"' EXIT
cp -a --parents "${PATHS[@]}" "${snap}/"

restore() {
  rm -rf "${PATHS[@]}"
  cp -a "${snap}/." "${ROOT}/"
}
trap 'restore; rm -rf "${snap}"' EXIT

hack/update-codegen.sh >/dev/null
if ! diff -Nru "${snap}/pkg/generated" pkg/generated >/tmp/codegen.diff ||
   ! diff -Nru "${snap}/pkg/apis" pkg/apis >>/tmp/codegen.diff ||
   ! diff -Nu "${snap}/hack/api-violations.list" hack/api-violations.list >>/tmp/codegen.diff ||
   ! diff -Nu "${snap}/artifacts/deploy/clusterapi/crds.yaml" artifacts/deploy/clusterapi/crds.yaml >>/tmp/codegen.diff; then
  head -100 /tmp/codegen.diff
  echo "Generated code is out of date: run hack/update-codegen.sh (make update)." >&2
  exit 1
fi
echo "Generated code is up to date."
