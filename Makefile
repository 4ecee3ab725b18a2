# coredns-hairpin. `make demo` shows the fix end to end; `make test` runs every test.
SHELL := /bin/bash
export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

# Expanded once: a commit made while a target runs must not give its
# images another version than its binaries.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
endif
LDFLAGS := -s -w -X main.version=$(VERSION)
BIN := bin
GO_SOURCES := $(shell find . -name '*.go' -not -path './test/tools/*' -not -path './.cache/*') go.mod go.sum plugin.cfg

# Control-plane binaries (kube-apiserver, etcd) built from source, cached by
# the tools module's go.sum, and helm and actionlint, each cached by its own
# module's go.sum. build/tools.sh prints the folder it filled. cilium-agent
# and cilium-cni (test/tools/cilium), and the CNI plugins they are chained
# on (test/tools/cni), are linked into that folder as cilium/ and cni/
# by `build/tools.sh cilium`: only `make test`, `make tools` and
# `DEMO_DATAPLANE=cilium make demo` wait for them.
TOOLS_DIR = $(shell build/tools.sh --dir)
HELM = $(shell build/tools.sh --helm)
ACTIONLINT = $(shell build/tools.sh --actionlint)

.PHONY: all build generate test test-cilium test-lifecycle unit fuzz tools cluster-tools cilium-tools deps demo demo-images bench soak images manifests release release-check clean FORCE

all: build

build: $(BIN)/coredns $(BIN)/hairpin-proxy $(BIN)/kubectl-hairpin

generate:
	cd build/coredns && go generate

$(BIN)/coredns: $(GO_SOURCES)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./build/coredns

$(BIN)/hairpin-proxy: $(GO_SOURCES)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./proxy/cmd/hairpin-proxy

# `kubectl hairpin check` once bin/ is on PATH.
$(BIN)/kubectl-hairpin: $(GO_SOURCES)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./plugin/kubectl-hairpin/cmd/kubectl-hairpin

# The lifecycle test's and the soak's steady client: a plain binary (no
# race detector), run in the client Pod's network namespace.
$(BIN)/steady: $(GO_SOURCES)
	CGO_ENABLED=0 go build -trimpath -o $@ ./test/harness/steady/cmd/steady

tools: cluster-tools cilium-tools

# The control plane, kube-proxy, helm and actionlint.
cluster-tools:
	build/tools.sh

# cilium-agent and cilium-cni, the test cluster's cilium mode, and the CNI
# plugins (ptp, host-local, portmap) it chains cilium-cni on.
cilium-tools:
	build/tools.sh cilium >/dev/null

# The plain manifests (manifests/rendered/*/hairpin.yaml) rendered from the
# Helm chart, the one source, and the chart README's values table written
# from its values.yaml (build/chartdoc); test/manifests fails when either
# drifts.
manifests:
	build/tools.sh helm >/dev/null
	HELM=$(HELM) build/manifests.sh
	go run ./build/chartdoc/cmd/chartdoc -chart manifests/coredns-hairpin

# Debian packages the tests and the demo drive for real (nginx, dig, curl).
deps:
	build/deps.sh

# The fix end to end, for a person to follow, on a one-node cluster with a
# real dataplane in network namespaces (test/harness/cluster: the control
# plane, kube-proxy, Pods run from their PodSpec, LoadBalancer IPs behind
# HAProxy send-proxy): two ingress controllers (nginx as ingress-nginx with
# use-proxy-protocol), kube-dns on our CoreDNS image with kubeadm's stock
# Corefile, `helm install`/`uninstall` of our chart with the real helm, dig
# and curl in a client Pod, `kubectl hairpin check` (test/demo; TestDemoStory
# runs the same story). Without root it tells the loopback story instead.
# DEMO_KEEP=1 keeps the cluster running before the uninstall.
# DEMO_DATAPLANE=cilium tells it on Cilium as kube-proxy replacement (root
# only: BPF needs real root); the default is kube-proxy in nftables mode.
# Built, not `go run`: go run exits 1 on Ctrl-C whatever the demo returns.
# It builds only what it runs: the cluster's tools without kubectl or
# actionlint (build/tools.sh demo), our images for this machine's platform
# only (demo-images), and Cilium only for DEMO_DATAPLANE=cilium.
demo: deps build demo-images $(if $(filter cilium,$(DEMO_DATAPLANE)),cilium-tools)
	build/tools.sh demo >/dev/null
	go build -o $(BIN)/demo ./test/demo
	KUBEBUILDER_ASSETS=$(TOOLS_DIR) HAIRPIN_HELM=$(HELM) HAIRPIN_BIN=$(CURDIR)/$(BIN) $(BIN)/demo

