#!/usr/bin/env bash
# Copyright The capn Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Builds pinned, version-stamped, static binaries of the Kubernetes control
# plane, kubectl, etcd, kwok, CoreDNS, the NetworkPolicy engine, the local
# cluster's storage provisioner, metrics-server, the upstream conformance
# suite (e2e.test, ginkgo, agnhost) and Cluster API's core manager and
# clusterctl from the Go modules under hack/tools/, into a cache keyed by
# version:
#
#   ${CAPN_CACHE:-$HOME/.cache/capn}/bin/<version>/<name>
#
# A cold build of the control plane takes well over ten minutes on a 2-core
# machine, so every binary carries a stamp file (hash of its module's
# go.mod/go.sum, its main package, the Go version and the build flags) and is
# skipped when the stamp still matches. GOCACHE is deliberately left to the
# caller: keeping it stable across runs is what makes rebuilds cheap.
#
# Usage:
#   hack/build-tools.sh [--k8s-version V] [NAME...]   build NAMEs (default: all
#                                                      but e2e.test, ginkgo, agnhost,
#                                                      capi-manager, clusterctl)
#   hack/build-tools.sh --print-dir NAME               print NAME's directory, no build
#   hack/build-tools.sh --print-path NAME              print NAME's binary path, no build
#   hack/build-tools.sh --list                         print the known NAMEs
#
# Progress goes to stderr; stdout gets only the resulting bin dir(s), so
# `dir=$(hack/build-tools.sh kubectl)` works.
#
# Module layout (one Kubernetes version per module, because k8s.io/kubernetes
# can only be consumed with a replace block pinning every staging module):
#   hack/tools/            k8s.io/kubernetes v1.37.2 (the default control
#                          plane), kubectl, etcd, code generators.
#   hack/tools/k8s-1.36/   k8s.io/kubernetes v1.36.3 for
#                          CAPN_K8S_VERSION=v1.36.3: its own go.mod with the
#                          1.36 replace block, plus copies of
#                          cmd/<component> for the tenant control plane only
#                          (kube-apiserver, kube-controller-manager,
#                          kube-scheduler; the main.go files are identical).
#   hack/tools/kwok/       sigs.k8s.io/kwok, kept apart (see its go.mod).
#   hack/tools/coredns/    github.com/coredns/coredns with only the plugins
#                          the tenant DNS addon uses (its main.go; see its
#                          go.mod); keyed by the CoreDNS version.
#   hack/tools/kube-router/ github.com/cloudnativelabs/kube-router/v2, the
#                          local node's NetworkPolicy engine (see its go.mod).
#   hack/tools/local-path-provisioner/ github.com/rancher/local-path-provisioner,
#                          the local cluster's dynamic storage provisioner
#                          (docs/storage.md), stamped with its version as
#                          upstream's scripts/build does.
#   hack/tools/metrics-server/ sigs.k8s.io/metrics-server, the tenant metrics
#                          addon's image (see its go.mod); stamped as
#                          upstream's Makefile does (see tool_flags). Keyed by
#                          its version, so it shares bin/v0.8.0/ with kwok
#                          v0.8.0 (different names, different stamps).
#   hack/tools/conformance/ k8s.io/kubernetes v1.37.2 again, for the upstream
#                          e2e suite only: e2e.test (`go test -c
#                          k8s.io/kubernetes/test/e2e`), ginkgo (the version
#                          k8s.io/kubernetes's go.mod requires; keyed by it)
#                          and agnhost (test/images/agnhost, stamped with its
#                          VERSION file as upstream does). A module of its
#                          own so the suite's test-only dependencies never
#                          touch hack/tools/go.sum, which every kube-*
#                          binary's stamp covers. Built with the same flags
#                          as the control plane (upstream builds its tests
#                          that way too), so the compiled packages they share
#                          come from GOCACHE. --k8s-version does not apply.
#                          Not built by default: see docs/conformance-build.md.
#   hack/tools/cluster-api/ sigs.k8s.io/cluster-api: its core manager
#                          (sigs.k8s.io/cluster-api/core, built as
#                          capi-manager) and clusterctl, for the Cluster API
#                          e2e only (test/framework/clusterapi.go; see its
#                          go.mod). Keyed by the sigs.k8s.io/cluster-api
#                          version and stamped as upstream's Makefile does
#                          (see capi_ldflags). Not built by default.
# A kube-* component or etcd comes from the module selected by
# CAPN_K8S_VERSION / --k8s-version when that module has a cmd/<name> for it,
# and from hack/tools otherwise: a second-version module only carries what a
# tenant control plane runs, so kubelet, kube-proxy and etcd stay at the
# hack/tools version whatever --k8s-version says (tenant etcd is not tied to
# the Kubernetes minor; see pkg/provisioner/profiles.EtcdFlags). kubectl
# always comes from hack/tools.
#
# Environment:
#   CAPN_CACHE         cache root (default: $HOME/.cache/capn)
#   CAPN_K8S_VERSION   control-plane version (default: the one hack/tools pins)
set -euo pipefail
# Without this, a failure inside $(...) (e.g. an unknown tool name) would be
# ignored and an empty value used.
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS_DIR="${ROOT}/hack/tools"
CACHE="${CAPN_CACHE:-${HOME}/.cache/capn}"
BIN_ROOT="${CACHE}/bin"

COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
DEFAULT_TOOLS=("${COMPONENTS[@]}" etcd kubectl kwok coredns kube-router local-path-provisioner metrics-server)
# The conformance suite: minutes of extra build, wanted only by the targets
# that run it, so not part of the default set.
CONFORMANCE_TOOLS=(e2e.test ginkgo agnhost)
# Cluster API: wanted only by its e2e (make clusterapi-tools), likewise.
CLUSTERAPI_TOOLS=(capi-manager clusterctl)
ALL_TOOLS=("${DEFAULT_TOOLS[@]}" "${CONFORMANCE_TOOLS[@]}" "${CLUSTERAPI_TOOLS[@]}")

# The tools modules must resolve on their own, whatever go.work a developer
# has lying around higher up the tree.
export GOWORK=off
# Static binaries: they are copied into minimal container images.
export CGO_ENABLED=0

log() { printf '%s\n' "$*" >&2; }
die() { log "build-tools: $*"; exit 1; }

usage() {
  sed -n '/^# Usage:/,/^# Progress/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit "${1:-2}"
}

# mod_version DIR MODULE: effective version of MODULE in the module at DIR
# (the replacement's version when replaced). Reads go.mod only, so it is fast.
mod_version() {
  (cd "$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$2")
}

# k8s_module_dir VERSION: the module that pins k8s.io/kubernetes VERSION.
k8s_module_dir() {
  local v=$1 dir
  if [[ "${v}" == "$(mod_version "${TOOLS_DIR}" k8s.io/kubernetes)" ]]; then
    dir="${TOOLS_DIR}"
  else
    # vMAJOR.MINOR.PATCH -> k8s-MAJOR.MINOR
    local mm=${v#v}; mm=${mm%.*}
    dir="${TOOLS_DIR}/k8s-${mm}"
    [[ -f "${dir}/go.mod" ]] || die "no module for Kubernetes ${v}: create ${dir#"${ROOT}/"}/go.mod (see header)"
    local pinned
    pinned=$(mod_version "${dir}" k8s.io/kubernetes)
    [[ "${pinned}" == "${v}" ]] || die "${dir#"${ROOT}/"} pins k8s.io/kubernetes ${pinned}, not ${v}"
  fi
  printf '%s\n' "${dir}"
}

# tool_module NAME: directory of the Go module NAME is built from.
tool_module() {
  case "$1" in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy|etcd)
      # See the header: a version module without cmd/NAME defers to hack/tools.
      if [[ -d "${K8S_DIR}/cmd/$1" ]]; then
        printf '%s\n' "${K8S_DIR}"
      else
        printf '%s\n' "${TOOLS_DIR}"
      fi ;;
    kubectl) printf '%s\n' "${TOOLS_DIR}" ;;
    kwok) printf '%s\n' "${TOOLS_DIR}/kwok" ;;
    coredns) printf '%s\n' "${TOOLS_DIR}/coredns" ;;
    kube-router) printf '%s\n' "${TOOLS_DIR}/kube-router" ;;
    local-path-provisioner) printf '%s\n' "${TOOLS_DIR}/local-path-provisioner" ;;
    metrics-server) printf '%s\n' "${TOOLS_DIR}/metrics-server" ;;
    e2e.test|ginkgo|agnhost) printf '%s\n' "${TOOLS_DIR}/conformance" ;;
    capi-manager|clusterctl) printf '%s\n' "${TOOLS_DIR}/cluster-api" ;;
    *) die "unknown tool '$1' (known: ${ALL_TOOLS[*]})" ;;
  esac
}

