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
# The busybox-static .deb is kept under ${CAPN_CACHE:-~/.cache/capn}/debs/.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-${ROOT}/_output}
CACHE="${CAPN_CACHE:-${HOME}/.cache/capn}"
CONF_DIR="${ROOT}/hack/tools/conformance"
export GOWORK=off CGO_ENABLED=0

log() { printf '%s\n' "$*" >&2; }
die() { log "build-conformance-images: $*"; exit 1; }

mkdir -p "${OUT}/bin" "${CACHE}/debs"

# Binaries: agnhost from the tools cache, the two helpers from source.
"${ROOT}/hack/build-tools.sh" agnhost >/dev/null
AGNHOST_BIN=$("${ROOT}/hack/build-tools.sh" --print-path agnhost)
(cd "${ROOT}/hack/tools/images" && go build -trimpath -buildvcs=false -o "${OUT}/bin/images" .)
(cd "${CONF_DIR}" && go build -trimpath -buildvcs=false -o "${OUT}/bin/imagenames" ./imagenames)
mapfile -t REFS < <("${OUT}/bin/imagenames" agnhost busybox)
AGNHOST_REF=${REFS[0]} BUSYBOX_REF=${REFS[1]}

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

# busybox-static: the cached .deb, else the candidate apt knows (fetched with
# its signature-checked index, as apt-get download does).
deb=$(find "${CACHE}/debs" -maxdepth 1 -name 'busybox-static_*_amd64.deb' | sort | tail -n1)
if [[ -z "${deb}" ]]; then
  log "downloading busybox-static with apt-get"
  (cd "${CACHE}/debs" && apt-get download busybox-static 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2)
  deb=$(find "${CACHE}/debs" -maxdepth 1 -name 'busybox-static_*_amd64.deb' | sort | tail -n1)
  [[ -n "${deb}" ]] || die "apt-get download busybox-static left no .deb in ${CACHE}/debs"
fi
BUSYBOX_DEB_VERSION=$(dpkg-deb -f "${deb}" Version)

TAR="${OUT}/conformance-images.tar"
STAMP="${OUT}/.conformance-images.stamp"
want=$({
  printf '%s\n' "${REFS[@]}"
  sha256sum "${BASH_SOURCE[0]}" "${AGNHOST_BIN}" "${deb}" "${OUT}/bin/images" "${AGNHOST_SRC}/porter/localhost.crt" "${AGNHOST_SRC}/porter/localhost.key" | cut -d' ' -f1
} | sha256sum | cut -d' ' -f1)
if [[ -f "${TAR}" && "$(cat "${STAMP}" 2>/dev/null)" == "${want}" ]]; then
  log "up to date: ${TAR}"
  echo "${TAR}"
  exit 0
fi

WORK=$(mktemp -d "${OUT}/conformance-images.XXXXXX")
trap 'rm -rf "${WORK}"' EXIT
dpkg-deb -x "${deb}" "${WORK}/deb"
BUSYBOX="${WORK}/deb/bin/busybox"
[[ -x "${BUSYBOX}" ]] || die "${deb} has no bin/busybox"

# passwd_group DIR: the users and groups of the official busybox image
# (buildroot's skeleton), which is what the suite's busybox image is.
passwd_group() {
  mkdir -p "$1/etc"
  cat >"$1/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
  cat >"$1/etc/group" <<'EOF'
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
netdev:x:82:
users:x:100:
nogroup:x:65534:
EOF
}

# base_dirs DIR: the directories every image here has.
base_dirs() {
  mkdir -p "$1"/{bin,etc,home,root,tmp,usr/bin,usr/sbin,sbin,var/spool/mail,var/www}
  chmod 1777 "$1/tmp"
  chmod 700 "$1/root"
}

mapfile -t APPLETS < <("${BUSYBOX}" --list)
mapfile -t APPLETS_FULL < <("${BUSYBOX}" --list-full)
((${#APPLETS[@]} > 100)) || die "${BUSYBOX} --list printed only ${#APPLETS[@]} applets"

# busybox: like the official busybox image the suite's is (FROM busybox, see
# test/images/busybox): the binary and every applet in /bin, sh as command.
B="${WORK}/busybox"
base_dirs "${B}/rootfs"
passwd_group "${B}/rootfs"
install -m 0755 "${BUSYBOX}" "${B}/rootfs/bin/busybox"
for a in "${APPLETS[@]}"; do
  # linuxrc is an initramfs init, not a command.
  [[ "${a}" == busybox || "${a}" == linuxrc ]] || ln -s busybox "${B}/rootfs/bin/${a}"
done
cat >"${B}/config.json" <<'EOF'
{"Cmd": ["sh"], "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
EOF

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
base_dirs "${A}/rootfs"
passwd_group "${A}/rootfs"
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

log "agnhost ${agnhost_version} as ${AGNHOST_REF}; busybox ${BUSYBOX_DEB_VERSION} (Debian busybox-static) as ${BUSYBOX_REF}"
"${OUT}/bin/images" --out "${TAR}" "${AGNHOST_REF}=${A}" "${BUSYBOX_REF}=${B}"
printf '%s\n' "${want}" >"${STAMP}"
echo "${TAR}"
