# SCHED_DEADLINE (docs/deadline.md): the healthy-deadline and
# deadline-overrun scenarios' signature tests of the host, in the guest: a
# DEADLINE task of 1.5 ms every 5 ms, its jobs counted (15% of its periods
# under TCG, 5% on a host), 88% of healthy jobs yielded under TCG, its parameters shown, 20% of its instances
# overrun in the overrun scenario (12-28% under TCG) and judged FAIL with a
# DEADLINE reason. The rt guest (6.1) has no fair server: its DEADLINE task
# shares the CPU with nothing else of the scenario.
# guests: rt std
# tcg: single
# timeout: 300
cd /tmp || exit 1
RTSCOPE_TEST_EMULATED=1 scenario.test -test.v -test.timeout 280s -test.run '^TestSignature(HealthyDeadline|DeadlineOverrun)$' >/tmp/dl.out 2>&1
rc=$?
grep -E '^(=== RUN|--- |ok|FAIL|PASS)|dljob:|attempt' /tmp/dl.out | cut -c1-220
check "DEADLINE scenarios: jobs, yields and overruns counted (exit status $rc)" [ "$rc" = 0 ]
finish
