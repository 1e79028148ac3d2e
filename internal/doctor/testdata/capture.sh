#!/bin/sh
# capture.sh DIR: copy the files rtscope doctor reads on this machine into
# the fixture tree DIR (run as root; tests read it with os.DirFS). The
# "host" fixture was made with it on the development VM.
set -e
dir=${1:?usage: capture.sh DIR}
cp_one() { # copy a readable file, its path kept under DIR
	[ -r "$1" ] || return 0
	mkdir -p "$dir/$(dirname "$1")"
	cat "$1" >"$dir/$1" 2>/dev/null || rm -f "$dir/$1"
}
for f in /proc/cmdline /proc/sys/kernel/osrelease /proc/sys/kernel/version /proc/config.gz \
	/boot/config-"$(uname -r)" /sys/kernel/realtime /sys/kernel/debug/sched/preempt \
	/sys/devices/system/cpu/online /sys/devices/system/cpu/isolated /sys/devices/system/cpu/nohz_full \
	/sys/devices/system/cpu/smt/control /sys/devices/system/cpu/cpuidle/current_driver \
	/sys/devices/system/cpu/cpufreq/boost /sys/devices/system/cpu/intel_pstate/no_turbo \
	/proc/interrupts /proc/irq/default_smp_affinity /proc/sys/kernel/sched_rt_runtime_us \
	/proc/sys/kernel/sched_rt_period_us /sys/kernel/mm/transparent_hugepage/enabled /proc/swaps \
	/proc/sys/kernel/timer_migration /proc/sys/kernel/nmi_watchdog /proc/sys/kernel/watchdog \
	/proc/sys/kernel/watchdog_cpumask /sys/hypervisor/type /sys/class/dmi/id/product_name \
	/sys/class/dmi/id/sys_vendor /proc/cpuinfo /proc/stat \
	/sys/devices/system/clocksource/clocksource0/current_clocksource \
	/sys/devices/system/clocksource/clocksource0/available_clocksource; do
	cp_one "$f"
done
# Init's arguments (after --) are no business of doctor's.
sed -i 's/ -- .*/ --/' "$dir/proc/cmdline"
mkdir -p "$dir/dev" && head -c 4 /dev/cpu_dma_latency >"$dir/dev/cpu_dma_latency"
for f in /proc/irq/[0-9]*/smp_affinity_list /proc/irq/[0-9]*/effective_affinity_list \
	/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state*/name /sys/devices/system/cpu/cpu[0-9]*/cpuidle/state*/latency \
	/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state*/disable /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor \
	/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list \
	/sys/kernel/mm/damon/admin/kdamonds/[0-9]*/state /sys/kernel/mm/damon/admin/kdamonds/[0-9]*/contexts/[0-9]*/operations \
	/sys/kernel/mm/damon/admin/kdamonds/[0-9]*/contexts/[0-9]*/schemes/[0-9]*/action \
	/sys/module/damon_reclaim/parameters/enabled /sys/module/damon_lru_sort/parameters/enabled; do
	cp_one "$f"
done
# rtscope_ready looks for these only by existence.
[ -e /sys/kernel/btf/vmlinux ] && mkdir -p "$dir/sys/kernel/btf" && echo btf >"$dir/sys/kernel/btf/vmlinux"
[ -e /sys/kernel/tracing/events ] && mkdir -p "$dir/sys/kernel/tracing/events"
touch "$dir/sys/kernel/tracing/events/.keep" 2>/dev/null || true
