# The rt-throttling scenario's signature test (internal/scenario) in the
# guest: a FIFO control loop and a FIFO hog take a CPU a SCHED_OTHER thread
# wants too, and throttling gives that thread ~50 ms a second. The rt
# guest's kernel (before 6.12) throttles by rt_rq bandwidth
# (sched_rt_runtime_us), the host's 6.18 by the fair server: the same rule
# names both (docs/throttling.md).
# guests: rt
# tcg: single
# timeout: 200
cd /tmp || exit 1
echo "sched_rt_runtime_us $(cat /proc/sys/kernel/sched_rt_runtime_us) of $(cat /proc/sys/kernel/sched_rt_period_us)"
RTSCOPE_TEST_EMULATED=1 scenario.test -test.v -test.timeout 180s -test.run '^TestSignatureRTThrottling$' >/tmp/thr.log 2>&1
rc=$?
grep -E '^(=== RUN|--- |    |ok|FAIL|PASS)|scenario child:' /tmp/thr.log | cut -c1-220
check "rt-throttling signature test (exit status $rc)" [ "$rc" = 0 ]
finish
