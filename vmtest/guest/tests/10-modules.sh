# Each fault-injection module loads, injects (its `fired` counter moves)
# and unloads cleanly.
# guests: rt std
# timeout: 60
for m in rtsfi_hardirq rtsfi_preemptoff rtsfi_irqoff rtsfi_slowirq; do
	modload $m len_us=200 period_us=2000 cpu=1 || continue
	sleep 1
	n=$(modparam $m fired)
	ge "$m fired" "$n" 1
	if [ $m = rtsfi_slowirq ]; then
		irq=$(modparam $m irq)
		count=$(awk -v i="$irq:" '$1 == i {print $2 + $3}' /proc/interrupts)
		ge "/proc/interrupts count of irq $irq" "${count:-0}" 1
		check "IRQ thread irq/$irq-slowirq exists" sh -c "ps -o comm | grep -q 'irq/$irq-slowirq'"
	fi
	check "rmmod $m" rmmod $m
done
check "bad parameters are refused (len_us > period_us/2)" sh -c '! insmod /lib/modules/rtsfi_hardirq.ko len_us=1500 period_us=2000 2>/dev/null'
finish
