# loam's two commands: `make demo` runs the demo operator against an
# in-process API server, and `make test` runs every check and every test of
# every module in the repository. Go 1.27 comes from the module proxy on a
# machine whose own Go is older.
export GOTOOLCHAIN := go1.27.3
# -trimpath keeps the absolute directory of the repository's own packages
# out of their build cache keys: without it a fresh clone, or a second
# worktree, compiles every package of every module again (go build
# hashes the package's directory into its action ID), warm cache or not.
export GOFLAGS := -buildvcs=false -trimpath

# gofmt of the Go 1.27 toolchain: an older gofmt rejects generic methods.
GOFMT = $(shell go env GOROOT)/bin/gofmt

GOLANGCI_LINT_VERSION := v2.15.0
TOOLS := $(CURDIR)/.tools
GOLANGCI_LINT := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)

# Every module of the repository. The library first: the others build on it.
MODULES := . kubetest examples benchmarks examples/cloudtoken

# The library's tests run with the race detector. The kubetest module's
# test binaries link a whole API server and etcd; their race build costs
# ~8 minutes cold on two cores, so they run without it (see docs/testing.md).
# Test binaries are linked without DWARF (-ldflags=-w): a panic's stack
# trace doesn't need it, and each kubetest binary links in about 30 %
# less time. A debugger does: build one with `go test -c` to debug it.
# go test's own vet is off (-vet=off, here, in KUBETEST_TESTFLAGS and in
# kubetest-build): `make lint`'s govet runs every analyzer go vet runs
# over every package of every module, tests included, and go test's
# vet, a subset of them, type-checks every package the tests import, the
# API server's and the standard library's too, to compute its facts, once
# for the race build and once for the other (its cache key is the
# package's compile), all of it to check again what lint checks.
TESTFLAGS ?= -race -count=1 -ldflags=-w -vet=off
# The cluster tests mostly wait: for an API server, a Lease, an operator
# to settle (the explorer's package used 30 s of CPU in a 169 s run). So
# four packages run at once (-p 4), and a package's parallel tests, the
# explorer's searches among them, eight at a time.
KUBETEST_TESTFLAGS ?= -count=1 -timeout 20m -ldflags=-w -vet=off -p 4 -parallel 8

.PHONY: versions-check ci-selftest scale shards chaos soak explore compare compare-large fuzz demo image webhook-certs test tidy-check fmt-check vet lint lint-selftest benchmarks-lint-selftest unit kubetest-test kubetest-build kubetest-run examples-test cloudtoken-test benchmarks-test tools bench

# The demo: a Kubernetes API server in-process, the Memcached operator
# against it, and a failure-injection experiment; about 20s once built, and
# a few minutes for the first build. ARGS=--keep leaves the cluster up.
demo:
	cd examples && go run ./cmd/demo $(ARGS)

