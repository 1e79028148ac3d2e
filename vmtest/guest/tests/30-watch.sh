# rtscope watch loads its BPF engine on this kernel and measures a periodic
# SCHED_FIFO task it launches (vmkit periodic: absolute 2 ms clock_nanosleep
# loop, FIFO 80, CPU 1). Under TCG, attaching and detaching the engine's
# programs patches kernel text and stalls the guest for seconds, so the
# workload starts 4 s after launch. Relations only: counts, the detected
# period (from the timer expiries, not from timing), IRQ part <= thread
# part, the worst-case window naming the task, no task or notice lost.
# guests: rt std arm64
# tcg: single
# timeout: 150
watch_json /tmp/w.json -d 40s -- sh -c 'sleep 4; exec vmkit periodic -n vmper -i 2ms -p 80 -cpu 1 -d 3s' || finish
T='tasks[comm=vmper]'
check "schema rtscope.watch/v2" [ "$(jget /tmp/w.json schema)" = rtscope.watch/v2 ]
check "task vmper reported" [ "$(jget /tmp/w.json "$T.comm")" = vmper ]
check "vmper is FIFO 80" [ "$(jget /tmp/w.json "$T.policy") $(jget /tmp/w.json "$T.priority")" = "FIFO 80" ]
# 3 s of a 2 ms loop: 1500 releases at most. Under TCG the loop falls
# behind and its absolute deadlines are already past (no sleep, no release):
# 600-700 were seen, so ask for a fifth.
for m in latency timer-irq timer-thread response cycle period; do
	ge "$m count" "$(jget /tmp/w.json "$T.metrics.$m.count")" 300
done
np=$(jget /tmp/w.json "$T.nominal_period_ns")
ge "nominal period (ns)" "$np" 1999000
lt "nominal period (ns)" "$np" 2001000
irq=$(jget /tmp/w.json "$T.metrics.timer-irq.max_ns")
thr=$(jget /tmp/w.json "$T.metrics.timer-thread.max_ns")
check "timer-irq max ($irq) <= timer-thread max ($thr)" [ "$irq" -le "$thr" ]
check "no handler time for a plain task" [ "$(jget /tmp/w.json "$T.metrics.handler.count")" = 0 ]
tid=$(jget /tmp/w.json "$T.tid")
check "worst latency window: a wakeup of vmper ($tid)" [ "$(jget /tmp/w.json "$T.metrics.latency.worst.events[type=wakeup&tid=$tid].type")" = wakeup ]
check "no task left untracked, no notice lost" [ "$(jget /tmp/w.json lost.tasks_not_tracked) $(jget /tmp/w.json lost.notices)" = "0 0" ]
finish
