# IPIs (watch --ipi, docs/ipi.md): the ipi-storm scenario's signature test
# of the host, in the guest: a FIFO loop on the last CPU and an intruder
# thread of its process changing a page's protection on another CPU; of
# the call-function IPIs /proc/interrupts counts (CAL) on the loop's CPU,
# 90% must be attributed to the intruder, and a verdict of the loop must
# name it. x86 guests only: the receipts are x86's irq_vectors tracepoints.
# guests: rt std
# tcg: single
# timeout: 200
cd /tmp || exit 1
RTSCOPE_TEST_EMULATED=1 scenario.test -test.v -test.timeout 180s -test.run '^TestSignatureIPIStorm$' >/tmp/ipi.out 2>&1
rc=$?
grep -E '^(=== RUN|--- |ok|FAIL|PASS)|CPU [0-9]+: /proc/interrupts|attempt' /tmp/ipi.out | cut -c1-220
check "ipi-storm: IPIs attributed to their sender (exit status $rc)" [ "$rc" = 0 ]
finish
