#!/usr/bin/env bash
# Starts a local management cluster with a default StorageClass
# (docs/storage.md) and capn deployed (hack/devcluster,
# detached), waits until it is ready and tells how to use it. It runs until
# hack/dev-down.sh. Binaries come from the same variables as `make test-e2e`:
# KUBECTL KUBE_APISERVER KUBE_CONTROLLER_MANAGER KUBE_SCHEDULER ETCD KUBELET
# KUBE_PROXY KUBE_ROUTER CAPN_IMAGES.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE_DIR=${STATE_DIR:-${ROOT}/_output/devcluster}
START_TIMEOUT=${START_TIMEOUT:-300}
mkdir -p "${STATE_DIR}"
STATE_DIR=$(cd "${STATE_DIR}" && pwd)
PID_FILE=${STATE_DIR}/devcluster.pid
LOG=${STATE_DIR}/devcluster.log
# alive PID: running, not a zombie waiting to be reaped.
alive() { [[ -r /proc/$1/stat ]] && [[ $(cut -d' ' -f3 "/proc/$1/stat") != Z ]]; }

if [[ -f ${PID_FILE} ]] && alive "$(cat "${PID_FILE}")"; then
  echo "a devcluster is already running (pid $(cat "${PID_FILE}"), log ${LOG}); stop it with hack/dev-down.sh (make down)" >&2
  exit 1
fi
rm -f "${PID_FILE}" "${STATE_DIR}/ready"

(cd "${ROOT}" && go build -o "${STATE_DIR}/devcluster" ./hack/devcluster)

begin=${SECONDS}
cd "${ROOT}"
setsid nohup "${STATE_DIR}/devcluster" --state-dir "${STATE_DIR}" --repo-root "${ROOT}" \
  </dev/null >"${LOG}" 2>&1 &
pid=$!
echo "${pid}" >"${PID_FILE}"
echo "devcluster starting (pid ${pid}, log ${LOG})"

deadline=$((SECONDS + START_TIMEOUT))
until [[ -f ${STATE_DIR}/ready ]]; do
  if ! alive "${pid}"; then
    tail -40 "${LOG}" >&2
    echo "devcluster exited before it was ready; full log: ${LOG}" >&2
    rm -f "${PID_FILE}"
    exit 1
  fi
  if ((SECONDS > deadline)); then
    tail -40 "${LOG}" >&2
    echo "devcluster not ready after ${START_TIMEOUT}s; stopping it (full log: ${LOG})" >&2
    "${ROOT}/hack/dev-down.sh" >&2 || true
    exit 1
  fi
  sleep 0.5
done

cat <<MSG
devcluster ready in $((SECONDS - begin))s: control plane + node $(sed -n 's/^node=//p' "${STATE_DIR}/ready") + default StorageClass local-path + capn-apiserver (pid ${pid}).

  export KUBECONFIG=${STATE_DIR}/admin.kubeconfig
  kubectl create -f artifacts/examples/nestedcluster.yaml
  kubectl wait nc/demo --for=condition=Ready --timeout=5m
  PATH=\$PWD/_output/bin:\$PATH kubectl nested kubeconfig demo > demo.kubeconfig
  kubectl --kubeconfig demo.kubeconfig get --raw /readyz

kubectl on PATH may be older than the cluster; the pinned one is
  \$(hack/build-tools.sh --print-path kubectl)
Logs: ${LOG} and $(sed -n 's/^rundir=//p' "${STATE_DIR}/ready"). Stop it with: make down
MSG
