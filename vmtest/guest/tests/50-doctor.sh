# rtscope doctor reads this kernel's set-up without debugfs: on the
# PREEMPT_RT guest the preemption model is rt (from /sys/kernel/realtime),
# elsewhere it is not; QEMU is found as the hypervisor; every check has a
# status; the exit status follows the failed checks.
# guests: rt std arm64
# timeout: 60
need_command doctor
# Debugfs would give the PREEMPT_DYNAMIC mode directly: doctor must not need it.
umount /sys/kernel/debug 2>/dev/null
rtscope doctor --json /tmp/d.json --sample 500ms >/tmp/doctor.out 2>&1
rc=$?
sed 's/^/    /' /tmp/doctor.out | cut -c1-160
check "schema rtscope.doctor/v1" [ "$(jget /tmp/d.json schema)" = rtscope.doctor/v1 ]
model=$(jget /tmp/d.json 'checks[name=preemption].data.model')
echo "    model: $model ($(jget /tmp/d.json 'checks[name=preemption].data.source'))"
if [ "$GUEST" = rt ]; then
	check "preemption model rt on the PREEMPT_RT kernel" [ "$model" = rt ]
	check "preemption check passes" [ "$(jget /tmp/d.json 'checks[name=preemption].status')" = pass ]
else
	check "preemption model not rt ($model)" [ "$model" != rt ]
fi
check "QEMU found as the hypervisor" [ "$(jget /tmp/d.json 'checks[name=hypervisor].data.virtual')" = true ]
check "clock source read" [ "$(jget /tmp/d.json 'checks[name=clocksource].data.current')" != missing ]
fails=$(jget /tmp/d.json summary.fail)
want=0
[ "$fails" != 0 ] && want=2
check "exit status $rc: $fails failed checks" [ "$rc" = "$want" ]
finish