# Container images for linux/amd64 and linux/arm64, built offline (no
# Docker engine) with go-containerregistry from static binaries
# cross-compiled into bin/linux-ARCH/: per image an OCI layout holding one
# image index (bin/images/NAME/, push with skopeo or crane, see
# build/images/main.go) and one `docker load` tarball per platform
# (bin/images/NAME-linux-ARCH.tar). build/images/Dockerfile.* build the same
# with Docker.
ARCHES := amd64 arm64
PLATFORM_BINS := $(foreach a,$(ARCHES),$(BIN)/linux-$(a)/coredns $(BIN)/linux-$(a)/hairpin-proxy)

# The version the platform binaries are stamped with, rewritten only when it
# changes: a new commit re-links them, so an image's tag and labels always
# match what its binary prints.
$(BIN)/.version: FORCE
	@mkdir -p $(BIN); [ "$$(cat $@ 2>/dev/null)" = "$(VERSION)" ] || echo "$(VERSION)" > $@
FORCE:

$(BIN)/linux-%/coredns: $(GO_SOURCES) $(BIN)/.version
	CGO_ENABLED=0 GOOS=linux GOARCH=$* go build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./build/coredns

$(BIN)/linux-%/hairpin-proxy: $(GO_SOURCES) $(BIN)/.version
	CGO_ENABLED=0 GOOS=linux GOARCH=$* go build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./proxy/cmd/hairpin-proxy

images: $(PLATFORM_BINS) LICENSE
	go run ./build/images -bin $(BIN) -out $(BIN)/images -version $(VERSION)

# The images for this machine's platform only, which is all `make demo`
# runs: no cross-compiled binaries.
HOSTARCH := $(shell go env GOARCH)
demo-images: $(BIN)/linux-$(HOSTARCH)/coredns $(BIN)/linux-$(HOSTARCH)/hairpin-proxy LICENSE
	go run ./build/images -bin $(BIN) -out $(BIN)/images -version $(VERSION) -arch $(HOSTARCH)

# A release (docs/architecture.md, "Releases"; build/release does the work):
# REGISTRY/coredns:VERSION and REGISTRY/hairpin-proxy:VERSION as OCI indexes
# of both platforms, and the chart oci://REGISTRY/charts/coredns-hairpin
# (version VERSION without the v) whose default images are those, by tag
# and digest; $(BIN)/release/ gets the chart archive, the plain manifests
# pinned the same way, the kubectl-hairpin archives with their krew manifest,
# SHA256SUMS and release.json. A loopback REGISTRY is plain HTTP. Credentials: `docker login` for the
# images, `helm registry login` for the chart.
release-check:
	go run ./build/release -check -registry '$(REGISTRY)' -version '$(VERSION)'

release: release-check images
	@[ -x "$(HELM)" ] || build/tools.sh helm >/dev/null
	go run ./build/release -registry '$(REGISTRY)' -version '$(VERSION)' \
		-images $(BIN)/images -out $(BIN)/release -helm $(HELM)

