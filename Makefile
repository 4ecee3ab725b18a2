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

.PHONY: all build generate test unit tools demo bench images clean

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

# Everything: vet, unit, integration (real kube-apiserver + etcd) and e2e
# (our coredns and proxy, real nginx, dig, curl).
test: build tools
	go vet ./...
	KUBEBUILDER_ASSETS=$(TOOLS_DIR) HAIRPIN_BIN=$(CURDIR)/$(BIN) HAIRPIN_REQUIRE_E2E=1 \
		go test -race -count=1 -timeout 30m ./...

# Unit tests only: no control plane, no child processes.
unit:
	go vet ./...
	go test -race -count=1 -short ./...

clean:
	rm -rf $(BIN)
