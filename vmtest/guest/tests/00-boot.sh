# The guest is the kernel we asked for, with what rtscope needs.
# guests: rt std arm64
# timeout: 30
case $GUEST in
arm64) check "machine is aarch64" [ "$(uname -m)" = aarch64 ] ;;
*) check "machine is x86_64" [ "$(uname -m)" = x86_64 ] ;;
esac
check "CPUs online: 2" [ "$(nproc)" = 2 ]
check "kernel BTF at /sys/kernel/btf/vmlinux" [ -s /sys/kernel/btf/vmlinux ]
check "tracefs mounted" [ -e /sys/kernel/tracing/trace ]
if [ "$GUEST" = rt ]; then
	check "PREEMPT_RT kernel (uname -v)" sh -c 'uname -v | grep -q PREEMPT_RT'
	check "/sys/kernel/realtime is 1" [ "$(cat /sys/kernel/realtime 2>/dev/null)" = 1 ]
	check "timerlat tracer available" grep -qw timerlat /sys/kernel/tracing/available_tracers
	# Forced IRQ threading: the serial console's interrupt has a thread.
	check "serial IRQ is threaded (irq/4-ttyS0)" sh -c 'ps -o comm | grep -q "irq/4-ttyS0"'
else
	check "not a PREEMPT_RT kernel" [ ! -e /sys/kernel/realtime ]
fi
finish
