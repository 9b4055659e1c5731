#!/usr/bin/env bash
# Runs capn-apiserver standalone (no core kube-apiserver needed) with its
# embedded etcd under RUN_DIR, tells the user how to reach it once it is
# ready, and stays in the foreground until Ctrl-C.
set -o errexit -o nounset -o pipefail

BIN=${1:?usage: run-standalone.sh BIN RUN_DIR PORT}
RUN_DIR=${2:?}
PORT=${3:?}
mkdir -p "${RUN_DIR}"
KUBECONFIG_FILE="${RUN_DIR}/admin.kubeconfig"
rm -f "${KUBECONFIG_FILE}"

"${BIN}" --standalone \
  --bind-address 127.0.0.1 --secure-port "${PORT}" \
  --cert-dir "${RUN_DIR}/certs" \
  --admin-kubeconfig "${KUBECONFIG_FILE}" \
  --embedded-etcd-data-dir "${RUN_DIR}/etcd" \
  >"${RUN_DIR}/capn-apiserver.log" 2>&1 &
pid=$!
trap 'kill ${pid} 2>/dev/null; wait ${pid} 2>/dev/null || true' EXIT INT TERM

deadline=$((SECONDS + 60))
until curl -fsk "https://127.0.0.1:${PORT}/readyz" >/dev/null 2>&1; do
  if ! kill -0 "${pid}" 2>/dev/null; then
    tail -20 "${RUN_DIR}/capn-apiserver.log" >&2
    echo "capn-apiserver exited; full log: ${RUN_DIR}/capn-apiserver.log" >&2
    exit 1
  fi
  if ((SECONDS > deadline)); then
    echo "capn-apiserver was not ready within 60s; log: ${RUN_DIR}/capn-apiserver.log" >&2
    exit 1
  fi
  sleep 0.2
done

cat <<MSG
capn-apiserver is serving on https://127.0.0.1:${PORT} (standalone, embedded etcd in ${RUN_DIR}/etcd).
Log: ${RUN_DIR}/capn-apiserver.log

  export KUBECONFIG=${KUBECONFIG_FILE}
  kubectl create -f artifacts/examples/nestedcluster.yaml
  kubectl get nestedclusters -o wide

Press Ctrl-C to stop. Data survives restarts; 'make clean' removes it.
MSG
wait "${pid}"
