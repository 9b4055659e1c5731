#!/usr/bin/env bash
# Packs capn-apiserver, capn-syncer, capn-testserver (for the data-plane e2e), pause,
# CoreDNS (for the tenant DNS addon), metrics-server (for the tenant metrics
# addon), the pinned Kubernetes/etcd binaries and the local cluster's storage
# provisioner with its helper (docs/storage.md) into container images
# (docker-archive tarball), named as the provisioner and the deploy manifests
# expect.
# Output: ${OUT:-_output}/images.tar. Import into a node with:
# ctr -n k8s.io images import _output/images.tar
#
# images.tar carries kube-apiserver, kube-controller-manager and
# kube-scheduler of every supported release (hack/versions prints them from
# pkg/versions.Supported), so every version the API accepts runs on a local
# node and an upgrade can be tried there. Each release's binaries come from
# the version-keyed cache of hack/build-tools.sh and are built only once.
#
# The storage provisioner is upstream's local-path-provisioner, so its image
# has upstream's name (docker.io/rancher/local-path-provisioner:<version>).
# Its helper pods need a shell: capn.dev/busybox:<tag> is Debian's
# busybox-static (hack/lib/busybox.sh; the .deb is kept under
# ${CAPN_CACHE:-~/.cache/capn}/debs/), named by capn because it is Debian's
# build, not an upstream busybox release. test/framework.DeployStorage finds
# that tag on the node.
#
# metrics-server is upstream's program unchanged, so its image has upstream's
# name (registry.k8s.io/metrics-server/metrics-server:<version>) and the
# layout of upstream's Dockerfile: /metrics-server as the entrypoint, user
# 65534, so upstream's deployment manifest (args only, --cert-dir=/tmp on
# an emptyDir) runs it as it is. See docs/metrics-build.md.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-${ROOT}/_output}
CACHE="${CAPN_CACHE:-${HOME}/.cache/capn}"
export GOWORK=off CGO_ENABLED=0
mkdir -p "${OUT}/bin"
# shellcheck source=lib/busybox.sh
source "${ROOT}/hack/lib/busybox.sh"

mapfile -t RELEASES < <(cd "${ROOT}" && go run ./hack/versions)
((${#RELEASES[@]})) || { echo "build-images: hack/versions printed no release" >&2; exit 1; }
"${ROOT}/hack/build-tools.sh" etcd coredns local-path-provisioner metrics-server >/dev/null
path() { "${ROOT}/hack/build-tools.sh" --print-path "$1"; }
ETCD_BIN=$(path etcd)
ETCD_VERSION=$(basename "$(dirname "${ETCD_BIN}")")
# The tag is the github.com/coredns/coredns version hack/tools/coredns/go.mod
# pins (the cache dir is keyed by it); pkg/versions.CoreDNSImage must match,
# which its test checks.
COREDNS_BIN=$(path coredns)
COREDNS_VERSION=$(basename "$(dirname "${COREDNS_BIN}")")
LOCAL_PATH_BIN=$(path local-path-provisioner)
LOCAL_PATH_VERSION=$(basename "$(dirname "${LOCAL_PATH_BIN}")")
# As for CoreDNS, the tag is the sigs.k8s.io/metrics-server version
# hack/tools/metrics-server/go.mod pins; pkg/versions.MetricsServerImage must
# match, which its test checks.
METRICS_SERVER_BIN=$(path metrics-server)
METRICS_SERVER_VERSION=$(basename "$(dirname "${METRICS_SERVER_BIN}")")

WORK=$(mktemp -d "${OUT}/images.XXXXXX")
trap 'rm -rf "${WORK}"' EXIT
BUSYBOX_DEB=$(busybox_deb "${CACHE}/debs")
BUSYBOX_TAG=$(busybox_image_tag "${BUSYBOX_DEB}")
busybox_image_dir "$(busybox_extract "${BUSYBOX_DEB}" "${WORK}/deb")" "${WORK}/busybox"

# metrics-server's image: what upstream's Dockerfile copies onto
# gcr.io/distroless/static (/metrics-server, USER 65534, ENTRYPOINT
# ["/metrics-server"]), plus of that base only what the program may touch:
# /tmp (the manifest's --cert-dir, an emptyDir mount point) and the passwd
# and group entries of root and nobody. No CA bundle: metrics-server talks
# only to the cluster's API server and kubelets, with the cluster CA.
M="${WORK}/metrics-server"
mkdir -p "${M}/rootfs/etc" "${M}/rootfs/tmp"
chmod 1777 "${M}/rootfs/tmp"
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' >"${M}/rootfs/etc/passwd"
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"${M}/rootfs/etc/group"
chmod 0644 "${M}/rootfs/etc/passwd" "${M}/rootfs/etc/group"
install -m 0755 "${METRICS_SERVER_BIN}" "${M}/rootfs/metrics-server"
cat >"${M}/config.json" <<'EOF'
{"Entrypoint": ["/metrics-server"], "User": "65534", "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
EOF

(cd "${ROOT}/hack/tools/images" && go build -trimpath -o "${OUT}/bin/images" . && go build -trimpath -ldflags '-s -w' -o "${OUT}/bin/pause" ./pause)
[[ -x "${OUT}/bin/capn-apiserver" && -x "${OUT}/bin/capn-syncer" && -x "${OUT}/bin/capn-testserver" ]] || make -C "${ROOT}" build

refs=(
  "capn.dev/capn-apiserver:dev=${OUT}/bin/capn-apiserver"
  "capn.dev/capn-syncer:dev=${OUT}/bin/capn-syncer"
  "capn.dev/capn-testserver:dev=${OUT}/bin/capn-testserver"
  "registry.k8s.io/pause:3.10=${OUT}/bin/pause"
  "registry.k8s.io/etcd:${ETCD_VERSION#v}-0=${ETCD_BIN}"
  "registry.k8s.io/coredns/coredns:${COREDNS_VERSION}=${COREDNS_BIN}"
  "docker.io/rancher/local-path-provisioner:${LOCAL_PATH_VERSION}=${LOCAL_PATH_BIN}"
  "capn.dev/busybox:${BUSYBOX_TAG}=${WORK}/busybox"
  "registry.k8s.io/metrics-server/metrics-server:${METRICS_SERVER_VERSION}=${M}"
)
for release in "${RELEASES[@]}"; do
  "${ROOT}/hack/build-tools.sh" --k8s-version "${release}" kube-apiserver kube-controller-manager kube-scheduler >/dev/null
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    refs+=("registry.k8s.io/${c}:${release}=$("${ROOT}/hack/build-tools.sh" --k8s-version "${release}" --print-path "${c}")")
  done
done
"${OUT}/bin/images" --out "${OUT}/images.tar" "${refs[@]}"
echo "${OUT}/images.tar"
