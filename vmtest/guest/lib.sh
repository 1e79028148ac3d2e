# Helpers for guest tests (busybox sh). A test is a script sourced after
# this file; it prints what it measures, calls the check helpers, and ends
# with `finish`.
FAILED=0

# ok DESC / bad DESC: one readable result line.
ok() { echo "  ok   $*"; }
bad() {
	echo "  FAIL $*"
	FAILED=1
}

# check DESC CMD...: CMD must succeed.
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else bad "$desc"; fi
}

# ge NAME VALUE MIN: integer VALUE >= MIN ("null" or empty fails).
ge() {
	case $2 in
	'' | null | *[!0-9-]*) bad "$1 = ${2:-nothing}, want a number >= $3" ;;
	*) if [ "$2" -ge "$3" ]; then ok "$1 = $2 >= $3"; else bad "$1 = $2, want >= $3"; fi ;;
	esac
}

# lt NAME VALUE MAX: integer VALUE < MAX.
lt() {
	case $2 in
	'' | null | *[!0-9-]*) bad "$1 = ${2:-nothing}, want a number < $3" ;;
	*) if [ "$2" -lt "$3" ]; then ok "$1 = $2 < $3"; else bad "$1 = $2, want < $3"; fi ;;
	esac
}

# skip WHY: the test cannot run here (reported as SKIP, not PASS).
skip() {
	echo "$*" >/tmp/vmtest-skip
	echo "  skip $*"
	exit 77
}

finish() { exit $FAILED; }

# has_command NAME: rtscope has the subcommand NAME.
has_command() { rtscope help 2>&1 | grep -q "^  $1 "; }

# need_command NAME: skip unless rtscope has the subcommand NAME.
need_command() { has_command "$1" || skip "rtscope has no '$1' command yet"; }

# modload NAME [PARAM=VALUE...]: insmod a fault-injection module.
modload() {
	name=$1
	shift
	insmod "/lib/modules/$name.ko" "$@" || {
		bad "insmod $name $*"
		dmesg | tail -5
		return 1
	}
}

# modparam MODULE PARAM: a module parameter's current value.
modparam() { cat "/sys/module/$1/parameters/$2"; }

# Under TCG the host steals time from the guest's CPUs, so any sample can
# be late by milliseconds: a single maximum proves nothing. Tests count
# samples over a threshold instead and compare that count with the number
# of injections the module made meanwhile (its `fired` counter).

# fired_during MODULE CMD...: run CMD, then print how many injections MODULE
# made meanwhile in $FIRED.
fired_during() {
	m=$1
	shift
	f0=$(modparam "$m" fired)
	"$@"
	FIRED=$(($(modparam "$m" fired) - f0))
	echo "    $m injected $FIRED times"
}

