# Without kernel BTF, rtscope watch picks the classic engine by itself, says
# so, and measures a periodic SCHED_FIFO task (vmkit periodic, as in
# 30-watch). BTF is made unreadable to user space by bind-mounting an empty
# file over /sys/kernel/btf/vmlinux (the kernel keeps its own). Relations
# only, as in 30-watch: counts, the detected period, IRQ part <= thread part.
# Then, BTF still hidden, --btf with a copy of the kernel's BTF taken before
# runs the full BTF engine on the same task (a 6.1 kernel, amd64 and arm64).
# guests: std arm64
# tcg: single
# timeout: 240
: >/tmp/empty-btf
cp /sys/kernel/btf/vmlinux /tmp/vmlinux.btf || { bad "copy /sys/kernel/btf/vmlinux"; finish; }
mount --bind /tmp/empty-btf /sys/kernel/btf/vmlinux || { bad "bind-mount over /sys/kernel/btf/vmlinux"; finish; }
watch_json /tmp/c.json -d 40s -- sh -c 'sleep 4; exec vmkit periodic -n vmper -i 2ms -p 80 -cpu 1 -d 3s'
cp /tmp/watch.out /tmp/watch-classic.out
watch_json /tmp/b.json -d 40s --btf /tmp/vmlinux.btf -- sh -c 'sleep 4; exec vmkit periodic -n vmper -i 2ms -p 80 -cpu 1 -d 2s'
umount /sys/kernel/btf/vmlinux
if [ -s /tmp/b.json ]; then
	check "--btf FILE: engine btf" [ "$(jget /tmp/b.json features.engine)" = btf ]
	ge "--btf FILE: vmper cycle count" "$(jget /tmp/b.json 'tasks[comm=vmper].metrics.cycle.count')" 300
fi
[ -s /tmp/c.json ] || finish
T='tasks[comm=vmper]'
check "engine chosen: classic" [ "$(jget /tmp/c.json features.engine)" = classic ]
check "the choice is said on stderr" grep -q "no usable kernel BTF.*classic engine" /tmp/watch-classic.out
note=$(jget /tmp/c.json features.engine_note)
case $note in
*"vmlinux is empty"*) ok "engine_note names the missing BTF" ;;
*) bad "engine_note: $note" ;;
esac
check "vmper is FIFO 80" [ "$(jget /tmp/c.json "$T.policy") $(jget /tmp/c.json "$T.priority")" = "FIFO 80" ]
for m in latency timer-irq timer-thread response cycle period; do
	ge "$m count" "$(jget /tmp/c.json "$T.metrics.$m.count")" 300
done
np=$(jget /tmp/c.json "$T.nominal_period_ns")
ge "nominal period (ns)" "$np" 1999000
lt "nominal period (ns)" "$np" 2001000
irq=$(jget /tmp/c.json "$T.metrics.timer-irq.max_ns")
thr=$(jget /tmp/c.json "$T.metrics.timer-thread.max_ns")
check "timer-irq max ($irq) <= timer-thread max ($thr)" [ "$irq" -le "$thr" ]
check "no task left untracked, no notice lost" [ "$(jget /tmp/c.json lost.tasks_not_tracked) $(jget /tmp/c.json lost.notices)" = "0 0" ]
finish
