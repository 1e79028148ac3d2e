# IPIs (watch --ipi, docs/ipi.md). x86 guests: the ipi-storm scenario's
# signature test of the host, in the guest: a FIFO loop on the last CPU and
# an intruder thread of its process changing a page's protection on
# another CPU; of the call-function IPIs /proc/interrupts counts (CAL) on
# the loop's CPU, 90% must be attributed to the intruder, and a verdict of
# the loop must name it. arm64 (TLB shootdowns are broadcast instructions
# there, not IPIs): the receipts through ipi:ipi_entry/ipi_exit, with the
# remote-work scenario's membarrier calls; of the function-call IPIs
# /proc/interrupts counts on the loop's CPU (IPI1), 90% must be received.
# guests: rt std arm64
# tcg: single
# timeout: 420
cd /tmp || exit 1
run='^TestSignatureIPIStorm$'
[ "$(uname -m)" = aarch64 ] && run='^TestSignatureIPIReceipts$'
RTSCOPE_TEST_EMULATED=1 scenario.test -test.v -test.timeout 400s -test.run "$run" >/tmp/ipi.out 2>&1
rc=$?
grep -E '^(=== RUN|--- |ok|FAIL|PASS)|CPU [0-9]+: /proc/interrupts|attempt' /tmp/ipi.out | cut -c1-220
check "ipi: IPIs received and attributed to their sender (exit status $rc, $run)" [ "$rc" = 0 ]
finish