# cyclictest_over THRESH_US ARGS...: run cyclictest with a histogram and set
# OVER (samples >= THRESH_US, all threads, overflows included) and MAX.
cyclictest_over() {
	t=$1
	shift
	OVER=null
	MAX=null
	cyclictest -q -m -h 20000 --histfile=/tmp/cyc.hist "$@" >/tmp/cyc.out 2>&1 || {
		sed 's/^/    /' /tmp/cyc.out
		return 0
	}
	sed 's/^/    /' /tmp/cyc.out
	OVER=$(awk -v t="$t" '
		/^# Histogram Overflows:/ { for (i = 4; i <= NF; i++) n += $i; next }
		/^#/ { next }
		$1 + 0 >= t { for (i = 2; i <= NF; i++) n += $i }
		END { print n + 0 }' /tmp/cyc.hist)
	MAX=$(awk '/^# Max Latencies:/ { m = 0; for (i = 4; i <= NF; i++) if ($i + 0 > m) m = $i + 0; print m }' /tmp/cyc.hist)
	echo "    samples >= $t us: $OVER, max $MAX us; by ms from 1 ms: $(awk '
		/^#/ { next }
		$1 + 0 >= 1000 { for (i = 2; i <= NF; i++) h[int($1 / 1000)] += $i }
		END { for (k = 1; k < 20; k++) printf "%d ", h[k] }' /tmp/cyc.hist)"
}

# timerlat_over TOOL THRESH_US ARGS...: run `rtla timerlat hist` or
# `rtscope timerlat hist` (same layout) on CPU 1 with 100 us buckets and
# set IRQ_OVER and THR_OVER (IRQ and thread latency samples >= THRESH_US),
# IRQ_MAX and THR_MAX (us).
timerlat_over() {
	tool=$1
	t=$2
	shift 2
	IRQ_OVER=null
	THR_OVER=null
	$tool timerlat hist -c 1 -b 100 -E 200 "$@" >/tmp/tl.out 2>&1 || {
		tail -20 /tmp/tl.out | sed 's/^/    /'
		return 0
	}
	grep -v '^[0-9]' /tmp/tl.out | sed 's/^/    /'
	set -- $(awk -v t="$t" '
		$1 == "over:" && !done { io += $2; to += $3; done = 1; next }
		$1 == "max:" { im = $2; tm = $3; next }
		!done && $1 ~ /^[0-9]+$/ && NF >= 3 && $1 + 0 >= t { io += $2; to += $3 }
		END { print io + 0, to + 0, im, tm }' /tmp/tl.out)
	IRQ_OVER=$1
	THR_OVER=$2
	IRQ_MAX=$3
	THR_MAX=$4
	echo "    $tool timerlat: samples >= $t us: IRQ $IRQ_OVER, thread $THR_OVER; max IRQ $IRQ_MAX us, thread $THR_MAX us"
}

# timerlat_side EXPECT: the side the last timerlat_over run puts the
# latency on: "irq" (the timer IRQ came late), "thread" (on-time IRQ, late
# thread: the thread-only excess) or "none", against EXPECT injections.
# Host noise delays IRQ and thread alike, so it adds no thread-only excess.
# A late timer IRQ leaves most injections on the IRQ side (21-26 of 30 with
# 20 ms hard-IRQ loops every 200.137 ms: the others started between a
# timerlat IRQ and its thread, see 20-rtla); a preemption-off section leaves thread-only excess with some
# IRQ-side noise (IRQ 39-44, thread-only 39-56 were seen under TCG).
timerlat_side() {
	thr_only=$((THR_OVER - IRQ_OVER))
	if [ "$IRQ_OVER" -ge $(($1 * 3 / 4)) ]; then
		echo irq
	elif [ $thr_only -ge $(($1 / 2)) ]; then
		echo thread
	elif [ "$IRQ_OVER" -ge $(($1 / 2)) ]; then
		echo irq
	else
		echo none
	fi
}

# watch_json FILE ARGS...: rtscope watch -q --json FILE ARGS; on failure
# print the start and end of its output (a verifier log is long) and fail.
watch_json() {
	f=$1
	shift
	rm -f "$f"
	rtscope watch -q --json "$f" "$@" >/tmp/watch.out 2>&1
	rc=$?
	# 2: an SLO was violated (what tests with --slo provoke), not an error.
	if { [ $rc != 0 ] && [ $rc != 2 ]; } || [ ! -s "$f" ]; then
		head -4 /tmp/watch.out | cut -c1-300 | sed 's/^/    /'
		echo "    ..."
		tail -4 /tmp/watch.out | cut -c1-300 | sed 's/^/    /'
		bad "rtscope watch $* (exit status $rc)"
		return 1
	fi
	grep -E '^== |worst|verdict|rtscope watch:' /tmp/watch.out | cut -c1-200 | sed 's/^/    /'
	return 0
}

# attached SECONDS [FILE]: wait until the running watch_json's rtscope (or
# the one writing its output to FILE) says it is attached and tracking (at
# most SECONDS); false if it never did.
attached() {
	i=0
	while [ $i -lt $(($1 * 5)) ]; do
		grep -q 'attached and tracking' "${2:-/tmp/watch.out}" 2>/dev/null && return 0
		sleep 0.2
		i=$((i + 1))
	done
	echo "    rtscope (${2:-/tmp/watch.out}) did not say it was attached within $1 s" >&2
	return 1
}

# jget FILE PATH: a value from a JSON file (vmkit get), "missing" if absent.
jget() { vmkit get "$1" "$2" 2>/dev/null || echo missing; }

# capture NAME FILE PATH: with vmtest.capture on the kernel command line
# (VMTEST_APPEND=vmtest.capture), print the JSON at PATH of FILE to the log,
# gzipped and base64-encoded on one "VMTEST-CAPTURE NAME DATA" line, for
# vmtest/capture.sh to write out (analysis fixtures from the guests' runs).
capture() {
	grep -qw vmtest.capture /proc/cmdline || return 0
	echo "VMTEST-CAPTURE $1 $(vmkit get "$2" "$3" | gzip -9 | base64 | tr -d '\n')"
}