# The example operators' images, with no Docker daemon and no registry: a
# static Linux binary each, for linux/amd64 and linux/arm64, on a base with
# what distroless/static has (CA certificates, /etc/passwd, /tmp), run as
# user 65532, written by examples/cmd/image as an OCI image layout of both
# architectures (bin/memcached-operator.oci, bin/databases-controller.oci)
# and a docker save tarball of this machine's (bin/memcached-operator.tar,
# bin/databases-controller.tar), which docker load and kind load
# image-archive read (README.md, "Images"). IMAGE_SOURCE, IMAGE_REVISION and
# IMAGE_VERSION are the images' OCI labels. go build's cache makes a second
# run relink only what changed.
IMAGE_ARCHS := amd64 arm64
IMAGE_SOURCE ?= https://github.com/loam-dev/loam
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_VERSION ?= dev
IMAGE_LABELS = -source '$(IMAGE_SOURCE)' -revision '$(IMAGE_REVISION)' -version '$(IMAGE_VERSION)'
image:
	@mkdir -p bin
	for arch in $(IMAGE_ARCHS); do \
		(cd examples && GOOS=linux GOARCH=$$arch CGO_ENABLED=0 go build -trimpath -ldflags=-s -o ../bin/linux_$$arch/memcached-operator ./memcached/cmd/memcached) || exit 1; \
		(cd examples && GOOS=linux GOARCH=$$arch CGO_ENABLED=0 go build -trimpath -ldflags=-s -o ../bin/linux_$$arch/databases-controller ./databases/cmd/databases) || exit 1; \
	done
	cd examples && go build -o ../bin/image ./cmd/image
	cd examples && ../bin/image $(foreach a,$(IMAGE_ARCHS),-binary ../bin/linux_$(a)/memcached-operator) -tag memcached-operator:dev -out ../bin/memcached-operator.tar -oci ../bin/memcached-operator.oci $(IMAGE_LABELS)
	cd examples && ../bin/image $(foreach a,$(IMAGE_ARCHS),-binary ../bin/linux_$(a)/databases-controller) -tag databases-controller:dev -out ../bin/databases-controller.tar -oci ../bin/databases-controller.oci $(IMAGE_LABELS)

# The Memcached operator's deploy/ for a cluster without cert-manager, such
# as kind: examples/cmd/webhookcerts issues a CA and the webhooks' serving
# certificate, and writes bin/memcached-deploy-kind, a kustomization of
# examples/memcached/deploy with the certificate's Secret and every
# caBundle filled in. Then: kubectl apply -k bin/memcached-deploy-kind.
# With cert-manager, apply examples/memcached/deploy-cert-manager instead.
webhook-certs:
	cd examples && go run ./cmd/webhookcerts -base memcached/deploy -out ../bin/memcached-deploy-kind

# `make test`'s stages, in two lanes that run at the same time. The
# kubetest module's tests hold Leases of a few seconds (the chaos suite's
# 4 s, 2 s, 0.5 s): beside the race-detected unit tests and the linters on
# two cores, API servers answered renewals too late and replicas lost
# their Leases (CI failed so on 8742843, and two runs here). So they run
# last in the lane that computes, once the computing is done (kubetest-run,
# after:kubetest-build waiting for their binaries); meanwhile the other
# lane links their test binaries (kubetest-build) and runs
# the examples' and benchmarks' modules, whose Leases are Kubernetes'
# own 15 s. The fuzz targets' kept corpora run as ordinary tests in
# `unit` and the modules' stages; the fuzzing itself (`make fuzz`) is a
# long target, as are chaos, soak, scale and explore. `go vet` is not a
# stage: golangci-lint's govet runs every analyzer go vet runs
# (.golangci.yml). .ci/stages prints each stage's wall time and the
# slowest packages at the end, so every change to the suite is judged by
# numbers.
TEST_LANE_COMPUTE := tidy-check versions-check fmt-check ci-selftest unit lint lint-selftest benchmarks-lint-selftest after:kubetest-build kubetest-run
TEST_LANE_CLUSTERS := kubetest-build examples-test benchmarks-test cloudtoken-test

test:
	@.ci/stages $(TEST_LANE_COMPUTE) :: $(TEST_LANE_CLUSTERS)

# The self-tests of .ci's scripts (.ci/stages, .ci/testbin), against
# tiny fake modules, binaries and Makefiles: failures, signals, timeouts,
# hangs, name collisions, spaces in paths.
ci-selftest:
	@.ci/test/run

fmt-check:
	@out="$$($(GOFMT) -l $$(git ls-files '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Each module's go.mod and go.sum must be exactly what `go mod tidy` writes:
# a module that requires the library through its replace needs the
# library's requirements, so a change to the root's go.mod is tidied in
# every module in the same commit.
tidy-check:
	@for m in $(MODULES); do (cd $$m && go mod tidy -diff >/dev/null) || { echo "go.mod of $$m is not tidy: run (cd $$m && go mod tidy)"; exit 1; }; done

