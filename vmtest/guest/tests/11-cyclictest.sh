# The latency each injector causes is visible to cyclictest. cyclictest
# (1 ms period) shares a CPU with a 4 ms injection every 40 ms: a wake-up
# falls in the first millisecond of every injection and is late by at
# least 3 ms, the next one by 2 ms. So each of the 75 injections of a 3 s
# run leaves samples >= 2000 us, by construction; host noise only adds
# samples, so we require as many as half the injections (see lib.sh). The
# slow threaded IRQ runs at FIFO 50 on either CPU: only a lower-priority
# cyclictest (FIFO 40, one thread per CPU) waits for it.
# guests: rt std
# timeout: 90
EXPECT=75
cyclictest_over 2000 -t1 -a1 -p80 -i1000 -D3
echo "  baseline (no injector): $OVER samples >= 2000 us"
for m in rtsfi_hardirq rtsfi_preemptoff rtsfi_irqoff rtsfi_slowirq; do
	modload $m len_us=4000 period_us=40000 cpu=1 || continue
	if [ $m = rtsfi_slowirq ]; then
		fired_during $m cyclictest_over 2000 -S -p40 -i1000 -D3
	else
		fired_during $m cyclictest_over 2000 -t1 -a1 -p80 -i1000 -D3
	fi
	rmmod $m
	ge "$m injections during the run" "$FIRED" $((EXPECT / 2))
	ge "cyclictest samples >= 2000 us with $m" "$OVER" $((EXPECT / 2))
done
finish
