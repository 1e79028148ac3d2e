# rtscope timerlat and rtla timerlat side by side on the PREEMPT_RT guest,
# without and with an injector: both catch the injected latency and put
# it on the same side (IRQ for a hard-IRQ busy loop, thread for a
# preemption-off section); the maxima are recorded, not compared (see
# 20-rtla and lib.sh for the counting). rtscope loads BPF programs, so this
# runs under single-threaded TCG, where a vCPU's timer interrupt often
# comes late enough that timers due close together expire in one
# interrupt: with 4 ms injections, the timerlat timer due just before one
# then fired on time and only its thread waited (rtla put a hard-IRQ loop
# on the thread side). Injections of 20 ms every 200 ms put ~19 timerlat
# expiries inside each loop: the first one after it is IRQ-late by
# >= 10 ms once per injection (30 in 6 s). The period is 200.137 ms so
# that injections do not all start in the same place of the 1 ms cycle
# (see 20-rtla).
# guests: rt
# tcg: single
# timeout: 300
EXPECT=30
for tool in rtla rtscope; do
	timerlat_over $tool 10000 -d 6
	echo "  $tool baseline: IRQ $IRQ_OVER, thread $THR_OVER samples >= 10000 us"
done
for m in rtsfi_hardirq rtsfi_preemptoff; do
	want=irq
	[ $m = rtsfi_preemptoff ] && want=thread
	modload $m len_us=20000 period_us=200137 cpu=1 || continue
	# rtscope's engine stalls the emulated guest while it attaches: let
	# it settle with a first run (not counted).
	rtscope timerlat -q -c 1 -d 1 >/dev/null 2>&1
	for tool in rtla rtscope; do
		timerlat_over $tool 10000 -d 6
		side=$(timerlat_side $EXPECT)
		eval "side_$tool=$side max_$tool=\"IRQ $IRQ_MAX us, thread $THR_MAX us\""
	done
	rmmod $m
	echo "  $m: rtla max $max_rtla, side $side_rtla; rtscope max $max_rtscope, side $side_rtscope"
	check "rtla puts $m on the $want side" [ "$side_rtla" = $want ]
	check "rtscope timerlat agrees with rtla on $m ($side_rtscope)" [ "$side_rtscope" = "$side_rtla" ]
done
finish