# Everything: vet, unit, integration (real kube-apiserver + etcd) and e2e
# (our coredns and proxy, real nginx, dig, curl).
#
# The race detector runs where it finds races: the product's packages and
# the harness's unit tests and node agent (RACE_PKGS). The cluster stories
# (PLAIN_PKGS and test/dataplane) run without it: what they prove is the
# dataplane's, our binaries in them are plain builds anyway, and the
# detector's cost in the harness is CPU that the clusters need on 2 cores.
# Every package is in exactly one list; `make test` fails on one that is not.
# test/dataplane runs apart, with a timeout of its own: its stories (the
# story, Gateway, direct targets, lifecycle, docs) share one cluster per
# mode and outgrow the 30 minutes every other package gets.
RACE_PKGS = ./build/... ./plugin/... ./proxy/... ./test/harness ./test/harness/cgroup2 ./test/harness/hoststate ./test/harness/netns \
	./test/harness/node/... ./test/harness/rootfs ./test/harness/steady/... ./test/harness/userns
PLAIN_PKGS = ./test/bench ./test/demo ./test/e2e ./test/harness/cluster ./test/images ./test/manifests ./test/release
TEST_ENV = KUBEBUILDER_ASSETS=$(TOOLS_DIR) HAIRPIN_HELM=$(HELM) HAIRPIN_ACTIONLINT=$(ACTIONLINT) HAIRPIN_BIN=$(CURDIR)/$(BIN) HAIRPIN_REQUIRE_E2E=1
# On 2 cores CI's time is CPU time, so what waits runs beside what
# computes. Cilium's build (build/tools.sh cilium, niced; about 9 minutes
# cold) runs beside the race packages, none of which runs Cilium; go vet
# runs beside the dataplane tests, which mostly wait on their clusters. Each
# phase prints its wall time (`make test: PHASE took Ns`).
test: deps build cluster-tools images $(BIN)/steady
	@left=$$(comm -23 <(go list ./... | sort) <(go list $(RACE_PKGS) $(PLAIN_PKGS) ./test/dataplane | sort)); \
	if [ -n "$$left" ]; then echo "make test: packages in neither RACE_PKGS nor PLAIN_PKGS: $$left" >&2; exit 1; fi
	@t=$$(date +%s); build/tools.sh cilium > $(BIN)/cilium-tools.log 2>&1 & cil=$$!; \
	echo "make test: building Cilium beside the race packages ($(BIN)/cilium-tools.log)"; \
	$(TEST_ENV) go test -race -count=1 -timeout 30m $(RACE_PKGS); rc=$$?; \
	echo "make test: race packages took $$(( $$(date +%s) - t ))s"; \
	wait $$cil; crc=$$?; cat $(BIN)/cilium-tools.log; \
	echo "make test: race packages and Cilium's build took $$(( $$(date +%s) - t ))s"; \
	if [ $$crc -ne 0 ]; then echo "make test: build/tools.sh cilium failed"; fi; \
	[ $$rc -eq 0 ] && [ $$crc -eq 0 ]
	@t=$$(date +%s); $(TEST_ENV) go test -count=1 -timeout 30m $(PLAIN_PKGS); rc=$$?; \
	echo "make test: plain packages took $$(( $$(date +%s) - t ))s"; [ $$rc -eq 0 ]
	@t=$$(date +%s); go vet ./... > $(BIN)/vet.log 2>&1 & vet=$$!; \
	echo "go vet ./... (beside the dataplane tests; bin/vet.log)"; \
	$(TEST_ENV) go test -count=1 -timeout 50m ./test/dataplane/; rc=$$?; \
	wait $$vet; vrc=$$?; cat $(BIN)/vet.log; \
	if [ $$vrc -ne 0 ]; then echo "go vet failed"; fi; \
	echo "make test: dataplane took $$(( $$(date +%s) - t ))s"; \
	[ $$rc -eq 0 ] && [ $$vrc -eq 0 ]
	@t=$$(date +%s); cd test/alerts && $(TEST_ENV) go test -count=1 ./...; rc=$$?; \
	echo "make test: alerts took $$(( $$(date +%s) - t ))s"; [ $$rc -eq 0 ]   # docs/alerts rules, in their own module (Prometheus is heavy); the chart's CoreDNS scrape with HAIRPIN_HELM

