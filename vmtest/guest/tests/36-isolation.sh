# rtscope isolation (docs/isolation.md): the remote-work scenario's
# signature test of the host, in the guest: a FIFO loop on the last CPU, an
# intruder of its process calling membarrier on another CPU, a refresher
# writing /proc/sys/vm/stat_refresh; rtscope isolation must attribute 90%
# of the call-function IPIs /proc/interrupts counts on the loop's CPU to the
# intruder (with no sender before 6.3: the report names the send
# tracepoints it lacks), and 90% of the refresh_vm_stats runs there to the
# refresher. The receipts are x86's irq_vectors tracepoints, or arm64's
# ipi:ipi_entry/ipi_exit (/proc/interrupts IPI1 there): arm64 guest, 6.1,
# TCG: +261, 283 received; refresh_vm_stats 39, 38 queued (2026-11-28).
# guests: rt std arm64
# tcg: single
# timeout: 300
cd /tmp || exit 1
RTSCOPE_TEST_EMULATED=1 scenario.test -test.v -test.timeout 280s -test.run '^TestSignatureRemoteWork$' >/tmp/isolation.out 2>&1
rc=$?
grep -E '^(=== RUN|--- |ok|FAIL|PASS)|CPU [0-9]+: |attempt' /tmp/isolation.out | cut -c1-220
check "remote-work: IPIs and work attributed to their senders by rtscope isolation (exit status $rc)" [ "$rc" = 0 ]
finish