# Every module builds the same version of each module it shares with
# another: a second version of grpc, say, compiles every package above it
# again (the API server, in examples-test) and lint would check code
# against a version its tests don't build. Raise the lower requirement:
# (cd MODULE && go get PATH@VERSION && go mod tidy), then tidy the others.
VERSIONS_FORMAT := {{with .Module}}{{if not .Main}}{{.Path}} {{with .Replace}}{{if .Version}}{{.Path}}@{{.Version}}{{else}}local{{end}}{{else}}{{.Path}}@{{.Version}}{{end}}{{end}}{{end}}
versions-check:
	@for m in $(MODULES); do (cd $$m && go list -deps -test -f '$(VERSIONS_FORMAT)' ./... | sed "/^$$/d; /local$$/d; s|$$| $$m|") || exit 1; done | sort -u | \
	awk '{ v[$$1] = v[$$1] (v[$$1] == "" ? "" : ", ") $$2 " (" $$3 ")"; if (!(($$1, $$2) in seen)) { seen[$$1, $$2] = 1; n[$$1]++ } } \
		END { bad = 0; for (p in n) if (n[p] > 1) { print "versions-check: the modules build " p " at different versions: " v[p] | "sort"; bad = 1 }; close("sort"); exit bad }'

vet:
	@for m in $(MODULES); do echo "go vet ($$m)"; (cd $$m && go vet ./...) || exit 1; done

# golangci-lint analyses every module in one run, as the modules of one
# Go workspace (bin/lint/go.work, written here and used by this run
# only, so go build and go test never see it): a dependency is type-checked
# and analysed once for its facts (printf wrappers, deprecations,
# staticcheck's), not once per module. golangci-lint salts its cache with
# the go.mod of the directory it runs in, so five runs, one per module,
# shared nothing and analysed the API server four times on a cold cache.
# versions-check keeps the workspace's versions each module's own.
LINT_WORK := $(CURDIR)/bin/lint/go.work
LINT_PATTERNS := ./... $(foreach m,$(filter-out .,$(MODULES)),./$(m)/...)
lint: $(GOLANGCI_LINT)
	@rm -f $(LINT_WORK) && mkdir -p $(dir $(LINT_WORK))
	@cd $(dir $(LINT_WORK)) && GOWORK=off go work init $(foreach m,$(MODULES),$(abspath $(m)))
	GOWORK=$(LINT_WORK) $(GOLANGCI_LINT) run --allow-parallel-runners --config $(CURDIR)/.golangci.yml $(LINT_PATTERNS)

# The lint rules must catch each forbidden call in internal/lintselftest:
# every line marked "want:" there has to be reported. Only forbidigo runs:
# the others' analyzers that compute facts would analyse every dependency
# again under this build tag (another cache salt), for nothing checked here.
LINT_SELFTEST := internal/lintselftest/forbidden.go
lint-selftest: $(GOLANGCI_LINT)
	@out="$$($(GOLANGCI_LINT) run --allow-parallel-runners --config $(CURDIR)/.golangci.yml --build-tags lintselftest --enable-only forbidigo ./internal/lintselftest/ 2>&1)"; \
	missing=0; \
	for n in $$(grep -n 'want:' $(LINT_SELFTEST) | cut -d: -f1); do \
		if ! printf '%s\n' "$$out" | grep -q "forbidden.go:$$n:.*(forbidigo)"; then \
			echo "lint-selftest: line $$n of $(LINT_SELFTEST) was not reported:"; sed -n "$${n}p" $(LINT_SELFTEST); missing=1; \
		fi; \
	done; \
	[ $$missing = 0 ] && echo "lint-selftest: every forbidden call was reported"

