# The scenario signature tests of the host (internal/scenario), run in the
# guest by their own test binary: each failure mode, watched by rtscope,
# shows its signature in the report (misconfigured priority, hidden and
# event-driven blocking, priority inversion with and without PI, RT hog,
# hard-IRQ noise, preemption-off section). On PREEMPT_RT, a wait on a
# sleeping spinlock (rtlock) ends a response like any other blocking.
# guests: rt std arm64
# tcg: single
# timeout: 420
cd /tmp || exit 1
scenario.test -test.run '^TestSignature' -test.v -test.timeout 400s >/tmp/sig.out 2>&1
rc=$?
grep -E '^(=== RUN|--- |    |ok|FAIL|PASS)' /tmp/sig.out | cut -c1-220
check "scenario signature tests (exit status $rc)" [ $rc = 0 ]
finish
