# The isolated guest (issue 40): CPU 1 booted isolcpus=nohz,domain,
# managed_irq, nohz_full and rcu_nocbs. One busy loop alone on CPU 1: the
# tick stops; two: the kernel keeps it running by its SCHED dependency
# (more than one runnable task), and rtscope isolation must say both.
# Judged over the run, against the kernel's own account of the same run: a
# raw tracefs capture of timer:tick_stop on CPU 1, and the local timer
# interrupts /proc/interrupts counts there (LOC).
# Under TCG the guest has no usable TSC ("Fast TSC calibration failed";
# clocksources hpet and acpi_pm), yet no CLOCK_UNSTABLE dependency keeps
# the tick: the one loop ran 8 s with 0 local timer interrupts, and
# made no tick_stop event at all (the tick had stopped in idle before and
# never restarted: rtscope says so from /proc/timer_list). Two loops: 1349
# events, every one SCHED, 1347 timer interrupts in 8 s (HZ 250).
# guests: rt
# append: isolcpus=nohz,domain,managed_irq,1 nohz_full=1 rcu_nocbs=1
# timeout: 120
T=/sys/kernel/tracing
echo "    clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) (available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource))"
check "CPU 1 is nohz_full and isolated" [ "$(cat /sys/devices/system/cpu/nohz_full)/$(cat /sys/devices/system/cpu/isolated)" = 1/1 ]

# loc: CPU 1's local timer interrupts so far (/proc/interrupts LOC).
loc() { awk '$1 == "LOC:" { print $3 }' /proc/interrupts; }

# raw FILE WHAT: tick_stop events of the raw capture FILE matching WHAT.
raw() { grep -c "tick_stop: $2" "$1"; }

# near NAME RTSCOPE RAW: rtscope's count agrees with the raw capture's
# within 2 + 10% (the capture starts when rtscope says it is attached and
# ends after rtscope, a few idle events apart).
near() {
	case $2$3 in '' | *[!0-9]*)
		bad "$1: rtscope ${2:-nothing}, tracefs ${3:-nothing}"
		return
		;;
	esac
	d=$(($2 - $3))
	[ $d -lt 0 ] && d=$((-d))
	check "$1: rtscope $2, tracefs $3" [ $d -le $((2 + $3 / 10)) ]
}

# phase NAME N: rtscope isolation -c 1 for 14 s while N busy loops share
# CPU 1 for 8 s of it, with timer:tick_stop captured over the same run.
# Sets LOC (CPU 1's local timer interrupts during the loops) and J (the
# JSON report).
phase() {
	name=$1
	J=/tmp/$name.json
	rtscope isolation -c 1 -d 14s --allow sh --json $J >/tmp/$name.txt 2>/tmp/$name.err &
	rpid=$!
	attached 90 /tmp/$name.err || return 1
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo 1 >$T/events/timer/tick_stop/enable
	echo 1 >$T/tracing_on
	l0=$(loc)
	pids=
	i=0
	while [ $i -lt "$2" ]; do
		# A subshell of this one (comm sh), moved: busybox's taskset
		# may run its command as an applet or exec it (comm taskset or
		# exe).
		while :; do :; done &
		pids="$pids $!"
		taskset -p -c 1 $! >/dev/null
		i=$((i + 1))
	done
	sleep 8
	kill $pids
	PIDS=$pids
	LOC=$(($(loc) - l0))
	wait $rpid
	echo 0 >$T/tracing_on
	echo 0 >$T/events/timer/tick_stop/enable
	grep tick_stop $T/per_cpu/cpu1/trace >/tmp/$name.raw
	grep -E '^CPU|workload|tick|kept' /tmp/$name.txt | cut -c1-220 | sed 's/^/    /'
	echo "    $name: $2 loop(s) on CPU 1 for 8 s: $LOC local timer interrupts; tracefs tick_stop on CPU 1:"
	sed 's/.*tick_stop: //' /tmp/$name.raw | sort | uniq -c | sed 's/^/      /'
	echo "    rtscope's tick: $(jget $J cpus.0.tick)"
	ge "$name: loops rtscope saw run on CPU 1 (workload $(jget $J cpus.0.workload))" "$(jget $J cpus.0.workload.#)" "$2"
}

phase one 1
LOC1=$LOC
ONE=$J
lt "one loop: local timer interrupts on CPU 1 in 8 s (a running tick at HZ 250: 2000)" "$LOC1" 200
lt "one loop: rtscope's local timer interrupts in its 14 s" "$(jget $ONE cpus.0.tick.timer_irqs)" 280
# The tick stopped: a stop event, or stopped before the run and never
# kept running by a dependency.
st=$(jget $ONE cpus.0.tick.stopped)
if [ "$st" = 0 ]; then
	check "one loop: rtscope says the tick stayed stopped (stopped at the start, no event)" \
		[ "$(jget $ONE cpus.0.tick.stopped_at_start)/$(jget $ONE cpus.0.tick.kept)" = true/0 ]
	check "one loop: its report says so" grep -q 'tick: stopped throughout' /tmp/one.txt
else
	ok "one loop: rtscope counted $st tick stops"
fi
near "one loop: tick stops" "$st" "$(raw /tmp/one.raw success=1)"
near "one loop: tick kept running" "$(jget $ONE cpus.0.tick.kept)" "$(raw /tmp/one.raw success=0)"

phase two 2
TWO=$J
ge "two loops: local timer interrupts on CPU 1 in 8 s (10 times one loop's, 100 at least)" "$LOC" $((LOC1 * 10 + 100))
sched_raw=$(raw /tmp/two.raw 'success=0 dependency=SCHED')
ge "two loops: tracefs tick_stop kept by SCHED" "$sched_raw" 100
sched=$(jget $TWO cpus.0.tick.deps.SCHED)
near "two loops: tick kept running by SCHED" "$sched" "$sched_raw"
near "two loops: tick kept running (every dependency)" "$(jget $TWO cpus.0.tick.kept)" "$(raw /tmp/two.raw success=0)"
check "two loops: the report names SCHED (more than one task)" grep -q 'kept .* by SCHED: more than one task' /tmp/two.txt
for p in $PIDS; do
	check "two loops: SCHED's line names loop sh/$p" sh -c "grep 'by SCHED:' /tmp/two.txt | grep -q 'sh/$p[,)]'"
done
# Every dependency the kernel reported is named, with its count.
for dep in $(sed -n 's/.*success=0 dependency=\([A-Z_]*\).*/\1/p' /tmp/two.raw | sort -u); do
	[ "$dep" = SCHED ] || near "two loops: tick kept running by $dep" "$(jget $TWO cpus.0.tick.deps.$dep)" "$(raw /tmp/two.raw "success=0 dependency=$dep")"
done
finish
