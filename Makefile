# coredns-hairpin. `make demo` shows the fix end to end; `make test` runs every test.
SHELL := /bin/bash
export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
BIN := bin
GO_SOURCES := $(shell find . -name '*.go' -not -path './test/tools/*' -not -path './.cache/*') go.mod go.sum plugin.cfg

# Control-plane binaries (kube-apiserver, etcd) built from source, cached by
# the tools module's go.sum. build/tools.sh prints the folder it filled.
TOOLS_DIR = $(shell build/tools.sh --dir)

.PHONY: all build generate test unit tools deps demo bench images clean

all: build

build: $(BIN)/coredns $(BIN)/hairpin-proxy

generate:
	cd build/coredns && go generate

$(BIN)/coredns: $(GO_SOURCES)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./build/coredns

$(BIN)/hairpin-proxy: $(GO_SOURCES)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./proxy/cmd/hairpin-proxy

tools:
	build/tools.sh

# Debian packages the tests and the demo drive for real (nginx, dig, curl).
deps:
	build/deps.sh

# The fix end to end, for a person to follow: a real control plane, nginx as
# ingress-nginx with use-proxy-protocol, our proxy and CoreDNS, dig and curl.
# DEMO_KEEP=1 keeps the stack running until Ctrl-C.
# Built, not `go run`: go run exits 1 on Ctrl-C whatever the demo returns.
demo: deps build tools
	go build -o $(BIN)/demo ./test/demo
	KUBEBUILDER_ASSETS=$(TOOLS_DIR) HAIRPIN_BIN=$(CURDIR)/$(BIN) $(BIN)/demo

# Container images, built offline (no Docker engine) with go-containerregistry
# from the static binaries: bin/images/coredns.tar and bin/images/hairpin-proxy.tar,
# loadable with `docker load -i`. build/images/Dockerfile.* build the same with Docker.
images: build
	go run ./build/images -bin $(BIN) -out $(BIN)/images -version $(VERSION)

# Everything: vet, unit, integration (real kube-apiserver + etcd) and e2e
# (our coredns and proxy, real nginx, dig, curl).
test: deps build tools
	go vet ./...
	KUBEBUILDER_ASSETS=$(TOOLS_DIR) HAIRPIN_BIN=$(CURDIR)/$(BIN) HAIRPIN_REQUIRE_E2E=1 \
		go test -race -count=1 -timeout 30m ./...

# Unit tests only: no control plane, no child processes.
unit:
	go vet ./...
	go test -race -count=1 -short ./...

# Benchmarks against the alternatives (hosts, rewrite+kubernetes, HAProxy,
# direct), side by side; writes test/bench/results.json and results.md.
# BENCH_QUICK=1 is a smoke run; BENCH_ONLY=proxy runs only the proxy phase. Installs dnsperf, wrk, haproxy, nginx if missing.
BENCH_TOOLS := dnsperf wrk haproxy nginx
bench: build tools
	@missing=; for c in dnsperf wrk haproxy nginx; do command -v $$c >/dev/null || [ -x /usr/sbin/$$c ] || missing=1; done; \
	if [ -n "$$missing" ]; then apt-get update && apt-get install -y $(BENCH_TOOLS); fi
	KUBEBUILDER_ASSETS=$(TOOLS_DIR) HAIRPIN_BIN=$(CURDIR)/$(BIN) HAIRPIN_REQUIRE_E2E=1 HAIRPIN_BENCH=1 BENCH_QUICK=$(BENCH_QUICK) BENCH_ONLY=$(BENCH_ONLY) \
		go test -count=1 -v -run '^TestBench$$' -timeout 60m ./test/bench/

clean:
	rm -rf $(BIN)
