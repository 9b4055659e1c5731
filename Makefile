# capn: nested Kubernetes control planes as a Kubernetes aggregated API.
# `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

OUT       ?= $(CURDIR)/_output
BIN       := $(OUT)/bin
RUN_DIR   ?= $(OUT)/run
PORT      ?= 8443
GO_TEST_FLAGS ?=
# How long `make fuzz` runs each fuzz target.
FUZZTIME  ?= 10m
# Pinned kubectl (v1.37.2) built from the Go module proxy; see hack/build-tools.sh.
KUBECTL    = $(shell hack/build-tools.sh --print-path kubectl)

.PHONY: help
help: ## Show this help.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build capn-apiserver, the kubectl-nested plugin, capn-syncer and the e2e capn-testserver into _output/bin (static: it also goes into an image).
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/capn-apiserver ./cmd/capn-apiserver
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/kubectl-nested ./cmd/kubectl-nested
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/capn-syncer ./cmd/capn-syncer
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/capn-testserver ./cmd/capn-testserver

.PHONY: install-plugin
install-plugin: build ## Install the kubectl-nested plugin into PREFIX/bin (default /usr/local/bin), so `kubectl nested` works.
	install -D -m 0755 $(BIN)/kubectl-nested "$${PREFIX:-/usr/local}/bin/kubectl-nested"

.PHONY: images
images: build ## Build container images (capn, pause, etcd, CoreDNS, metrics-server, the local cluster's storage provisioner and its busybox helper, and the tenant components of every supported version) into _output/images.tar.
	hack/build-images.sh

.PHONY: tools
tools: ## Build pinned kubectl, etcd, Kubernetes components, kube-router (the node's NetworkPolicy engine), kwok, CoreDNS and metrics-server into the version-keyed cache.
	hack/build-tools.sh kubectl etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kube-router kwok coredns metrics-server >/dev/null
	for v in $$(go run ./hack/versions); do hack/build-tools.sh --k8s-version $$v kube-apiserver kube-controller-manager kube-scheduler >/dev/null; done

.PHONY: clusterapi-tools
clusterapi-tools: ## Build Cluster API's core manager (capi-manager) and clusterctl, pinned in hack/tools/cluster-api, into the version-keyed cache.
	hack/build-tools.sh capi-manager clusterctl >/dev/null

.PHONY: conformance-build
conformance-build: ## Build the upstream e2e suite (e2e.test, ginkgo, agnhost) into the version-keyed cache and its agnhost, busybox and pause images into _output/conformance-images.tar (docs/conformance-build.md).
	hack/build-tools.sh e2e.test ginkgo agnhost >/dev/null
	OUT=$(OUT) hack/build-conformance-images.sh >/dev/null

# Binaries for the e2e tests and the devcluster, by the variables both read.
CLUSTER_ENV = KUBECTL=$(KUBECTL) \
	KUBE_APISERVER=$$(hack/build-tools.sh --print-path kube-apiserver) \
	KUBE_CONTROLLER_MANAGER=$$(hack/build-tools.sh --print-path kube-controller-manager) \
	KUBE_SCHEDULER=$$(hack/build-tools.sh --print-path kube-scheduler) \
	ETCD=$$(hack/build-tools.sh --print-path etcd) \
	KUBELET=$$(hack/build-tools.sh --print-path kubelet) \
	KUBE_PROXY=$$(hack/build-tools.sh --print-path kube-proxy) \
	KUBE_ROUTER=$$(hack/build-tools.sh --print-path kube-router) \
	CAPN_RELEASE_BINS=$$(dirname $$(hack/build-tools.sh --print-dir kube-apiserver)) \
	CAPN_IMAGES=$(OUT)/images.tar

.PHONY: deps
deps: ## Install the Debian packages the local cluster needs (containerd, runc, CNI plugins, iptables, ipset).
	hack/install-deps.sh

.PHONY: run
run: deps build images tools ## Start a local management cluster (control plane + real node, a default StorageClass) with capn deployed, in the background; `make down` stops it.
	$(CLUSTER_ENV) hack/dev-up.sh

.PHONY: down
down: ## Stop the cluster of `make run` and remove everything it created.
	hack/dev-down.sh

.PHONY: run-standalone
run-standalone: build ## Run capn-apiserver standalone with embedded etcd (Ctrl-C stops it).
	hack/run-standalone.sh $(BIN)/capn-apiserver $(RUN_DIR) $(PORT)

