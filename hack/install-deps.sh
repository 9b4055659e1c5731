#!/usr/bin/env bash
# Installs the Debian packages capn's local cluster and tests need, if they
# are missing: containerd, runc, CNI plugins, iptables and ipset (the
# NetworkPolicy engine, kube-router, uses both) for the real node
# (see ../shared/notes/local-cluster.md), plus the basic tools the scripts
# use. Nothing here starts a service. Needs root (apt-get).
set -euo pipefail

pkgs=(make git curl diffutils iproute2 containerd runc containernetworking-plugins iptables ipset)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
if ((EUID != 0)); then
  echo "install-deps: missing packages ${missing[*]}; run as root (apt-get install)" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
