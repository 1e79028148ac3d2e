# rtla timerlat (Debian's rtla) on the PREEMPT_RT guest tells the injector
# families apart by its IRQ/thread split: a hard-IRQ busy loop or an
# interrupts-off section delays the timer IRQ itself (IRQ latency), a
# preemption-off section delays only the thread after an on-time IRQ.
# Counting as in 11-cyclictest (see lib.sh): every 20 ms injection leaves
# a timerlat sample (1 ms period) >= 10000 us, 30 injections in 6 s (long
# injections because single-threaded TCG coalesces timer interrupts, see
# 40-timerlat). Host
# noise makes IRQ and thread latency high together, so thread-only excess
# is the preemption-off signature.
# The injection period is 200.137 ms, not 200: a hard-IRQ loop that starts
# after the timerlat IRQ and before its thread re-arms the timer delays
# only the thread, and with a period that is a whole number of timerlat
# periods every injection fell there in 1 run of 3 (IRQ 0, thread-only 30).
# The odd period moves each injection to another point of the 1 ms cycle.
# guests: rt
# timeout: 90
EXPECT=30
timerlat_over rtla 10000 -d 6
echo "  baseline: IRQ $IRQ_OVER, thread $THR_OVER samples >= 10000 us"
for m in rtsfi_hardirq rtsfi_irqoff rtsfi_preemptoff; do
	modload $m len_us=20000 period_us=200137 cpu=1 || continue
	fired_during $m timerlat_over rtla 10000 -d 6
	rmmod $m
	ge "$m injections during the run" "$FIRED" $((EXPECT / 2))
	side=$(timerlat_side $EXPECT)
	want=irq
	[ $m = rtsfi_preemptoff ] && want=thread
	check "rtla puts $m on the $want side (IRQ $IRQ_OVER, thread-only $((THR_OVER - IRQ_OVER)) of $EXPECT injections): $side" [ $side = $want ]
done
finish