.PHONY: test
test: test-unit test-fuzz-smoke test-e2e bench-scale-smoke bench-api-smoke bench-density-smoke bench-wake-smoke ## Unit, integration (real embedded etcd), a 20 s run of each fuzz target, e2e (real binary + kubectl) tests, a 20-cluster bench-scale, a 20-op bench-api, a 2-tenant bench-density and a 1-wake bench-wake.

# The full fault matrix (issue 14); test-e2e runs its seeded smoke
# (8 clusters, 4 kills). FAULTS_SEED replays a run.
FAULTS_N ?= 50
FAULTS_KILLS ?= 20
FAULTS_SEED ?= 14

.PHONY: test-faults
test-faults: deps build tools ## The fault matrix on kwok: capn-apiserver SIGKILLed at FAULTS_KILLS seeded points and the management kube-apiserver restarted once while FAULTS_N NestedClusters are created, scaled, upgraded and deleted; then none lost, orphaned or duplicated.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) \
	KWOK=$$(hack/build-tools.sh --print-path kwok) \
	KWOK_STAGES=$$(cd hack/tools/kwok && GOWORK=off go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage \
	CAPN_FAULTS_N=$(FAULTS_N) CAPN_FAULTS_KILLS=$(FAULTS_KILLS) CAPN_FAULTS_SEED=$(FAULTS_SEED) \
		go test -tags e2e -count=1 -timeout 60m -v -run '^TestFaultMatrix$$' ./test/e2e/

# Cluster API's real core manager and clusterctl on a control-plane-only
# management cluster (test/framework/clusterapi.go). Not part of test-e2e:
# it needs the binaries clusterapi-tools builds, and is skipped without them.
CLUSTERAPI_ENV = CAPI_MANAGER=$$(hack/build-tools.sh --print-path capi-manager) \
	CLUSTERCTL=$$(hack/build-tools.sh --print-path clusterctl) \
	CAPI_MODULE_DIR=$$(cd hack/tools/cluster-api && GOWORK=off go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)

.PHONY: test-clusterapi
test-clusterapi: tools clusterapi-tools ## Cluster API's core manager and clusterctl against a management cluster: its CRDs, RBAC and webhooks installed, a Cluster on a stand-in infrastructure provider reconciled to Provisioned, described by clusterctl, a ClusterClass validated and reconciled.
	$(CLUSTER_ENV) $(CLUSTERAPI_ENV) \
		go test $(GO_TEST_FLAGS) -tags e2e -count=1 -timeout 20m -v -run '^TestClusterAPIManagerOnKubeAPIServer$$' ./test/e2e/

# The HA e2e (issue 14); test-e2e runs it with 1 round.
HA_ROUNDS ?= 3

.PHONY: test-ha
test-ha: deps build tools images ## capn from the HA overlay (2 replicas, 3-member TLS etcd) on a real node: HA_ROUNDS rounds of evicting the provisioning leader's pod and the etcd leader's pod (PDBs refusing a second) under a GET/LIST/UPDATE loop through the aggregator; 0 failed reads, every write retried to success.
	$(CLUSTER_ENV) CAPN_HA_ROUNDS=$(HA_ROUNDS) \
		go test -tags e2e -count=1 -timeout 30m -v -run '^TestCapnHAOnNode$$' ./test/e2e/

.PHONY: test-unit
test-unit: ## Unit tests and storage tests on a real embedded etcd.
	go test $(GO_TEST_FLAGS) ./...

.PHONY: test-e2e
test-e2e: deps build tools clusterapi-tools images ## Real capn-apiserver + pinned kubectl: standalone, behind a real aggregator, as a pod on a real kubelet node, and as a Cluster API provider beside the real Cluster API manager.
	CAPN_APISERVER=$(BIN)/capn-apiserver KUBECTL_NESTED=$(BIN)/kubectl-nested $(CLUSTER_ENV) $(CLUSTERAPI_ENV) \
	KWOK=$$(hack/build-tools.sh --print-path kwok) \
	KWOK_STAGES=$$(cd hack/tools/kwok && GOWORK=off go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage \
		go test $(GO_TEST_FLAGS) -tags e2e -count=1 -timeout 45m ./test/e2e/...

.PHONY: fuzz
fuzz: ## Run every Go fuzz target (func Fuzz* under pkg/) for FUZZTIME each (default 10m); crashers land in the package's testdata/fuzz.
	@failed=; \
	for f in $$(grep -rl --include='*_test.go' '^func Fuzz' pkg | sort); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$t ./$$(dirname $$f) ($(FUZZTIME))"; \
			go test $(GO_TEST_FLAGS) -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f) || failed="$$failed $$t"; \
		done; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz targets failed:$$failed"; exit 1; fi

.PHONY: test-fuzz-smoke
test-fuzz-smoke: ## Every fuzz target for 20s: a quick check that none crashes on its corpus and the first mutations.
	$(MAKE) fuzz FUZZTIME=20s

.PHONY: bench
bench: ## Benchmarks (validation, conversion, storage round trips).
	go test -run '^$$' -bench . -benchmem ./pkg/...

.PHONY: bench-e2e
bench-e2e: build tools ## Startup time and RSS of the real capn-apiserver, against etcd's as a baseline.
	CAPN_APISERVER=$(BIN)/capn-apiserver ETCD=$$(hack/build-tools.sh --print-path etcd) \
		go test -tags e2e -run '^$$' -bench Startup -benchtime 5x ./test/e2e/

SCALE_N ?= 100,300,1000
SCALE_STEADY ?= 10m
SCALE_OUT ?= $(CURDIR)/docs/benchmarks
READY_RUNS ?= 5
READY_OUT ?= $(OUT)/bench-ready
# The template revision bench-ready measures first, as its baseline (0: none).
READY_BASELINE_REVISION ?= 1
# Also run each N with this --management-qps, as a baseline (empty: none).
SCALE_BASELINE_QPS ?=
# Also run each N with this capn-apiserver binary first, as a baseline (empty: none).
SCALE_BASELINE_BIN ?=

.PHONY: bench-scale
bench-scale: build tools ## Provisioner at scale: SCALE_N NestedClusters on a kwok management cluster, then SCALE_STEADY of steady state; CSVs and plots into SCALE_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) \
	KWOK=$$(hack/build-tools.sh --print-path kwok) \
	KWOK_STAGES=$$(cd hack/tools/kwok && GOWORK=off go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage \
	CAPN_BENCH_SCALE_N=$(SCALE_N) CAPN_BENCH_STEADY=$(SCALE_STEADY) CAPN_BENCH_OUT=$(SCALE_OUT) CAPN_BENCH_BASELINE_QPS=$(SCALE_BASELINE_QPS) \
	CAPN_BENCH_BASELINE_APISERVER=$(SCALE_BASELINE_BIN) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 4h -v ./test/e2e/
	cd hack/tools/benchplot && GOWORK=off go run . -in $(SCALE_OUT) -out $(SCALE_OUT)

.PHONY: bench-ready
bench-ready: build tools images ## Create→Ready of one NestedCluster at a time on an idle real node, by phase: READY_RUNS runs at READY_BASELINE_REVISION, then as many at the latest template revision; CSV into READY_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) CAPN_BENCH_READY_RUNS=$(READY_RUNS) CAPN_BENCH_OUT=$(READY_OUT) \
		CAPN_BENCH_READY_BASELINE_REVISION=$(READY_BASELINE_REVISION) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkReady$$' -benchtime 1x -timeout 1h -v ./test/e2e/

.PHONY: bench-scale-smoke
bench-scale-smoke: ## bench-scale with 20 clusters and 30 s of steady state, output under _output (what CI runs).
	$(MAKE) bench-scale SCALE_N=20 SCALE_STEADY=30s SCALE_OUT=$(OUT)/bench-scale

API_N ?= 200
API_OUT ?= $(OUT)/bench-api
# Where capn stores: the management etcd (shared, what the CRD has) and/or its embedded etcd.
API_ETCD ?= shared,embedded

.PHONY: bench-api
bench-api: build tools ## nestedclusters through the aggregator against a CRD with the same schema: create/get/list/update/watch p50/p99 and their ratio, API_N of each; api.csv into API_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) \
	CAPN_BENCH_API_N=$(API_N) CAPN_BENCH_API_ETCD=$(API_ETCD) CAPN_BENCH_OUT=$(API_OUT) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkAPI$$' -benchtime 1x -timeout 1h -v ./test/e2e/

.PHONY: bench-api-smoke
bench-api-smoke: ## bench-api with 20 of each op on the management etcd, output under _output/bench-api-smoke (what CI runs).
	$(MAKE) bench-api API_N=20 API_ETCD=shared API_OUT=$(OUT)/bench-api-smoke

DATAPLANE_RUNS ?= 3
DATAPLANE_REPLICAS ?= 10
DATAPLANE_PODS ?= 50
DATAPLANE_STEADY ?= 2m
DATAPLANE_OUT ?= $(OUT)/bench-dataplane

.PHONY: bench-dataplane
bench-dataplane: build tools images ## Shared data plane on a real node: DATAPLANE_RUNS x Deployment(DATAPLANE_REPLICAS) tenant vs direct, status propagation p50/p99, capn-syncer RSS and management requests idle and with DATAPLANE_PODS pods (DATAPLANE_STEADY each); CSVs into DATAPLANE_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) CAPN_BENCH_DATAPLANE=1 \
	CAPN_BENCH_DATAPLANE_RUNS=$(DATAPLANE_RUNS) CAPN_BENCH_DATAPLANE_REPLICAS=$(DATAPLANE_REPLICAS) \
	CAPN_BENCH_DATAPLANE_PODS=$(DATAPLANE_PODS) CAPN_BENCH_DATAPLANE_STEADY=$(DATAPLANE_STEADY) CAPN_BENCH_OUT=$(DATAPLANE_OUT) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkDataPlane$$' -benchtime 1x -timeout 1h -v ./test/e2e/

.PHONY: bench-dataplane-smoke
bench-dataplane-smoke: ## bench-dataplane with 1 run of Deployment(3), 10 pods and 20 s windows, output under _output/bench-dataplane-smoke (small enough for CI; not in `make test`).
	$(MAKE) bench-dataplane DATAPLANE_RUNS=1 DATAPLANE_REPLICAS=3 DATAPLANE_PODS=10 DATAPLANE_STEADY=20s DATAPLANE_OUT=$(OUT)/bench-dataplane-smoke

STORAGE_RUNS ?= 3
STORAGE_REPLICAS ?= 10
STORAGE_OUT ?= $(OUT)/bench-storage

.PHONY: bench-storage
bench-storage: build tools images ## Tenant storage on a real node with the local provisioner: STORAGE_RUNS x StatefulSet(STORAGE_REPLICAS) with a claim each, create -> all Ready, tenant vs direct on the management cluster in one run; storage.csv into STORAGE_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) CAPN_BENCH_STORAGE=1 \
	CAPN_BENCH_STORAGE_RUNS=$(STORAGE_RUNS) CAPN_BENCH_STORAGE_REPLICAS=$(STORAGE_REPLICAS) CAPN_BENCH_OUT=$(STORAGE_OUT) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkStorage$$' -benchtime 1x -timeout 1h -v ./test/e2e/

LEAN_OUT ?= $(OUT)/bench-lean
# How long every tenant idles before RSS and CPU are read.
LEAN_SETTLE ?= 2m

.PHONY: bench-lean
bench-lean: build tools images ## Idle cost of one tenant per setting on a real node: the revision before the lean defaults, each candidate setting on it, and the lean revision; RSS and CPU per component, ratios to the baseline; lean.csv into LEAN_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) CAPN_BENCH_OUT=$(LEAN_OUT) CAPN_BENCH_LEAN_SETTLE=$(LEAN_SETTLE) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkLean$$' -benchtime 1x -timeout 1h -v ./test/e2e/

METRICS_OUT ?= $(OUT)/bench-metrics
METRICS_SETTLE ?= 90s
METRICS_PODS ?= 50
.PHONY: bench-metrics
bench-metrics: build tools images ## The metrics addon's cost on a real node: capn-syncer's RSS and CPU with the addon on and off, idle and with METRICS_PODS pods, and metrics-server's own, over METRICS_SETTLE windows in one run; metrics.csv into METRICS_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) CAPN_BENCH_OUT=$(METRICS_OUT) CAPN_BENCH_METRICS_SETTLE=$(METRICS_SETTLE) CAPN_BENCH_METRICS_PODS=$(METRICS_PODS) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkMetrics$$' -benchtime 1x -timeout 1h -v ./test/e2e/

DENSITY_OUT ?= $(OUT)/bench-density
# Stop each revision's packing at this many tenants (0: until the node is full).
DENSITY_MAX ?= 0
DENSITY_SETTLE ?= 1m

.PHONY: bench-density
bench-density: build tools images ## Tenants per real node, the revision before the lean defaults against the latest in one run: create until one is not Ready in 2 minutes or memory reaches 80% (or DENSITY_MAX); RSS and idle CPU per tenant; density.csv into DENSITY_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) CAPN_BENCH_OUT=$(DENSITY_OUT) CAPN_BENCH_DENSITY_MAX=$(DENSITY_MAX) \
		CAPN_BENCH_DENSITY_SETTLE=$(DENSITY_SETTLE) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkDensity$$' -benchtime 1x -timeout 4h -v ./test/e2e/

.PHONY: bench-density-smoke
bench-density-smoke: ## bench-density with 2 tenants per revision and a 20 s window (what CI runs, in `make test`).
	$(MAKE) bench-density DENSITY_MAX=2 DENSITY_SETTLE=20s DENSITY_OUT=$(OUT)/bench-density-smoke

WAKE_OUT ?= $(OUT)/bench-wake
WAKE_RUNS ?= 10
# 1: also measure a tenant's cost awake and asleep per etcd placement (sleep-cost.csv).
WAKE_COST ?= 1

.PHONY: bench-wake
bench-wake: build tools images ## Wake on request on the real node: request->first byte for a tenant asleep for inactivity (the waker holds the connection) against the same request awake, WAKE_RUNS times (wake.csv), then a tenant's cost awake and asleep with its etcd on EmptyDir, a PVC and a pool (sleep-cost.csv; WAKE_COST=0 skips it), into WAKE_OUT.
	CAPN_APISERVER=$(BIN)/capn-apiserver $(CLUSTER_ENV) CAPN_BENCH_OUT=$(WAKE_OUT) CAPN_BENCH_WAKE_RUNS=$(WAKE_RUNS) CAPN_BENCH_WAKE_COST=$(WAKE_COST) \
		go test -tags e2e -run '^$$' -bench '^BenchmarkWake$$' -benchtime 1x -timeout 1h -v ./test/e2e/

.PHONY: bench-wake-smoke
bench-wake-smoke: ## bench-wake with one wake (what CI runs, in `make test`).
	$(MAKE) bench-wake WAKE_RUNS=1 WAKE_COST=0 WAKE_OUT=$(OUT)/bench-wake-smoke

.PHONY: update
update: ## Regenerate code in pkg/generated and pkg/apis.
	hack/update-codegen.sh

.PHONY: verify
verify: ## Codegen drift, go mod tidy drift, go vet, gofmt, CoreDNS plugin order vs upstream.
	hack/verify-codegen.sh
	go mod tidy -diff
	cd hack/tools && GOWORK=off go mod tidy -diff
	cd hack/tools/k8s-1.36 && GOWORK=off go mod tidy -diff
	cd hack/tools/kwok && GOWORK=off go mod tidy -diff
	cd hack/tools/kube-router && GOWORK=off go mod tidy -diff
	cd hack/tools/local-path-provisioner && GOWORK=off go mod tidy -diff
	cd hack/tools/metrics-server && GOWORK=off go mod tidy -diff
	cd hack/tools/cluster-api && GOWORK=off go mod tidy -diff
# -trimpath and CGO_ENABLED=0 as hack/build-tools.sh builds it, so vet and
# the test reuse its compiled packages instead of compiling CoreDNS's
# dependencies again. The test checks the plugin order against upstream.
	cd hack/tools/coredns && GOWORK=off go mod tidy -diff && \
		GOWORK=off CGO_ENABLED=0 go vet -trimpath ./... && GOWORK=off CGO_ENABLED=0 go test -trimpath ./...
	cd hack/tools/images && GOWORK=off go mod tidy -diff && GOWORK=off go vet ./... && GOWORK=off go test ./...
	cd hack/tools/conformance && GOWORK=off go mod tidy -diff && GOWORK=off CGO_ENABLED=0 go vet -trimpath ./...
	cd hack/tools/benchplot && GOWORK=off go mod tidy -diff && GOWORK=off go vet ./...
	go vet ./...
	go vet -tags e2e ./test/...
	@out=$$(gofmt -l $$(git ls-files '*.go') $$(git ls-files --others --exclude-standard '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: clean
clean: ## Remove build output (not the tool cache).
	rm -rf $(OUT)
