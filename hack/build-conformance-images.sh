#!/usr/bin/env bash
# Copyright The capn Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Builds the container images of the upstream e2e suite (e2e.test from
# hack/build-tools.sh) that can be built here honestly, named exactly as the
# suite expects, into a docker-archive tarball like hack/build-images.sh:
#
#   agnhost   registry.k8s.io/e2e-test-images/agnhost:<tag>, from the agnhost
#             binary hack/build-tools.sh builds from the same
#             k8s.io/kubernetes (its VERSION file must equal the tag).
#   busybox   registry.k8s.io/e2e-test-images/busybox:<tag>, from Debian's
#             busybox-static package.
#   pause     registry.k8s.io/pause:<tag>, upstream's build/pause/linux/
#             pause.c from the same k8s.io/kubernetes, linked statically
#             with gcc as its Makefile does (its TAG must equal the tag),
#             laid out as its Dockerfile: /pause, user 65535.
#
# The names come from the suite's own test/utils/image package
# (hack/tools/conformance/imagenames), so a KUBE_TEST_REPO_LIST file that
# remaps the registries, given to this script and to e2e.test alike, renames
# the images too. See docs/conformance-build.md for what the images hold, and
# how they differ from upstream's.
#
# Output: ${OUT:-_output}/conformance-images.tar, rebuilt only when one of
# its inputs changed (stamp file next to it). Import into a node with:
#   ctr -n k8s.io images import _output/conformance-images.tar
# The busybox-static .deb is kept under ${CAPN_CACHE:-~/.cache/capn}/debs/;
# hack/lib/busybox.sh makes the file systems, as for hack/build-images.sh.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-${ROOT}/_output}
CACHE="${CAPN_CACHE:-${HOME}/.cache/capn}"
CONF_DIR="${ROOT}/hack/tools/conformance"
export GOWORK=off CGO_ENABLED=0

log() { printf '%s\n' "$*" >&2; }
die() { log "build-conformance-images: $*"; exit 1; }
# shellcheck source=lib/busybox.sh
source "${ROOT}/hack/lib/busybox.sh"

mkdir -p "${OUT}/bin" "${CACHE}/debs"

# Binaries: agnhost from the tools cache, the two helpers from source.
"${ROOT}/hack/build-tools.sh" agnhost >/dev/null
AGNHOST_BIN=$("${ROOT}/hack/build-tools.sh" --print-path agnhost)
(cd "${ROOT}/hack/tools/images" && go build -trimpath -buildvcs=false -o "${OUT}/bin/images" .)
(cd "${CONF_DIR}" && go build -trimpath -buildvcs=false -o "${OUT}/bin/imagenames" ./imagenames)
mapfile -t REFS < <("${OUT}/bin/imagenames" agnhost busybox pause)
AGNHOST_REF=${REFS[0]} BUSYBOX_REF=${REFS[1]} PAUSE_REF=${REFS[2]}

