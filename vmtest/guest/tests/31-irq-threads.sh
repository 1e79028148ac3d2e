# Threaded-IRQ handler time on real IRQ threads.
# 1. PREEMPT_RT forces the serial port's handler into irq/4-ttyS0; writing
#    to the console makes it work: its handler time, wakeup latency and
#    response time are reported.
# 2. rtsfi_slowirq's threaded handler spins len_us: its handler time is
#    that long, by construction (same clock), less the hard IRQs that
#    interrupt it.
# guests: rt
# tcg: single
# timeout: 200
if [ "$GUEST" = rt ]; then
	rtscope watch -q -d 14s --json /tmp/s.json --comm irq/4-ttyS0 >/tmp/watch.out 2>&1 &
	pid=$!
	# Console output keeps the serial port's IRQ thread busy while the
	# engine is attached (it may take seconds to attach under TCG).
	i=0
	while kill -0 $pid 2>/dev/null && [ $i -lt 60 ]; do
		sleep 1
		echo "  serial traffic for irq/4-ttyS0 ($i) ....................................................."
		i=$((i + 1))
	done
	wait $pid
	if [ -s /tmp/s.json ]; then
		T='tasks[comm=irq/4-ttyS0]'
		ge "irq/4-ttyS0 handler count" "$(jget /tmp/s.json "$T.metrics.handler.count")" 1
		ge "irq/4-ttyS0 latency count" "$(jget /tmp/s.json "$T.metrics.latency.count")" 1
		ge "irq/4-ttyS0 response count" "$(jget /tmp/s.json "$T.metrics.response.count")" 1
		ge "irq/4-ttyS0 handler max (ns)" "$(jget /tmp/s.json "$T.metrics.handler.max_ns")" 1
	else
		tail -4 /tmp/watch.out | cut -c1-300
		bad "rtscope watch --comm irq/4-ttyS0"
	fi
fi

modload rtsfi_slowirq len_us=2000 period_us=20000 cpu=1 || finish
irq=$(modparam rtsfi_slowirq irq)
if watch_json /tmp/h.json -d 12s --comm "irq/$irq-slowirq"; then
	T="tasks[comm=irq/$irq-slowirq]"
	ge "irq/$irq-slowirq handler count" "$(jget /tmp/h.json "$T.metrics.handler.count")" 50
	# rtscope counts the handler's own time: hard IRQs that interrupt the
	# 2000 us spin are not in it, so allow 10%.
	ge "irq/$irq-slowirq handler p50 (ns), the module spins 2000 us" "$(jget /tmp/h.json "$T.metrics.handler.p50_ns")" 1800000
	ge "irq/$irq-slowirq handler max (ns)" "$(jget /tmp/h.json "$T.metrics.handler.max_ns")" 1800000
	ge "irq/$irq-slowirq response count" "$(jget /tmp/h.json "$T.metrics.response.count")" 50
	check "irq/$irq-slowirq is FIFO 50" [ "$(jget /tmp/h.json "$T.policy") $(jget /tmp/h.json "$T.priority")" = "FIFO 50" ]
fi
rmmod rtsfi_slowirq
finish
