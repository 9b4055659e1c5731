#!/usr/bin/env bash
# Stops the devcluster started by hack/dev-up.sh: SIGTERM to its launcher,
# which tears everything down (processes, containers, routes, iptables
# chains, mounts, cgroups, files). Idempotent.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE_DIR=${STATE_DIR:-${ROOT}/_output/devcluster}
STOP_TIMEOUT=${STOP_TIMEOUT:-120}
PID_FILE=${STATE_DIR}/devcluster.pid
LOG=${STATE_DIR}/devcluster.log
# alive PID: running, not a zombie waiting to be reaped.
alive() { [[ -r /proc/$1/stat ]] && [[ $(cut -d' ' -f3 "/proc/$1/stat") != Z ]]; }

pid=$(cat "${PID_FILE}" 2>/dev/null || true)
if [[ -z ${pid} ]] || ! alive "${pid}"; then
  rm -f "${PID_FILE}" "${STATE_DIR}/ready"
  if compgen -G "${STATE_DIR}/run-*" >/dev/null && [[ -x ${STATE_DIR}/devcluster ]]; then
    # The launcher was killed (SIGKILL): Pdeathsig stopped its processes,
    # but its node's containers, mounts, bridges, chains and routes remain.
    echo "no devcluster running; removing what a killed one left behind"
    "${STATE_DIR}/devcluster" --reap --state-dir "${STATE_DIR}" >>"${LOG}" 2>&1 || {
      tail -20 "${LOG}" >&2
      exit 1
    }
    rm -f "${STATE_DIR}/admin.kubeconfig"
  fi
  echo "no devcluster running"
  exit 0
fi
# The recorded PID must still be our launcher, not a reused PID.
if [[ $(readlink "/proc/${pid}/exe" 2>/dev/null) != "${STATE_DIR}/devcluster" ]]; then
  echo "pid ${pid} in ${PID_FILE} is not the devcluster launcher; removing the stale pid file"
  rm -f "${PID_FILE}" "${STATE_DIR}/ready"
  exit 0
fi

begin=${SECONDS}
kill -TERM "${pid}"
deadline=$((SECONDS + STOP_TIMEOUT))
while alive "${pid}"; do
  if ((SECONDS > deadline)); then
    echo "devcluster (pid ${pid}) still running ${STOP_TIMEOUT}s after SIGTERM; see ${LOG}" >&2
    exit 1
  fi
  sleep 0.5
done
rm -f "${PID_FILE}" "${STATE_DIR}/ready"
if grep -q 'ERROR:' "${LOG}"; then
  grep 'ERROR:' "${LOG}" | tail -20 >&2
  echo "devcluster stopped in $((SECONDS - begin))s with teardown errors; see ${LOG}" >&2
  exit 1
fi
echo "devcluster stopped in $((SECONDS - begin))s ($(tail -1 "${LOG}" | sed 's/^[0-9:.]* //'))"