# tool_package NAME: what to pass to `go build` inside NAME's module.
tool_package() {
  case "$1" in
    # kwok's own main is used as-is; nothing of ours to wrap around it.
    kwok) printf '%s\n' sigs.k8s.io/kwok/cmd/kwok ;;
    # Our own main (the plugin selection) is the module's root package.
    coredns) printf '%s\n' . ;;
    kube-router) printf '%s\n' github.com/cloudnativelabs/kube-router/v2/cmd/kube-router ;;
    local-path-provisioner) printf '%s\n' github.com/rancher/local-path-provisioner ;;
    metrics-server) printf '%s\n' sigs.k8s.io/metrics-server/cmd/metrics-server ;;
    # A test package: built with `go test -c` (see build_group).
    e2e.test) printf '%s\n' k8s.io/kubernetes/test/e2e ;;
    ginkgo) printf '%s\n' github.com/onsi/ginkgo/v2/ginkgo ;;
    agnhost) printf '%s\n' k8s.io/kubernetes/test/images/agnhost ;;
    # Upstream's manager image is built from this package (its Makefile's
    # `managers` target names the binary "manager").
    capi-manager) printf '%s\n' sigs.k8s.io/cluster-api/core ;;
    clusterctl) printf '%s\n' sigs.k8s.io/cluster-api/cmd/clusterctl ;;
    *) printf '%s\n' "./cmd/$1" ;;
  esac
}

# built_name NAME: the file `go build -o DIR/` writes for NAME's package (the
# last element of its import path), when that is not NAME itself.
built_name() {
  case "$1" in
    capi-manager) printf '%s\n' core ;;
    *) printf '%s\n' "$1" ;;
  esac
}

# tool_version NAME: the version NAME's cache directory is keyed by.
tool_version() {
  local dir
  dir=$(tool_module "$1")
  case "$1" in
    etcd) mod_version "${dir}" go.etcd.io/etcd/server/v3 ;;
    kwok) mod_version "${dir}" sigs.k8s.io/kwok ;;
    coredns) mod_version "${dir}" github.com/coredns/coredns ;;
    kube-router) mod_version "${dir}" github.com/cloudnativelabs/kube-router/v2 ;;
    local-path-provisioner) mod_version "${dir}" github.com/rancher/local-path-provisioner ;;
    metrics-server) mod_version "${dir}" sigs.k8s.io/metrics-server ;;
    ginkgo) mod_version "${dir}" github.com/onsi/ginkgo/v2 ;;
    capi-manager|clusterctl) mod_version "${dir}" sigs.k8s.io/cluster-api ;;
    *) mod_version "${dir}" k8s.io/kubernetes ;;
  esac
}

tool_path() { printf '%s/%s/%s\n' "${BIN_ROOT}" "$(tool_version "$1")" "$1"; }