# The benchmarks module may import controller-runtime in its crcontroller
# package only: every import marked "want:" in its lint self-test, another
# package of the same module, has to be reported. Only depguard runs, as
# only forbidigo does in lint-selftest.
BENCH_LINT_SELFTEST := benchmarks/internal/lintselftest/forbidden.go
benchmarks-lint-selftest: $(GOLANGCI_LINT)
	@out="$$(cd benchmarks && $(GOLANGCI_LINT) run --allow-parallel-runners --config $(CURDIR)/.golangci.yml --build-tags lintselftest --enable-only depguard ./internal/lintselftest/ 2>&1)"; \
	missing=0; \
	for n in $$(grep -n 'want:' $(BENCH_LINT_SELFTEST) | cut -d: -f1); do \
		if ! printf '%s\n' "$$out" | grep -q "forbidden.go:$$n:.*(depguard)"; then \
			echo "benchmarks-lint-selftest: line $$n of $(BENCH_LINT_SELFTEST) was not reported:"; sed -n "$${n}p" $(BENCH_LINT_SELFTEST); missing=1; \
		fi; \
	done; \
	[ $$missing = 0 ] && echo "benchmarks-lint-selftest: controller-runtime is reported outside crcontroller"

unit:
	go test $(TESTFLAGS) ./...

# The kubetest module's tests: kubetest-build links each package's test
# binary once, into bin/test/kubetest, and kubetest-run runs them, four
# packages at a time, as go test would (.ci/testbin): go test caches
# compiled packages but never a linked test binary, and each of these
# links a whole API server, so `make test` links them in one lane while
# the other computes, and runs them later without linking them again.
KUBETEST_BINS := $(CURDIR)/bin/test/kubetest
kubetest-test: kubetest-build
	@$(MAKE) --no-print-directory kubetest-run

kubetest-build:
	cd kubetest && ../.ci/testbin build $(KUBETEST_BINS) -ldflags=-w -vet=off

kubetest-run:
	cd kubetest && ../.ci/testbin run $(KUBETEST_BINS) 4 -test.count=1 -test.timeout=20m -test.parallel=8

examples-test:
	cd examples && go test $(KUBETEST_TESTFLAGS) ./...

# The cloud Token functions of docs/kubernetes.md, a module of their own
# so the examples module doesn't link three clouds' SDKs; its tests reach
# no cloud.
cloudtoken-test:
	cd examples/cloudtoken && go test $(KUBETEST_TESTFLAGS) ./...

# The benchmarks module: its helpers' tests, and TestCompare, which runs
# `make compare` tiny (200 objects, one repeat, the four modes) and checks
# that every mode settled every object with the writes it should, that
# each controller's /metrics counted its reconciles, and that loam's
# controller, restarted over the settled objects, wrote nothing.
benchmarks-test:
	cd benchmarks && go test $(KUBETEST_TESTFLAGS) ./...

# Every fuzz target of every module, briefly, on top of its kept corpus:
# `make fuzz FUZZTIME=10m` runs each for longer.
FUZZTIME ?= 3s
fuzz:
	FUZZTIME=$(FUZZTIME) .ci/fuzz

bench:
	go test -run '^$$' -bench . -benchmem -benchtime 200ms ./...

# The scale harness of docs/performance.md at full size: the API server's
# own write rate, convergence, start-up, memory and failover, printed as a
# table. SCALE_ARGS picks N and W; `make test` runs it small.
SCALE_ARGS ?= -scale.n=1000,10000 -scale.w=1,4,16
scale:
	cd kubetest && go test -count=1 -timeout 120m -v -run Scale ./scale -args $(SCALE_ARGS)

# The soak of docs/reliability.md at full size: N = 1,000 objects, a
# Controller over them in a child process, 30 minutes of churn (spec
# updates, deletes, re-creates), its live heap and goroutines at the end
# compared with 5 minutes in. `make test` runs it for a minute, comparing
# with the 30-second mark. SOAK_ARGS overrides the flags.
SOAK_ARGS ?= -soak.n=1000 -soak.duration=30m -soak.mark=5m
soak:
	cd kubetest && go test -count=1 -timeout 60m -v -run 'TestSoak$$' ./scale -args $(SOAK_ARGS)

