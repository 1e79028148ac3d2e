# rtla osnoise (Debian's rtla, the kernel's osnoise tracer) on the isolated
# CPU 1 of the PREEMPT_RT guest, its thread osnoise/1 at FIFO 10, while
# rtscope watch tracks that thread (issue 38: osnoise agreement in the RT
# guest). A FIFO thread that never sleeps is RT-throttled
# (sched_rt_runtime_us): osnoise counts each throttled interval as thread
# noise of the task that ran instead (idle, swapper/1), rtscope as a
# throttled switch-out of its thread. The OS-noise counts are compared:
# those, and rtscope's parts by cause (noise_by_cause) against osnoise's
# events on CPU 1, irq and timer_irq parts against irq_noise of the local
# timer and device IRQs (rtscope takes no IPI vector as a part), softirq
# parts against softirq_noise (none on PREEMPT_RT: softirqs are threads).
# Not times: under TCG most of osnoise's noise is HW noise (the emulator
# running the other vCPU, no event in the guest), which no guest event sees
# and which rtscope's timer interrupt part takes in from the timer's due
# time (docs/noise.md, "rtla osnoise in the RT guest"). Seen: 8 and 8 throttled intervals (osnoise's
# largest 264.1 ms, rtscope's throttling part of its worst window 271.9 ms),
# then 10 and 10 (566.4 ms net of nested IRQs, rtla's max single 616.0 ms;
# rtscope 607.0 ms), then 11 against 10.
# guests: rt
# append: isolcpus=nohz,domain,managed_irq,1 nohz_full=1 rcu_nocbs=1
# timeout: 150
T=/sys/kernel/tracing
grep -qw osnoise $T/available_tracers || skip "no osnoise tracer in this kernel"
rm -f /tmp/os.json
rtscope watch -q -H 0 --json /tmp/os.json --comm osnoise/1 -d 120s >/tmp/watch.out 2>&1 &
wpid=$!
attached 90 || bad "rtscope watch did not attach"
echo 0 >$T/tracing_on
echo >$T/trace
for e in irq_noise softirq_noise thread_noise nmi_noise; do echo 1 >$T/events/osnoise/$e/enable; done
echo 1 >$T/tracing_on
rtla osnoise top -c 1 -d 10 -q -P f:10 >/tmp/rtla.out 2>&1
check "rtla osnoise top -c 1 -d 10 -P f:10 (exit status $?)" [ $? = 0 ]
echo 0 >$T/tracing_on
for e in irq_noise softirq_noise thread_noise nmi_noise; do echo 0 >$T/events/osnoise/$e/enable; done
kill -INT $wpid
wait $wpid
grep -v '^$' /tmp/rtla.out | sed 's/\x1b\[[0-9;]*m//g' | tail -2 | sed 's/^/    /'
grep -E '_noise:' $T/per_cpu/cpu1/trace >/tmp/os.raw
echo "    tracefs osnoise events on CPU 1: count, sum and max of durations (ns), by event and source:"
awk '{ for (i = 1; i <= NF; i++) { if ($i == "duration") d = $(i + 1); if ($i ~ /_noise:$/) { ev = $i; src = $(i + 1) } }
	if (ev == "nmi_noise:") src = "-"
	sub(/:[0-9]+$/, "", src); k = ev " " src; n[k]++; s[k] += d; if (d > m[k]) m[k] = d }
	END { for (k in n) printf "      %-40s %6d %12.0f %10.0f\n", k, n[k], s[k], m[k] }' /tmp/os.raw | sort