# build_flags DIR: go build flags shared by every binary of the module at DIR,
# mirroring upstream release builds (hack/lib/golang.sh): trimmed paths,
# no symbol tables, selinux,notest,grpcnotrace tags, and the version -X
# stamps without which the apiserver reports v0.0.0-master and kubectl
# cannot parse it. Stamps are applied to every binary of a k8s module so that
# they can share one `go build` (the linker ignores -X for packages a binary
# does not link, e.g. etcd). buildDate is the release's commit time, not
# "now", so the output is reproducible and the stamp hash stable.
build_flags() {
  local dir=$1
  # -buildvcs=false: the capn repo's own git state says nothing about these
  # binaries and would change them on every commit.
  local -a flags=(-trimpath -buildvcs=false)
  local ldflags="-s -w"
  if (cd "${dir}" && go list -m k8s.io/kubernetes >/dev/null 2>&1); then
    local v date major minor
    v=$(mod_version "${dir}" k8s.io/kubernetes)
    date=$(cd "${dir}" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
    major=${v#v}; major=${major%%.*}
    minor=${v#v"${major}".}; minor=${minor%%.*}
    local pkg
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
      ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${date}"
    done
    flags+=("-tags=selinux,notest,grpcnotrace")
  fi
  if [[ "${dir}" == "${TOOLS_DIR}/cluster-api" ]]; then
    ldflags+=" $(capi_ldflags)"
  fi
  flags+=("-ldflags=${ldflags}")
  printf '%s\n' "${flags[@]}"
}

# agnhost_version: the agnhost VERSION file of the k8s.io/kubernetes the
# conformance module pins; it is also the image tag test/utils/image expects.
agnhost_version() {
  local dir
  dir=$(cd "${TOOLS_DIR}/conformance" && go mod download k8s.io/kubernetes && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
  [[ -n "${dir}" && -f "${dir}/test/images/agnhost/VERSION" ]] || die "cannot find test/images/agnhost/VERSION of k8s.io/kubernetes"
  tr -d '[:space:]' <"${dir}/test/images/agnhost/VERSION"
}

# metrics_server_ldflags: the version stamps of upstream's Makefile
# (VERSION_LDFLAGS: k8s.io/client-go/pkg/version's gitVersion, gitCommit and
# buildDate; `metrics-server --version` prints gitVersion). gitVersion is the
# module version, as upstream's GIT_TAG is the release tag; buildDate is the
# module's commit time, like the Kubernetes stamps, so the binary is
# reproducible. gitCommit stays empty: the module proxy does not say which
# commit the tag is. k8s.io/component-base/version is left alone, as upstream
# leaves it: it is the Kubernetes library version (v0.33) the API server's
# compatibility version is computed from, not metrics-server's. Upstream
# links with -w only; the -s every binary here gets also drops the symbol
# table, which changes nothing the program does.
metrics_server_ldflags() {
  local dir v date pkg=k8s.io/client-go/pkg/version
  dir=$(tool_module metrics-server)
  v=$(mod_version "${dir}" sigs.k8s.io/metrics-server)
  date=$(cd "${dir}" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' sigs.k8s.io/metrics-server)
  [[ -n "${date}" ]] || die "no commit time for sigs.k8s.io/metrics-server ${v} (go mod download in ${dir#"${ROOT}/"})"
  printf '%s\n' "-X ${pkg}.gitVersion=${v} -X ${pkg}.buildDate=${date}"
}

# capi_ldflags: the version stamps of upstream's Makefile
# (hack/scripts/release/version.sh sets sigs.k8s.io/cluster-api/version's
# gitVersion, gitMajor, gitMinor, gitTreeState, buildDate and gitCommit),
# which the manager logs at start and `clusterctl version` prints; without
# them clusterctl calls itself a development build. gitVersion is the module
# version, as upstream's is the release tag; buildDate is the module's commit
# time, as for the Kubernetes stamps, so the binaries are reproducible.
# gitCommit stays empty: the module proxy does not say which commit the tag
# is. Applied to the whole module (both binaries share one `go build`).
capi_ldflags() {
  local dir=${TOOLS_DIR}/cluster-api v date major minor pkg=sigs.k8s.io/cluster-api/version
  v=$(mod_version "${dir}" sigs.k8s.io/cluster-api)
  date=$(cd "${dir}" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' sigs.k8s.io/cluster-api)
  [[ -n "${date}" ]] || die "no commit time for sigs.k8s.io/cluster-api ${v} (go mod download in ${dir#"${ROOT}/"})"
  major=${v#v}; major=${major%%.*}
  minor=${v#v"${major}".}; minor=${minor%%.*}
  printf '%s\n' "-X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${date}"
}

# tool_flags NAME BASEFLAGS...: NAME's go flags, from its module's
# build_flags. agnhost additionally gets main.Version, which upstream's
# test/images/agnhost/Makefile sets and `agnhost --version` prints;
# local-path-provisioner gets main.VERSION, which upstream's scripts/build
# sets to the release tag (it is the only binary of its module, so this
# does not split a shared build); metrics-server gets its upstream
# Makefile's version stamps.
tool_flags() {
  local name=$1; shift
  local f
  for f in "$@"; do
    if [[ "${name}" == agnhost && "${f}" == -ldflags=* ]]; then
      f+=" -X main.Version=$(agnhost_version)"
    fi
    if [[ "${name}" == local-path-provisioner && "${f}" == -ldflags=* ]]; then
      f+=" -X main.VERSION=$(tool_version local-path-provisioner)"
    fi
    if [[ "${name}" == metrics-server && "${f}" == -ldflags=* ]]; then
      f+=" $(metrics_server_ldflags)"
    fi
    printf '%s\n' "${f}"
  done
}

# solo_build NAME: whether NAME needs a `go build`/`go test` invocation of its
# own rather than sharing its module's (a test binary, or its own flags).
solo_build() { [[ "$1" == e2e.test || "$1" == agnhost ]]; }

# stamp_of NAME FLAGS...: hash of everything that determines NAME's binary.
# Upstream sources are covered by go.sum; ours by the main package's files.
stamp_of() {
  local name=$1; shift
  local dir pkg
  dir=$(tool_module "${name}")
  pkg=$(tool_package "${name}")
  {
    printf 'flags %s\n' "$@"
    if [[ "${name}" == e2e.test ]]; then printf 'mode test -c\n'; fi
    printf 'env %s\n' "$(go env GOVERSION GOOS GOARCH GOAMD64 GOARM64)" "CGO_ENABLED=${CGO_ENABLED}" "GOFLAGS=$(go env GOFLAGS)"
    cat "${dir}/go.mod" "${dir}/go.sum"
    if [[ "${pkg}" == . || "${pkg}" == ./* ]]; then
      cat "${dir}/${pkg}"/*.go
    fi
  } | sha256sum | cut -d' ' -f1
}

# watch_outputs DIR START NAMES...: `go build` links the binaries of one
# invocation as each becomes ready, so polling the output dir is the only way
# to report a per-binary time while still sharing one compile.
watch_outputs() {
  local out=$1 start=$2; shift 2
  local -a pending=("$@")
  while ((${#pending[@]})); do
    sleep 2
    local -a still=()
    local n
    for n in "${pending[@]}"; do
      if [[ -e "${out}/$(built_name "${n}")" ]]; then
        log "  linked ${n} after $((SECONDS - start))s"
      else
        still+=("${n}")
      fi
    done
    pending=("${still[@]+"${still[@]}"}")
  done
}

# build_group DIR NAMES...: one `go build` for all NAMES of the module at DIR,
# so the packages they share are compiled (and scheduled) once.
build_group() {
  local dir=$1; shift
  local -a names=("$@") pkgs=() flags=()
  local n
  for n in "${names[@]}"; do pkgs+=("$(tool_package "${n}")"); done
  local flags_str
  flags_str=$(build_flags "${dir}")
  mapfile -t flags <<<"${flags_str}"
  # A group is either several plain binaries sharing their module's flags or
  # a single solo_build NAME; either way the first name's flags are all's.
  flags_str=$(tool_flags "${names[0]}" "${flags[@]}")
  mapfile -t flags <<<"${flags_str}"

  local out start watcher rc=0
  out=$(mktemp -d "${CACHE}/tmp/build.XXXXXX")
  start=${SECONDS}
  log "building ${names[*]} (module ${dir#"${ROOT}/"})"
  watch_outputs "${out}" "${start}" "${names[@]}" &
  watcher=$!
  if [[ "${names[*]}" == e2e.test ]]; then
    (cd "${dir}" && go test -c "${flags[@]}" -o "${out}/e2e.test" "${pkgs[@]}") || rc=$?
  else
    (cd "${dir}" && go build "${flags[@]}" -o "${out}/" "${pkgs[@]}") || rc=$?
  fi
  kill "${watcher}" 2>/dev/null || true
  wait "${watcher}" 2>/dev/null || true
  if ((rc != 0)); then
    rm -rf "${out}"
    die "go build failed for ${names[*]} (exit ${rc})"
  fi

  # Move into place before writing the stamp, so an interrupted run never
  # leaves a stamp that vouches for a missing or stale binary.
  local dest
  for n in "${names[@]}"; do
    dest=$(tool_path "${n}")
    mkdir -p "$(dirname "${dest}")"
    mv -f "${out}/$(built_name "${n}")" "${dest}"
    stamp_of "${n}" "${flags[@]}" >"$(dirname "${dest}")/.${n}.stamp"
  done
  rmdir "${out}"
  log "built ${names[*]} in $((SECONDS - start))s"
}

main() {
  local print_mode="" k8s_version="${CAPN_K8S_VERSION:-}"
  local -a names=()
  while (($#)); do
    case "$1" in
      --print-dir|--print-path)
        (($# >= 2)) || usage
        print_mode=$1 names=("$2"); shift 2 ;;
      --k8s-version)
        (($# >= 2)) || usage
        k8s_version=$2; shift 2 ;;
      --k8s-version=*) k8s_version=${1#*=}; shift ;;
      --list) printf '%s\n' "${ALL_TOOLS[@]}"; exit 0 ;;
      -h|--help) usage 0 ;;
      -*) usage ;;
      *) names+=("$1"); shift ;;
    esac
  done
  ((${#names[@]})) || names=("${DEFAULT_TOOLS[@]}")
  local n
  for n in "${names[@]}"; do
    [[ " ${ALL_TOOLS[*]} " == *" ${n} "* ]] || die "unknown tool '${n}' (known: ${ALL_TOOLS[*]})"
  done

  if [[ -z "${k8s_version}" ]]; then
    k8s_version=$(mod_version "${TOOLS_DIR}" k8s.io/kubernetes)
  fi
  K8S_DIR=$(k8s_module_dir "${k8s_version}")

  if [[ -n "${print_mode}" ]]; then
    local p
    p=$(tool_path "${names[0]}")
    if [[ "${print_mode}" == --print-dir ]]; then dirname "${p}"; else printf '%s\n' "${p}"; fi
    exit 0
  fi

  mkdir -p "${CACHE}/tmp"
  # Two concurrent cold builds would each need ~3 GB and double the wall
  # time; the second caller is better off waiting and then finding a no-op.
  exec {lock_fd}>"${CACHE}/.build-tools.lock"
  if ! flock -n "${lock_fd}"; then
    log "another build-tools run holds ${CACHE}/.build-tools.lock; waiting"
    flock "${lock_fd}"
  fi

  local total_start=${SECONDS}
  # Group stale binaries by module, keeping first-seen module order.
  local -a group_dirs=()
  local -A group_names=() dirs_out=()
  local dir dest want
  local -A flags_cache=()
  for n in "${names[@]}"; do
    dir=$(tool_module "${n}")
    dest=$(tool_path "${n}")
    dirs_out[$(dirname "${dest}")]=1
    if [[ -z "${flags_cache[${dir}]+x}" ]]; then
      flags_cache[${dir}]=$(build_flags "${dir}")
    fi
    local -a flags
    mapfile -t flags <<<"${flags_cache[${dir}]}"
    local tflags
    tflags=$(tool_flags "${n}" "${flags[@]}")
    mapfile -t flags <<<"${tflags}"
    want=$(stamp_of "${n}" "${flags[@]}")
    if [[ -x "${dest}" && "$(cat "$(dirname "${dest}")/.${n}.stamp" 2>/dev/null)" == "${want}" ]]; then
      log "up to date: ${n} ($(basename "$(dirname "${dest}")"))"
      continue
    fi
    local key=${dir}
    if solo_build "${n}"; then key="${dir}#${n}"; fi
    if [[ -z "${group_names[${key}]+x}" ]]; then
      group_dirs+=("${key}")
      group_names[${key}]=""
    fi
    group_names[${key}]+=" ${n}"
  done

  local key
  for key in "${group_dirs[@]+"${group_dirs[@]}"}"; do
    # shellcheck disable=SC2086 # names are single words
    build_group "${key%%#*}" ${group_names[${key}]}
  done
  log "done in $((SECONDS - total_start))s; bin dir(s):"
  printf '%s\n' "${!dirs_out[@]}" | sort
}

main "$@"