# The Cilium parts of `make test` alone: the leave-nothing-behind check and
# the dataplane stories' cilium subtests.
test-cilium: deps build tools images $(BIN)/steady
	$(TEST_ENV) go test -count=1 -timeout 20m -run '^TestCiliumLeavesNothingBehind$$' ./test/harness/cluster/
	$(TEST_ENV) go test -count=1 -timeout 60m -run '^Test(HairpinOnTheRealDataplane|GatewayOnTheRealDataplane|DirectTargetOnTheRealDataplane|CozystackManagementCluster)$$/^cilium$$' ./test/dataplane/

# The lifecycle test alone, on nftables and Cilium (part of `make test`).
# LIFECYCLE_DATAPLANES=cilium-per-packet measures the opt-in Cilium that
# balances the Pods' connections per packet, whose kube-dns rollouts lose
# UDP queries (cilium#48714; docs/troubleshooting.md): its coredns-rollout
# line gives the figure, and the test fails on it.
LIFECYCLE_DATAPLANES ?= nftables,cilium
test-lifecycle: deps build tools images $(BIN)/steady
	$(TEST_ENV) HAIRPIN_DATAPLANES=$(LIFECYCLE_DATAPLANES) go test -count=1 -timeout 30m -run '^TestLifecycleLosesNoRequest$$' ./test/dataplane/

# Unit tests only: no control plane, no child processes.
unit:
	go vet ./...
	go test -race -count=1 -short ./...

# Every Go fuzz target (the parsers of untrusted input), each for FUZZTIME.
# `go test` runs their seed corpora as part of `make test`.
FUZZTIME ?= 60s
fuzz:
	@set -e; for pkg in $$(go list ./...); do \
		for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz: $$pkg $$f for $(FUZZTIME)"; \
			go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# Benchmarks against the alternatives (hosts, rewrite+kubernetes, HAProxy,
# direct), side by side; writes test/bench/results.json and results.md.
# BENCH_QUICK=1 is a smoke run. BENCH_ONLY=proxy,kube,order,scale runs only
# those phases and keeps the others' figures (order: hairpin in front of
# cache vs behind it, issue 23; scale: 100,000 Ingresses over 100 targets,
# issues 11 and 23; keepalive: the proxy phase's system calls and CPU per
# keep-alive request against HAProxy alone, issue 45; BENCH_KEEPALIVE_RUNS=N
# makes N interleaved CPU runs of each instead of 6). Installs dnsperf,
# wrk, haproxy, nginx and perf (linux-perf) if missing.
BENCH_TOOLS := dnsperf wrk haproxy nginx linux-perf
bench: build cluster-tools
	@missing=; for c in dnsperf wrk haproxy nginx perf; do command -v $$c >/dev/null || [ -x /usr/sbin/$$c ] || missing=1; done; \
	if [ -n "$$missing" ]; then apt-get update && apt-get install -y $(BENCH_TOOLS); fi
	KUBEBUILDER_ASSETS=$(TOOLS_DIR) HAIRPIN_BIN=$(CURDIR)/$(BIN) HAIRPIN_REQUIRE_E2E=1 HAIRPIN_BENCH=1 BENCH_QUICK=$(BENCH_QUICK) BENCH_ONLY=$(BENCH_ONLY) BENCH_KEEPALIVE_RUNS=$(BENCH_KEEPALIVE_RUNS) \
		go test -count=1 -v -run '^TestBench$$' -timeout 60m ./test/bench/

# The soak (issue 32): SOAK (default 30m) of steady churn on the real
# nftables dataplane (10 Ingress changes/s, a target flap every minute, a
# proxy rollout every 5 minutes) under the lifecycle test's steady client;
# writes CoreDNS's and the proxy's footprint trends and the failed requests
# (must be 0) into test/bench/results.json under soak. A later `make bench`
# keeps them.
SOAK ?= 30m
soak: build tools images $(BIN)/steady
	KUBEBUILDER_ASSETS=$(TOOLS_DIR) HAIRPIN_HELM=$(HELM) HAIRPIN_BIN=$(CURDIR)/$(BIN) HAIRPIN_REQUIRE_E2E=1 HAIRPIN_SOAK=$(SOAK) \
		go test -count=1 -v -run '^TestSoak$$' -timeout 4h ./test/bench/

clean:
	rm -rf $(BIN)
