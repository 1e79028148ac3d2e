# `make bench`: what rtscope costs the machine it watches, against the floor
# (empty BPF programs on the same hooks), peers (libbpf-tools runqlat, a
# bpftrace script) and the origin design, and how long rtscope's own threads
# hold a CPU (phase self); prints one table and writes
# bench/results/DATE-MACHINE.md, then runs make soak (below). Not part of
# `make test`: about 20 minutes plus the soak's 12 (BENCH_QUICK=1: about 5
# plus 12). See bench/README.md.
# libbpf-tools is the CO-RE build of bcc's tools: Debian's bpfcc-tools
# (runqlat-bpfcc) compiles at run time and needs kernel headers.
DEB_BENCH := bpftrace libbpf-tools rt-tests stress-ng
BENCH_FLAGS ?=

.PHONY: bench bench-timed
$(STAMP)/deps-bench: $(STAMP)/deps-build
	@if ! command -v bpftrace >/dev/null || [ ! -x /usr/sbin/runqlat ] || ! command -v cyclictest >/dev/null || ! command -v stress-ng >/dev/null; then \
		echo "installing benchmark dependencies: $(DEB_BENCH)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_BENCH) >/dev/null; fi
	@touch $@

# An instrumented copy of rtscope (every program timed by bench/bpf/timed.h)
# for per-run maxima and tails, which kernel BPF statistics do not give.
BENCH_TIMED := .cache/bench-timed
bench-timed: build
	@rm -rf $(BENCH_TIMED) && mkdir -p $(BENCH_TIMED)
	@tar --exclude=./.git --exclude=./.cache --exclude='./rtscope*' -cf - . | tar -xf - -C $(BENCH_TIMED)
	@cp bench/bpf/timed.h $(BENCH_TIMED)/bpf/
	@sed -i '1i #include "timed.h"' $(BENCH_TIMED)/bpf/rtscope.bpf.c
	@$(MAKE) --no-print-directory -C $(BENCH_TIMED) build >/dev/null

bench: build bench-timed $(STAMP)/deps-bench
	GOARCH=$(HOSTARCH) CGO_ENABLED=0 $(GO) build -o .cache/rtscope-bench ./bench
	.cache/rtscope-bench -rtscope ./$(BIN) -timed $(BENCH_TIMED) -results-dir bench/results $(BENCH_FLAGS)
	@$(MAKE) --no-print-directory soak

# make soak (part of make bench): rtscope serve for SOAK_FLAGS' -duration
# (default 10 minutes) under task churn (20 short tasks a second, 72,000 an
# hour) and stress-ng, with an operator changing targets and SLOs through
# rtscope ctl and reloading the config (SIGHUP) meanwhile, reporting RSS
# growth, agent CPU, losses, the control API's answers, changes reaching
# /metrics and the archive against its limit, then the agent's CPU at the
# highest context-switch rate with 100 tracked tasks (2 x 30 s); writes
# bench/results/DATE-MACHINE-soak.md with its series (.csv) and plot (.svg).
# About 12 minutes.
SOAK_FLAGS ?=
.PHONY: soak
soak: build $(STAMP)/deps-bench
	GOARCH=$(HOSTARCH) CGO_ENABLED=0 $(GO) build -o .cache/rtscope-soak ./bench/soak
	.cache/rtscope-soak -rtscope ./$(BIN) -results-dir bench/results $(SOAK_FLAGS)