grep -E 'osnoise/1' /tmp/watch.out | cut -c1-250 | sed 's/^/    /'
N='tasks[comm=osnoise/1]'
echo "    rtscope noise: $(jget /tmp/os.json "$N.metrics.noise.count") intervals, max $(jget /tmp/os.json "$N.metrics.noise.max_ns") ns, $(jget /tmp/os.json "$N.noise_ns_per_s") ns/s; tracked $(jget /tmp/os.json "$N.sched_times")"
check "rtscope tracked osnoise/1 at FIFO 10" grep -q '"FIFO 10"' /tmp/os.json
idle=$(grep -c 'thread_noise: *swapper/1:' /tmp/os.raw)
all=$(grep -c 'thread_noise:' /tmp/os.raw)
thr=$(jget /tmp/os.json "$N.counters.throttled")
ge "osnoise: throttled intervals (thread noise of swapper/1)" "$idle" 3
ge "rtscope: throttled intervals of osnoise/1, osnoise's idle noise $idle less one" "$thr" $((idle - 1))
# Two more at most: a third boot counted 11 against osnoise's 10 (a
# switch-out to a lower class at the run's edge, as rtla stops the tracer,
# is one with no osnoise sample around it).
lt "rtscope: throttled intervals of osnoise/1, osnoise's thread noise events $all and two" "$thr" $((all + 3))
# Parts by cause against osnoise's events, over the same run: the IPI
# vectors osnoise counts as irq_noise are no noise part of rtscope's.
num() { case $1 in '' | missing | null) echo 0 ;; *) echo "$1" ;; esac; }
ipi='reschedule|call_function|call_function_single|irq_work|thermal_apic|x86_platform_ipi|error_apic|spurious_apic'
os_hard=$(awk -v ipi="^($ipi):" '/ irq_noise: / { for (i = 1; i <= NF; i++) if ($i == "irq_noise:") src = $(i + 1); if (src !~ ipi) n++ } END { print n + 0 }' /tmp/os.raw)
os_ipi=$(($(grep -c ' irq_noise: ' /tmp/os.raw) - os_hard))
os_soft=$(grep -c 'softirq_noise:' /tmp/os.raw)
rt_irq=$(num "$(jget /tmp/os.json "$N.noise_by_cause.irq.count")")
rt_timer=$(num "$(jget /tmp/os.json "$N.noise_by_cause.timer_irq.count")")
rt_soft=$(num "$(jget /tmp/os.json "$N.noise_by_cause.softirq.count")")
echo "    by cause: rtscope irq $rt_irq + timer_irq $rt_timer = $((rt_irq + rt_timer)) parts, softirq $rt_soft;" \
	"osnoise irq_noise $os_hard (local timer and devices; $os_ipi more of IPI vectors), softirq_noise $os_soft"
echo "    rtscope noise_by_cause: $(jget /tmp/os.json "$N.noise_by_cause")"
# Within 10% and 5: osnoise counts the interrupts of its CPU while its
# thread is throttled too (its sampling goes on), rtscope only while the
# thread is current. Seen (one boot, 2026-11-28): 1927 timer_irq parts
# against 2065 local_timer irq_noise events (rtla's IRQ column: 2013), 0
# softirq parts and events; the local timer events inside swapper/1's
# throttled intervals are printed for the next run (written after it).
idle_lt=$(awk 'NR == FNR { if ($0 ~ / thread_noise: *swapper\/1:/) { for (i = 1; i <= NF; i++) { if ($i == "start") s = $(i + 1); if ($i == "duration") d = $(i + 1) }
		n++; from[n] = s; to[n] = s + d / 1e9 }; next }
	/ irq_noise: local_timer:/ { for (i = 1; i <= NF; i++) if ($i == "start") s = $(i + 1)
		for (j = 1; j <= n; j++) if (s >= from[j] && s <= to[j]) { idle++; break } }
	END { print idle + 0 }' /tmp/os.raw /tmp/os.raw)
echo "    osnoise local_timer irq_noise inside swapper/1's thread noise (throttled): $idle_lt"
within() { d=$(($2 - $3)); [ $d -lt 0 ] && d=$((-d)); [ $d -le $(($3 / 10 + 5)) ]; }
ge "osnoise: irq_noise events of the local timer and devices on CPU 1" "$os_hard" 100
check "rtscope's irq + timer_irq parts $((rt_irq + rt_timer)) within 10% + 5 of osnoise's irq_noise $os_hard" within x $((rt_irq + rt_timer)) "$os_hard"
check "rtscope's softirq parts $rt_soft within 10% + 5 of osnoise's softirq_noise $os_soft" within x "$rt_soft" "$os_soft"
finish