# loam against controller-runtime, side by side on one in-process API
# server: the raw write limit, controller-runtime's controller at its
# defaults and tuned, and loam's, all with their metrics on; N objects
# created at once, medians of interleaved repeats, as a Markdown table
# (benchmarks/README.md). COMPARE_ARGS picks N, W and the repeats; add
# -out FILE to keep the table. 7–13 minutes at full size on two cores,
# plus the first build.
COMPARE_ARGS ?= -n 5000 -w 4 -r 3
compare:
	cd benchmarks && go run ./cmd/compare $(COMPARE_ARGS)

# The comparison at scale, N = 50,000 (never in `make test`): every mode
# once, with each controller's peak RSS and heap per object, and loam's
# restart (-restart): once loam's run has settled, a fresh loam controller
# starts against the same stored objects and is timed until it has
# reconciled every one again and is quiet, with its writes (none are due),
# 409s and peak RSS. -timeout bounds each run and the restart. Runs for
# tens of minutes on two cores; COMPARE_LARGE_ARGS overrides the flags
# (benchmarks/README.md).
COMPARE_LARGE_ARGS ?= -n 50000 -w 4 -r 1 -restart -timeout 60m
compare-large:
	cd benchmarks && go run ./cmd/compare $(COMPARE_LARGE_ARGS)

# What sharding changes per replica, with the API server's sharded list
# and watch on (docs/performance.md, "Sharding"): N = 10,000 Tiles, three
# interleaved runs of each configuration; each replica's primary cache
# counted, and held within ±10 % of N/R for R = 2 and 4.
# SHARDS_ARGS overrides the flags (-sharded.throughput=false: the cost
# rows and the caches alone, in minutes).
SHARDS_ARGS ?= -sharded.n=10000 -sharded.w=8 -sharded.repeat=3
shards:
	cd kubetest && go test -count=1 -timeout 120m -v -run TestShardedMeasure ./sharded -args $(SHARDS_ARGS)

# The chaos suite of docs/reliability.md at full size; `make test` runs it
# with bounded sizes.
chaos:
	cd kubetest && go test -count=1 -timeout 60m -v -run Chaos ./chaos ./e2e -args -chaos.full

# The explorer of docs/testing.md at length: each bug planted in
# kubetest/explore's test operator searched for from 5 seeds with no
# invariant, each seed's time to find logged, and the
# correct operators, that test's and the Memcached and databases
# examples' (the last against the local PostgreSQL), explored for ten
# minutes each, with every fault each supports (lost events, restarts,
# transient errors, Down, the kubelet's on the clusters with Pods),
# and the Memcached example again with its webhooks served by its
# replicas (TestExploreWebhooks). `make test` searches for each bug from the one seed whose first
# sequence, of one or two steps, holds it, and explores the kept
# sequences and one more (docs/testing.md). EXPLORE_SEEDS and
# EXPLORE_DURATION override the two. The searches run eight at a time,
# as make test's do (-parallel 8; the default is GOMAXPROCS): each
# seed's search is mostly waiting, and nine bugs of five seeds one after
# the other, two at a time, came near the 90 minutes on a busy machine.
EXPLORE_SEEDS ?= 5
EXPLORE_DURATION ?= 10m
explore:
	cd kubetest && go test -count=1 -timeout 90m -v -parallel 8 -run TestExplore ./explore -args -explore.seeds=$(EXPLORE_SEEDS) -explore.duration=$(EXPLORE_DURATION)
	cd examples && go test -count=1 -timeout 50m -v -run TestExplore ./memcached/explore -args -explore.duration=$(EXPLORE_DURATION)
	cd examples && go test -count=1 -timeout 30m -v -run TestExplore ./databases/explore -args -explore.duration=$(EXPLORE_DURATION)

tools: $(GOLANGCI_LINT)

$(GOLANGCI_LINT):
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS)/golangci-lint $@
