# `make fuzz`: every parser's fuzz target (go test -fuzz), one after the
# other (Go fuzzes one target per run), FUZZTIME each. Part of `make test`
# at 50000 inputs each (about 40 s in all, compilation included); their
# seeds are in the fuzz_test.go files, and what a long run finds is kept
# under the package's testdata/fuzz/ (commit it with the fix). For a deeper
# run: `make fuzz FUZZTIME=5000000x`.
#
# Budgets are counts, not durations: with a duration, Go's fuzz coordinator
# (before Go 1.27) can report its own deadline as a failure when a worker is
# mid-input at the end (golang/go#75804: "context deadline exceeded", no
# crasher; a fresh-clone .ci/run failed FuzzParseUser so at 3 s). A count
# has no deadline to race.
FUZZTIME ?= 50000x
# Minimizing each new interesting input is capped (a count, likewise): a
# long argument through pflag's error path took the whole default (60 s, no
# new inputs tried) in FuzzParseArgs; a crasher is kept, merely less shrunk.
FUZZMINTIME ?= 2000x
FUZZ_TARGETS := \
	internal/units:FuzzParseNs internal/units:FuzzUsRoundTrip internal/units:FuzzParseDuration \
	internal/slo:FuzzParse \
	internal/cpuset:FuzzParseList \
	internal/action:FuzzParse \
	internal/timerlat:FuzzParsePriority internal/timerlat:FuzzParseArgs \
	internal/scenario:FuzzParams \
	internal/cli:FuzzParseIDs \
	internal/target:FuzzParseUser \
	internal/tpformat:FuzzParseFormat

.PHONY: fuzz
fuzz: $(STAMP)/generate
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t#*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		GOARCH=$(HOSTARCH) $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1 ./$$pkg >.cache/fuzz.log 2>&1 || { cat .cache/fuzz.log; exit 1; }; \
	done

TEST_EXTRA += fuzz
