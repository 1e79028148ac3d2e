# Without kernel BTF, rtscope watch picks the classic engine by itself and
# says so; the BTF engine, given a copy of the kernel's BTF with --btf,
# watches the same task at the same time (a 6.1 kernel, amd64 and arm64).
# BTF is made unreadable to user space by bind-mounting an empty file over
# /sys/kernel/btf/vmlinux (the kernel keeps its own). Both watchers are
# attached and tracking by name before the periodic SCHED_FIFO task
# (vmkit periodic, as in 30-watch) starts, and stopped after it ended, as
# tests/TestClassicEngineAgrees does on the host: both see every cycle of
# the same run, its stalls included, and each metric's sample count, p50
# and p99 must agree (see agree below for the tolerance).
# guests: std arm64
# tcg: single
# timeout: 300
: >/tmp/empty-btf
cp /sys/kernel/btf/vmlinux /tmp/vmlinux.btf || { bad "copy /sys/kernel/btf/vmlinux"; finish; }
mount --bind /tmp/empty-btf /sys/kernel/btf/vmlinux || { bad "bind-mount over /sys/kernel/btf/vmlinux"; finish; }
rm -f /tmp/c.json /tmp/b.json
rtscope watch -q --json /tmp/c.json -d 280s --comm vmper >/tmp/watch-classic.out 2>&1 &
cpid=$!
rtscope watch -q --json /tmp/b.json -d 280s --btf /tmp/vmlinux.btf --comm vmper >/tmp/watch-btf.out 2>&1 &
bpid=$!
if attached 120 /tmp/watch-classic.out && attached 120 /tmp/watch-btf.out; then
	vmkit periodic -n vmper -i 4ms -p 80 -cpu 1 -d 8s
	sleep 1 # the loop's last notices reach both watchers at their next polls
else
	bad "both engines attached"
fi
kill -INT $cpid $bpid
wait $cpid
crc=$?
wait $bpid
brc=$?
umount /sys/kernel/btf/vmlinux
for w in classic:$crc:/tmp/c.json btf:$brc:/tmp/b.json; do
	IFS=: read -r name rc f <<EOF
$w
EOF
	if [ "$rc" != 0 ] || [ ! -s "$f" ]; then
		head -4 /tmp/watch-$name.out | cut -c1-300 | sed 's/^/    /'
		tail -4 /tmp/watch-$name.out | cut -c1-300 | sed 's/^/    /'
		bad "rtscope watch ($name engine): exit status $rc"
	fi
done
[ -s /tmp/c.json ] && [ -s /tmp/b.json ] || finish
T='tasks[comm=vmper]'
check "engine chosen: classic" [ "$(jget /tmp/c.json features.engine)" = classic ]
check "the choice is said on stderr" grep -q "no usable kernel BTF.*classic engine" /tmp/watch-classic.out
note=$(jget /tmp/c.json features.engine_note)
case $note in
*"vmlinux is empty"*) ok "engine_note names the missing BTF" ;;
*) bad "engine_note: $note" ;;
esac
check "--btf FILE: engine btf" [ "$(jget /tmp/b.json features.engine)" = btf ]
check "vmper is FIFO 80 (classic)" [ "$(jget /tmp/c.json "$T.policy") $(jget /tmp/c.json "$T.priority")" = "FIFO 80" ]
check "vmper is FIFO 80 (btf)" [ "$(jget /tmp/b.json "$T.policy") $(jget /tmp/b.json "$T.priority")" = "FIFO 80" ]
np=$(jget /tmp/c.json "$T.nominal_period_ns")
ge "nominal period (ns)" "$np" 3999000
lt "nominal period (ns)" "$np" 4001000
irq=$(jget /tmp/c.json "$T.metrics.timer-irq.max_ns")
thr=$(jget /tmp/c.json "$T.metrics.timer-thread.max_ns")
check "timer-irq max ($irq) <= timer-thread max ($thr)" [ "$irq" -le "$thr" ]
check "no task left untracked, no notice lost" [ "$(jget /tmp/c.json lost.tasks_not_tracked) $(jget /tmp/c.json lost.notices)" = "0 0" ]

# agree WHAT B C PCT SLOP_NS: B and C (ns or counts) differ by at most PCT %
# of the larger plus SLOP_NS.
agree() {
	case "$2 $3" in
	*null* | *missing* | *[!0-9\ ]*)
		bad "$1: btf $2, classic $3: not numbers"
		return
		;;
	esac
	# (busybox sh has no local variables: these names are agree's own)
	ag_d=$(($2 - $3))
	[ $ag_d -lt 0 ] && ag_d=$((-ag_d))
	ag_max=$2
	[ "$3" -gt "$ag_max" ] && ag_max=$3
	ag_tol=$((ag_max * $4 / 100 + $5))
	if [ $ag_d -le $ag_tol ]; then
		ok "$1: btf $2, classic $3 (tolerance $ag_tol)"
	else
		bad "$1: btf $2, classic $3, differ by $ag_d > $ag_tol"
	fi
}

# Tolerance. Both engines measure the same events, so a host stall delays
# both alike; they differ by the histogram's error (a value is known to its
# bucket, which spans up to 12.5%) and by the run time of the engine whose
# programs run first on a tracepoint, which delays the other's timestamps:
# 2-6 us on the host, up to ~100 us under TCG on a loaded host, where the
# JITed BPF is itself emulated. Counts: within 2% + 2 (both see the whole
# run; 0-6 apart seen: the classic programs do not nest). p50: 25% + 50 us (two buckets and that delay).
# p99 is one of the 4-18 largest of 440-1800 samples: 40% + 100 us. A
# metric measured from the wrong event, or stalls one engine misses, is off
# by far more (a factor). Seen (2026-11-23, 4 ms loop for 8 s, four runs
# per guest, btf/classic): p99 equal in 57 of 64 metric-runs, else up to
# 26% apart (arm64 jitter 17.8/24.1 ms, latency 24.1/28.3 ms; std latency
# 2.49/2.03 ms); p50 up to 21% apart on std (cycle 754/623 us, host
# loaded) and 26% on arm64 (jitter 377/475 us), else within two buckets.
compared=0
for m in latency timer-irq timer-thread timer-user response cycle period jitter iteration; do
	nb=$(jget /tmp/b.json "$T.metrics.$m.count")
	nc=$(jget /tmp/c.json "$T.metrics.$m.count")
	[ "$nb" = 0 ] && [ "$nc" = 0 ] && continue # neither can see it here
	if [ $m = timer-user ] && [ "$nc" = 0 ]; then
		# The classic engine has it only through rseq_update (engine_limits),
		# and vmkit's Go thread has no rseq area; the BTF engine's fexit
		# on hrtimer_nanosleep sees it where the kernel allows fexit.
		ok "timer-user: btf $nb, classic none (no rseq area: a documented limit)"
		continue
	fi
	case $m in
	latency | timer-irq | timer-thread | response | cycle | period) ge "$m count (classic)" "$nc" 300 ;;
	esac
	agree "$m count" "$nb" "$nc" 2 2
	agree "$m p50 (ns)" "$(jget /tmp/b.json "$T.metrics.$m.p50_ns")" "$(jget /tmp/c.json "$T.metrics.$m.p50_ns")" 25 50000
	agree "$m p99 (ns)" "$(jget /tmp/b.json "$T.metrics.$m.p99_ns")" "$(jget /tmp/c.json "$T.metrics.$m.p99_ns")" 40 100000
	compared=$((compared + 1))
done
ge "metrics compared" $compared 6
finish
