#!/usr/bin/env bash
# Copyright The capn Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Container image file systems made from Debian's busybox-static package,
# shared by hack/build-images.sh (the local cluster's storage provisioner
# runs its helper pods on one, docs/storage.md) and
# hack/build-conformance-images.sh (the e2e suite's busybox and agnhost).
# No registry is reachable here, so the shell an image needs comes from
# Debian, like the packages the node runs.
#
# Source it; it only defines functions. Each prints nothing on stdout but
# what it says it prints, and fails (returns non-zero) with a message on
# stderr.

# busybox_deb DEBS_DIR: prints the busybox-static .deb kept in DEBS_DIR,
# first fetching the candidate apt knows (with its signature-checked index,
# as apt-get download does) when none is there. A machine whose apt lists
# were never fetched knows no candidate: then the lists are updated once.
busybox_deb() {
  local dir=$1 deb try
  mkdir -p "${dir}"
  deb=$(find "${dir}" -maxdepth 1 -name 'busybox-static_*_amd64.deb' | sort | tail -n1)
  for try in download update-and-download; do
    [[ -z "${deb}" ]] || break
    if [[ "${try}" == update-and-download ]]; then
      printf '%s\n' "busybox: no busybox-static candidate; apt-get update" >&2
      apt-get update -qq >&2 || return 1
    fi
    printf '%s\n' "downloading busybox-static with apt-get" >&2
    (cd "${dir}" && apt-get download busybox-static 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) || true
    deb=$(find "${dir}" -maxdepth 1 -name 'busybox-static_*_amd64.deb' | sort | tail -n1)
  done
  if [[ -z "${deb}" ]]; then
    printf '%s\n' "busybox: apt-get download busybox-static left no .deb in ${dir}" >&2
    return 1
  fi
  printf '%s\n' "${deb}"
}

# busybox_deb_version DEB: prints the package's Debian version
# (e.g. 1:1.35.0-4+deb12u1+b1).
busybox_deb_version() { dpkg-deb -f "$1" Version; }

# busybox_image_tag DEB: prints the package's version as an image tag: the
# epoch dropped and every character a tag cannot hold ('+', '~', ':') made
# a '-' (1:1.35.0-4+deb12u1+b1 -> 1.35.0-4-deb12u1-b1). It is Debian's
# build, not upstream busybox's release, so it goes under a capn name.
busybox_image_tag() {
  local v
  v=$(busybox_deb_version "$1") || return 1
  v=${v#*:}
  printf '%s\n' "${v//[^A-Za-z0-9_.-]/-}"
}

# busybox_extract DEB DIR: unpacks DEB into DIR and prints the path of its
# static busybox, after checking that it is one and lists its applets.
busybox_extract() {
  local deb=$1 dir=$2 bin n
  dpkg-deb -x "${deb}" "${dir}"
  bin="${dir}/bin/busybox"
  if [[ ! -x "${bin}" ]]; then
    printf '%s\n' "busybox: ${deb} has no bin/busybox" >&2
    return 1
  fi
  n=$("${bin}" --list | wc -l)
  if ((n <= 100)); then
    printf '%s\n' "busybox: ${bin} --list printed only ${n} applets" >&2
    return 1
  fi
  printf '%s\n' "${bin}"
}

# busybox_passwd_group DIR: DIR/etc/passwd and DIR/etc/group with the users
# and groups of the official busybox image (buildroot's skeleton).
busybox_passwd_group() {
  mkdir -p "$1/etc"
  cat >"$1/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
PASSWD
  cat >"$1/etc/group" <<'GROUP'
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
GROUP
}

# busybox_base_dirs DIR: the directories every image here has.
busybox_base_dirs() {
  mkdir -p "$1"/{bin,etc,home,root,tmp,usr/bin,usr/sbin,sbin,var/spool/mail,var/www}
  chmod 1777 "$1/tmp"
  chmod 700 "$1/root"
}

# busybox_image_dir BUSYBOX DIR: an image directory for hack/tools/images
# (DIR/rootfs and DIR/config.json) laid out like the official busybox image:
# the binary and every applet in /bin, sh as the command.
busybox_image_dir() {
  local bin=$1 dir=$2 a
  busybox_base_dirs "${dir}/rootfs"
  busybox_passwd_group "${dir}/rootfs"
  install -m 0755 "${bin}" "${dir}/rootfs/bin/busybox"
  while read -r a; do
    # linuxrc is an initramfs init, not a command.
    [[ "${a}" == busybox || "${a}" == linuxrc ]] || ln -s busybox "${dir}/rootfs/bin/${a}"
  done < <("${bin}" --list)
  cat >"${dir}/config.json" <<'CONFIG'
{"Cmd": ["sh"], "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
CONFIG
}
