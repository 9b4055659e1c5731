#!/usr/bin/env bash
# Runs upstream e2e specs (e2e.test, built by `make conformance-build`)
# against a Shared tenant of the local management cluster that `make run`
# left running, and writes e2e.log, junit.xml and a results table
# (hack/junit-table: a selected spec that was skipped counts as failed)
# into OUT.
#
# It applies the provider side a run needs first: the suite's images
# imported on the node, and listed in capn-apiserver's
# --tenant-cached-images (no registry is reachable: without the listing,
# --tenant-pull-always makes every spec's pod try to pull). It then
# creates the NestedCluster NAME (Shared; its workload quota raised,
# within --tenant-workload-quota-max) unless it exists.
#
#   FOCUS='\[Feature:NetworkPolicy\]' SKIP='SCTP' PROCS=2 hack/conformance.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "${ROOT}"

FOCUS=${FOCUS:-'\[Conformance\]'}
SKIP=${SKIP:-}
PROCS=${PROCS:-2}
NAME=${NAME:-conformance}
OUT=${OUT:-${ROOT}/_output/conformance/${NAME}}
STATE=${STATE:-${ROOT}/_output/devcluster}
export KUBECONFIG=${STATE}/admin.kubeconfig

die() { echo "conformance: $*" >&2; exit 1; }
[[ -f "${STATE}/ready" ]] || die "no local management cluster: run \`make run\` first"
kubectl=$(hack/build-tools.sh --print-path kubectl)
e2e=$(hack/build-tools.sh --print-path e2e.test)
ginkgo=$(hack/build-tools.sh --print-path ginkgo)
[[ -x "${e2e}" && -x "${ginkgo}" && -f _output/conformance-images.tar ]] || die "run \`make conformance-build\` first"
mkdir -p "${OUT}"

# The node's containerd: the one `make run` started.
sock=$(find "${STATE}" -name containerd.sock -print -quit)
[[ -S "${sock}" ]] || die "no containerd socket under ${STATE}"
ctr --address "${sock}" --namespace k8s.io images import _output/conformance-images.tar >/dev/null

# The provider's side: tenant pods may run the suite's images from the
# node's cache.
images=$(cd hack/tools/conformance && GOWORK=off go run ./imagenames agnhost busybox pause | paste -sd, -)
cached="--tenant-cached-images=capn.dev/capn-testserver:dev,${images}"
args=$("${kubectl}" -n capn-system get deployment capn-apiserver -o jsonpath='{.spec.template.spec.containers[0].args}')
if [[ "${args}" != *"${cached}"* ]]; then
  "${kubectl}" -n capn-system patch deployment capn-apiserver --type=json \
    -p "[{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"${cached}\"}]"
  "${kubectl}" -n capn-system rollout status deployment capn-apiserver --timeout=5m
  "${kubectl}" wait --for=condition=Available apiservice/v1alpha1.capn.dev --timeout=2m
fi

if ! "${kubectl}" get nc "${NAME}" >/dev/null 2>&1; then
  "${kubectl}" create -f - <<YAML
apiVersion: capn.dev/v1alpha1
kind: NestedCluster
metadata: {name: ${NAME}}
spec:
  dataPlane:
    mode: Shared
    quota: {pods: "200", requests.cpu: "16", limits.cpu: "128", requests.memory: 64Gi, limits.memory: 256Gi}
YAML
fi
"${kubectl}" wait "nc/${NAME}" --for=condition=Ready --timeout=10m
PATH=${ROOT}/_output/bin:${PATH} "${kubectl}" nested kubeconfig "${NAME}" --expiration=4h >"${OUT}/tenant.kubeconfig"
# The suite starts by checking that every node is Ready and schedulable:
# the virtual Node follows the cluster's Ready by a moment.
# (`kubectl wait` fails at once while there is no Node to wait for.)
for _ in $(seq 150); do
  "${kubectl}" --kubeconfig "${OUT}/tenant.kubeconfig" get nodes -o name 2>/dev/null | grep -q . && break
  sleep 2
done
"${kubectl}" --kubeconfig "${OUT}/tenant.kubeconfig" wait node --all --for=condition=Ready --timeout=5m

# The selection, from a dry run: a selected spec the run never reports
# (a suite-level failure, a timeout) counts as failed too.
"${e2e}" --ginkgo.dry-run --ginkgo.focus="${FOCUS}" ${SKIP:+--ginkgo.skip="${SKIP}"} \
  --ginkgo.junit-report="${OUT}/selected.xml" >/dev/null 2>&1 || true

start=${SECONDS}
set +e
"${ginkgo}" --procs="${PROCS}" --focus="${FOCUS}" ${SKIP:+--skip="${SKIP}"} --timeout=6h \
  --output-dir="${OUT}" --junit-report=junit.xml "${e2e}" -- \
  --kubeconfig="${OUT}/tenant.kubeconfig" --provider=skeleton --report-dir="${OUT}" 2>&1 | tee "${OUT}/e2e.log"
status=${PIPESTATUS[0]}
set -e
echo "conformance: ${NAME}: ran for $((SECONDS - start))s" | tee -a "${OUT}/e2e.log"
go run ./hack/junit-table -focus "${FOCUS}" ${SKIP:+-skip "${SKIP}"} -selected "${OUT}/selected.xml" "${OUT}/junit.xml" | tee "${OUT}/results.md"
exit "${status}"
