# rtscope watch catches each fault-injection module in a victim's worst
# case, and the worst-case window shows the culprit (the auto-analysis
# verdict is printed when rtscope has one). Victim: vmkit periodic, 1 ms,
# FIFO 80 (FIFO 40 for the slow IRQ thread, which runs at FIFO 50), on the
# injector's CPU. One vCPU: with two, single-threaded TCG lets a busy vCPU
# hold the other's interrupts for up to 100 ms, longer than an injection.
# Injection: 20 ms every 400 ms (7 in the victim's 3 s), long enough to
# stand out of the emulator's usual stalls; the wake-up due in the first
# millisecond of an injection is >= 19 ms late. The period is 400.137 ms,
# not a whole number of the victim's periods, so that the injections do not
# all start at the same point of its cycle (see 20-rtla).
# Under TCG, attaching the engine stalls the guest for up to seconds: the
# victim is created 7 s after rtscope started (--comm tracks later tasks),
# so its samples start once the engine has settled. Host noise can still
# make a longer worst case elsewhere: one retry.
# guests: rt std
# tcg: single
# cpus: 1
# timeout: 400

CPU=$(($(nproc) - 1))

# victim_watch PRIO: watch a 3 s victim created once the engine settled.
# Exec'd as "victim" so that the name is there from exec on (rtscope does
# not pick up a later prctl(PR_SET_NAME) rename); only the measuring thread
# is SCHED_FIFO.
victim_watch() {
	ln -sf /bin/vmkit /tmp/victim
	(sleep 7 && exec /tmp/victim periodic -n victim -i 1ms -p "$1" -cpu "$CPU" -d 3s >/tmp/victim.out) &
	watch_json /tmp/v.json -d 12s --comm victim
	r=$?
	wait
	sed 's/^/    /' /tmp/victim.out
	return $r
}

# culprit METRIC FILTER...: does the victim's worst METRIC (>= 19 ms) window
# have an event matching one of the FILTERs (vmkit filter syntax)?
culprit() {
	V='tasks[comm=victim&policy=FIFO]'
	max=$(jget /tmp/v.json "$V.metrics.$1.max_ns")
	echo "    worst $1: $max ns; verdict: $(jget /tmp/v.json "$V.metrics.$1.verdict")"
	case $max in '' | null | missing) return 1 ;; esac
	[ "$max" -ge 19000000 ] || return 1
	metric=$1
	shift
	for f in "$@"; do
		[ "$(jget /tmp/v.json "$V.metrics.$metric.worst.events[$f].type")" != missing ] && return 0
	done
	return 1
}

# inject MODULE PRIO METRIC FILTER DESC VERDICT: load MODULE (20 ms every
# 400 ms), watch a victim at FIFO PRIO; its worst METRIC window must show
# the culprit (one of FILTER's events) and its verdict must match the shell
# pattern VERDICT (the cause, named).
inject() {
	m=$1
	modload $m len_us=20000 period_us=400137 cpu="$CPU" || return
	found=no
	for try in 1 2; do
		victim_watch "$2" || break
		# shellcheck disable=SC2086 # several filters, split on spaces
		if culprit "$3" $4; then
			found=yes
			break
		fi
		echo "    (try $try: the worst $3 does not show the injection; its window:)"
		vmkit get /tmp/v.json "tasks[comm=victim&policy=FIFO].metrics.$3.worst.events" 2>&1 | sed 's/},{/}\n{/g' | cut -c1-240 | tail -25 | sed 's/^/      /'
	done
	rmmod $m
	check "$m: the victim's worst $3 (>= 19 ms) window shows $5" [ $found = yes ]
	verdict=$(jget /tmp/v.json "tasks[comm=victim&policy=FIFO].metrics.$3.verdict")
	# shellcheck disable=SC2254 # the pattern is meant to glob
	case $verdict in
	$6) ok "$m: the verdict names the cause ($6)" ;;
	*) bad "$m: verdict \"$verdict\", want $6" ;;
	esac
}

inject rtsfi_hardirq 80 timer-irq 'type=timer_entry&function=rtsfi_hardirq_fn' "the hrtimer callback rtsfi_hardirq_fn" \
	'hard-IRQ noise:*rtsfi_hardirq_fn (hard IRQ)*'
inject rtsfi_irqoff 80 timer-irq "type=stack&comm=rtsfi_irqoff/$CPU type=switch&next_comm=rtsfi_irqoff/$CPU" "rtsfi_irqoff/$CPU on the CPU (its stack, or the switch to it)" \
	"timer interrupt delayed:*while CPU $CPU ran rtsfi_irqoff/$CPU/*interrupts were disabled*"
inject rtsfi_preemptoff 80 latency "type=switch&prev_comm=rtsfi_preempt/$CPU&next_comm=victim" "the switch from rtsfi_preempt/$CPU to the victim" \
	"non-preemptible kernel section:*rtsfi_preempt/$CPU/*"
modload rtsfi_slowirq len_us=1000 period_us=200000 cpu="$CPU" && {
	irq=$(modparam rtsfi_slowirq irq)
	rmmod rtsfi_slowirq
	inject rtsfi_slowirq 40 latency "type=switch&prev_comm=irq/$irq-slowirq&next_comm=victim" "the switch from irq/$irq-slowirq to the victim" \
		"interference by a higher priority: irq/$irq-slowirq/*(FIFO 50)*"
}
finish
