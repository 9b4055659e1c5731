#!/usr/bin/env bash
# Packs capn-apiserver, pause and the pinned Kubernetes/etcd binaries into
# container images (docker-archive tarball), named as the provisioner and the
# deploy manifests expect. Output: ${OUT:-_output}/images.tar. Import into a
# node with: ctr -n k8s.io images import _output/images.tar
#
# It also writes ${OUT}/images-v1.36.3.tar: kube-apiserver,
# kube-controller-manager and kube-scheduler of the older supported minor
# (built from hack/tools/k8s-1.36), for tests that upgrade a tenant from it.
# It is a separate tarball so images.tar, which every node loads, stays as
# it is; only the upgrade tests import the second one.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-${ROOT}/_output}
export GOWORK=off CGO_ENABLED=0
mkdir -p "${OUT}/bin"

K8S_VERSION=${CAPN_K8S_VERSION:-v1.37.2}
"${ROOT}/hack/build-tools.sh" kube-apiserver kube-controller-manager kube-scheduler etcd >/dev/null
path() { "${ROOT}/hack/build-tools.sh" --print-path "$1"; }
ETCD_BIN=$(path etcd)
ETCD_VERSION=$(basename "$(dirname "${ETCD_BIN}")")

(cd "${ROOT}/hack/tools/images" && go build -trimpath -o "${OUT}/bin/images" . && go build -trimpath -ldflags '-s -w' -o "${OUT}/bin/pause" ./pause)
[[ -x "${OUT}/bin/capn-apiserver" ]] || make -C "${ROOT}" build

"${OUT}/bin/images" --out "${OUT}/images.tar" \
  "capn.dev/capn-apiserver:dev=${OUT}/bin/capn-apiserver" \
  "registry.k8s.io/pause:3.10=${OUT}/bin/pause" \
  "registry.k8s.io/kube-apiserver:${K8S_VERSION}=$(path kube-apiserver)" \
  "registry.k8s.io/kube-controller-manager:${K8S_VERSION}=$(path kube-controller-manager)" \
  "registry.k8s.io/kube-scheduler:${K8S_VERSION}=$(path kube-scheduler)" \
  "registry.k8s.io/etcd:${ETCD_VERSION#v}-0=${ETCD_BIN}"
echo "${OUT}/images.tar"

PREV_K8S_VERSION=v1.36.3
"${ROOT}/hack/build-tools.sh" --k8s-version "${PREV_K8S_VERSION}" kube-apiserver kube-controller-manager kube-scheduler >/dev/null
prev_path() { "${ROOT}/hack/build-tools.sh" --k8s-version "${PREV_K8S_VERSION}" --print-path "$1"; }
"${OUT}/bin/images" --out "${OUT}/images-${PREV_K8S_VERSION}.tar" \
  "registry.k8s.io/kube-apiserver:${PREV_K8S_VERSION}=$(prev_path kube-apiserver)" \
  "registry.k8s.io/kube-controller-manager:${PREV_K8S_VERSION}=$(prev_path kube-controller-manager)" \
  "registry.k8s.io/kube-scheduler:${PREV_K8S_VERSION}=$(prev_path kube-scheduler)"
echo "${OUT}/images-${PREV_K8S_VERSION}.tar"
