# `make bench`: what rtscope costs the machine it watches, against the floor
# (empty BPF programs on the same hooks), peers (libbpf-tools runqlat, a
# bpftrace script) and the origin design; prints one table and writes
# bench/results/DATE-MACHINE.md. Not part of `make test`: about 20 minutes
# (BENCH_QUICK=1: about 5). See "Benchmarks" in README.md.
# libbpf-tools is the CO-RE build of bcc's tools: Debian's bpfcc-tools
# (runqlat-bpfcc) compiles at run time and needs kernel headers.
DEB_BENCH := bpftrace libbpf-tools rt-tests stress-ng
BENCH_FLAGS ?=

.PHONY: bench
$(STAMP)/deps-bench: $(STAMP)/deps-build
	@if ! command -v bpftrace >/dev/null || [ ! -x /usr/sbin/runqlat ] || ! command -v cyclictest >/dev/null || ! command -v stress-ng >/dev/null; then \
		echo "installing benchmark dependencies: $(DEB_BENCH)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_BENCH) >/dev/null; fi
	@touch $@

bench: build $(STAMP)/deps-bench
	GOARCH=$(HOSTARCH) CGO_ENABLED=0 $(GO) build -o .cache/rtscope-bench ./bench
	.cache/rtscope-bench -rtscope ./$(BIN) -results-dir bench/results $(BENCH_FLAGS)