# The agnhost source must be the release the tag names: the suite relies on
# its subcommands and flags.
K8S_SRC=$(cd "${CONF_DIR}" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
AGNHOST_SRC="${K8S_SRC}/test/images/agnhost"
agnhost_version=$(tr -d '[:space:]' <"${AGNHOST_SRC}/VERSION")
[[ "${AGNHOST_REF##*:}" == "${agnhost_version}" ]] ||
  die "the suite expects ${AGNHOST_REF} but test/images/agnhost/VERSION is ${agnhost_version}"
agnhost_says=$("${AGNHOST_BIN}" --version)
[[ "${agnhost_says}" == *" version ${agnhost_version}" ]] ||
  die "${AGNHOST_BIN} --version says '${agnhost_says}', not ${agnhost_version}"

# pause: upstream's C source and flags (build/pause/Makefile: -Os -Wall
# -Werror -static), so the image holds the program the name promises.
PAUSE_SRC="${K8S_SRC}/build/pause"
pause_tag=$(sed -n 's/^TAG ?= //p' "${PAUSE_SRC}/Makefile")
[[ "${PAUSE_REF##*:}" == "${pause_tag}" ]] ||
  die "the suite expects ${PAUSE_REF} but build/pause/Makefile's TAG is ${pause_tag}"
command -v gcc >/dev/null && [[ -f /usr/lib/x86_64-linux-gnu/libc.a ]] ||
  die "pause needs gcc and a static libc (apt-get install gcc libc6-dev)"
k8s_version=$(cd "${CONF_DIR}" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
gcc -Os -Wall -Werror -static -DVERSION="v${pause_tag}-k8s.io/kubernetes@${k8s_version}" \
  -o "${OUT}/bin/pause-${pause_tag}" "${PAUSE_SRC}/linux/pause.c"

deb=$(busybox_deb "${CACHE}/debs")
BUSYBOX_DEB_VERSION=$(busybox_deb_version "${deb}")

TAR="${OUT}/conformance-images.tar"
STAMP="${OUT}/.conformance-images.stamp"
want=$({
  printf '%s\n' "${REFS[@]}"
  sha256sum "${BASH_SOURCE[0]}" "${ROOT}/hack/lib/busybox.sh" "${AGNHOST_BIN}" "${deb}" "${OUT}/bin/images" "${OUT}/bin/pause-${pause_tag}" "${AGNHOST_SRC}/porter/localhost.crt" "${AGNHOST_SRC}/porter/localhost.key" | cut -d' ' -f1
} | sha256sum | cut -d' ' -f1)
if [[ -f "${TAR}" && "$(cat "${STAMP}" 2>/dev/null)" == "${want}" ]]; then
  log "up to date: ${TAR}"
  echo "${TAR}"
  exit 0
fi

WORK=$(mktemp -d "${OUT}/conformance-images.XXXXXX")
trap 'rm -rf "${WORK}"' EXIT
BUSYBOX=$(busybox_extract "${deb}" "${WORK}/deb")
mapfile -t APPLETS_FULL < <("${BUSYBOX}" --list-full)

# busybox: like the official busybox image the suite's is (FROM busybox, see
# test/images/busybox).
B="${WORK}/busybox"
busybox_image_dir "${BUSYBOX}" "${B}"

# agnhost: the layout of test/images/agnhost/Dockerfile (/agnhost, the
# /agnhost-2 link, /uploads, porter's /localhost.{crt,key}, the
# user-defined-in-image user and group-defined-in-image group, entrypoint
# /agnhost, command pause) on busybox where upstream has Alpine (whose base
# is busybox too). Alpine packages upstream adds are not here: a spec that
# runs curl, dig, host, bash, iperf, socat, ss or ipcs fails with "not
# found". Busybox applets those packages would replace (nc from
# netcat-openbsd, nslookup from bind-tools, ip and tc from iproute2) are
# left out rather than standing in for a different program.
SUPERSEDED=" nc nslookup ip tc "
A="${WORK}/agnhost"
busybox_base_dirs "${A}/rootfs"
busybox_passwd_group "${A}/rootfs"
echo 'user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh' >>"${A}/rootfs/etc/passwd"
printf '%s\n' 'user-defined-in-image:x:1000:' 'group-defined-in-image:x:50000:user-defined-in-image' >>"${A}/rootfs/etc/group"
mkdir -p "${A}/rootfs/home/user-defined-in-image" "${A}/rootfs/uploads"
install -m 0755 "${BUSYBOX}" "${A}/rootfs/bin/busybox"
for p in "${APPLETS_FULL[@]}"; do
  a=${p##*/}
  # linuxrc (an init for initramfs) is the one applet at the top level.
  [[ "${p}" == */* ]] || continue
  [[ "${a}" == busybox || "${SUPERSEDED}" == *" ${a} "* ]] && continue
  mkdir -p "${A}/rootfs/$(dirname "${p}")"
  ln -s /bin/busybox "${A}/rootfs/${p}"
done
install -m 0755 "${AGNHOST_BIN}" "${A}/rootfs/agnhost"
ln -s agnhost "${A}/rootfs/agnhost-2"
install -m 0644 "${AGNHOST_SRC}/porter/localhost.crt" "${AGNHOST_SRC}/porter/localhost.key" "${A}/rootfs/"
cat >"${A}/config.json" <<'EOF'
{"Entrypoint": ["/agnhost"], "Cmd": ["pause"], "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
EOF

P="${WORK}/pause"
mkdir -p "${P}/rootfs"
install -m 0755 "${OUT}/bin/pause-${pause_tag}" "${P}/rootfs/pause"
echo '{"Entrypoint": ["/pause"], "User": "65535:65535"}' >"${P}/config.json"

log "agnhost ${agnhost_version} as ${AGNHOST_REF}; busybox ${BUSYBOX_DEB_VERSION} (Debian busybox-static) as ${BUSYBOX_REF}; pause.c ${pause_tag} as ${PAUSE_REF}"
"${OUT}/bin/images" --out "${TAR}" "${AGNHOST_REF}=${A}" "${BUSYBOX_REF}=${B}" "${PAUSE_REF}=${P}"
printf '%s\n' "${want}" >"${STAMP}"
echo "${TAR}"
