# rtscope: `make demo` and `make test` do all set-up on a fresh Debian machine.
SHELL := /bin/bash
GO ?= go
HOSTARCH := $(shell $(GO) env GOHOSTARCH 2>/dev/null || echo amd64)
GOARCH ?= $(HOSTARCH)
export GOARCH
BIN := $(if $(filter $(HOSTARCH),$(GOARCH)),rtscope,rtscope-$(GOARCH))
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The build date, from SOURCE_DATE_EPOCH when set (reproducible package builds).
BUILD_DATE := $(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(date +%s)} +%Y-%m-%dT%H:%M:%SZ)
BPF_SRC := $(wildcard bpf/*.c bpf/*.h bpf/headers/*.h)
STAMP := .cache/stamps

# Debian packages the build and the tests need.
DEB_BUILD := clang llvm libbpf-dev bpftool
# chromium: the HTML report is loaded in a headless browser (watch --html);
# clang-format: make lint checks the format of bpf/; prometheus: the
# server scrapes rtscope serve in tests/serve_test.go; bash-completion:
# rtscope completion bash is tried in bash (internal/cli).
DEB_TEST := rt-tests stress-ng chromium clang-format prometheus bash-completion

.PHONY: all build deps deps-test generate test test-unit test-root demo bench clean vet lint man

all: build

$(STAMP)/deps-build:
	@mkdir -p $(STAMP)
	@if ! command -v clang >/dev/null || [ ! -f /usr/include/bpf/bpf_helpers.h ]; then \
		echo "installing build dependencies: $(DEB_BUILD)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_BUILD) >/dev/null; fi
	@touch $@

$(STAMP)/deps-test: $(STAMP)/deps-build
	@if ! command -v cyclictest >/dev/null || ! command -v stress-ng >/dev/null || ! command -v chromium >/dev/null || ! command -v clang-format >/dev/null || ! command -v prometheus >/dev/null || [ ! -f /usr/share/bash-completion/bash_completion ]; then \
		echo "installing test dependencies: $(DEB_TEST)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_TEST) >/dev/null; fi
	@touch $@

deps: $(STAMP)/deps-build
deps-test: $(STAMP)/deps-test

$(STAMP)/generate: $(BPF_SRC) $(STAMP)/deps-build $(wildcard internal/*/gen.go)
	GOARCH=$(HOSTARCH) $(GO) generate ./...
	@touch $@

generate: $(STAMP)/generate

build: $(STAMP)/generate
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/rtscope/rtscope/internal/cli.Version=$(VERSION) -X github.com/rtscope/rtscope/internal/cli.Commit=$(COMMIT) -X github.com/rtscope/rtscope/internal/cli.BuildDate=$(BUILD_DATE)" -o $(BIN) .

vet: $(STAMP)/generate
	GOARCH=$(HOSTARCH) $(GO) vet ./...

# lint: golangci-lint (pinned in tools/go.mod; .golangci.yml: errcheck,
# staticcheck, unused, gofmt/goimports, depguard for the layering),
# clang-format on bpf/ (bpf/.clang-format), and tidy module files.
lint: $(STAMP)/generate $(STAMP)/deps-test
	GOARCH=$(HOSTARCH) $(GO) tool -modfile=tools/go.mod golangci-lint run ./...
	clang-format --dry-run --Werror bpf/*.c bpf/*.h
	$(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff

# Every test: unit, BPF logic, root integration on this kernel, and whatever
# the mk/*.mk fragments add to TEST_EXTRA (QEMU test bed, ...).
test: build deps-test vet lint
	GOARCH=$(HOSTARCH) $(GO) test -p 1 -count=1 -timeout 40m ./... 2>&1 | tee .cache/go-test.log; test $${PIPESTATUS[0]} -eq 0
	@$(MAKE) --no-print-directory test-extra

TEST_EXTRA :=
-include mk/*.mk

test-extra: $(TEST_EXTRA)

demo: build
	./$(BIN) demo

# man/: rtscope(1), rtscope-COMMAND(1) and rtscope-serve.yaml(5), written
# from the command tree (internal/cli/man.go); TestManPages fails until
# they are rewritten after a flag or a command's text changes.
man: $(STAMP)/generate
	GOARCH=$(HOSTARCH) $(GO) test -count=1 -run 'TestManPages$$' ./internal/cli -update

clean:
	rm -rf rtscope rtscope-* .cache internal/*/*_bpfel.go internal/*/*_bpfel.o
