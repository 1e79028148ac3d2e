package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rtscope/rtscope/internal/preempt"
	"github.com/rtscope/rtscope/internal/sched"
)

// systemChecks run in this order (docs/doctor.md describes each).
var systemChecks = []func(*machine, *Env) Check{
	checkPreemption,
	checkIsolation,
	checkNohzFull,
	checkRCUNocbs,
	checkIRQAffinity,
	checkIdle,
	checkGovernor,
	checkBoost,
	checkRTThrottling,
	checkTHP,
	checkSwap,
	checkDAMON,
	checkSMT,
	checkTimerMigration,
	checkWatchdogs,
	checkHypervisor,
	checkClocksource,
	checkRtscope,
}

func checkPreemption(m *machine, _ *Env) Check {
	c := Check{Name: "preemption"}
	model, src := m.kernel.Model()
	c.Data = map[string]any{"model": model.String(), "source": src}
	shown := model.String()
	if model == preempt.Unknown {
		shown = "unknown"
	}
	c.Evidence = fmt.Sprintf("model %s (%s)", shown, src)
	switch model {
	case preempt.RT:
		c.Status = Pass
	case preempt.Full, preempt.Lazy:
		c.Status = Warn
		c.Remedy = "a PREEMPT_RT kernel (Debian linux-image-rt-amd64/arm64; 6.12+ mainline CONFIG_PREEMPT_RT): spinlock and softirq sections stay non-preemptible here (tens to hundreds of us)"
	case preempt.None, preempt.Voluntary, preempt.NoneOrVoluntary:
		c.Status = Fail
		c.Remedy = "boot a PREEMPT_RT kernel, or at least preempt=full on a PREEMPT_DYNAMIC kernel: without preemption a task waits for whatever runs in the kernel to finish (milliseconds)"
	default:
		c.Status = Warn
		c.Remedy = "mount debugfs or boot with preempt=full so the model can be known"
	}
	return c
}

func checkIsolation(m *machine, _ *Env) Check {
	c := Check{Name: "isolcpus", Data: map[string]any{"isolated": fmtList(m.isolated), "online": fmtList(m.online)}}
	iso, _ := m.read("sys/devices/system/cpu/isolated")
	c.Evidence = fmt.Sprintf("isolated CPUs %s of online %s (/sys/devices/system/cpu/isolated %q, nohz_full %s, isolcpus= %q)",
		fmtList(m.isolated), fmtList(m.online), iso, fmtList(m.nohz), m.cmdline["isolcpus"])
	switch {
	case len(m.isolated) > 0 && len(minus(m.online, m.isolated)) == 0:
		c.Status, c.Remedy = Warn, "leave at least one CPU for housekeeping (IRQs, kernel threads, rtscope itself)"
	case len(m.isolated) > 0:
		c.Status = Pass
	case len(m.online) == 1:
		c.Status, c.Evidence = Info, "one CPU online: nothing to isolate"
	default:
		c.Status = Warn
		c.Remedy = "isolate the real-time CPUs: isolcpus=domain,managed_irq,LIST nohz_full=LIST rcu_nocbs=LIST (tuned realtime: isolated_cores=LIST); else every kernel thread and task may run beside them"
	}
	return c
}

func checkNohzFull(m *machine, _ *Env) Check {
	c := Check{Name: "nohz_full", Data: map[string]any{"nohz_full": fmtList(m.nohz)}}
	c.Evidence = fmt.Sprintf("nohz_full CPUs %s (/sys/devices/system/cpu/nohz_full)", fmtList(m.nohz))
	if len(m.isolated) == 0 {
		c.Status, c.Evidence = Skip, c.Evidence+"; no CPU isolated"
		return c
	}
	if miss := minus(m.isolated, m.nohz); len(miss) > 0 {
		c.Status = Warn
		c.Evidence += "; isolated CPUs " + fmtList(miss) + " keep the scheduler tick"
		c.Remedy = "boot with nohz_full=" + fmtList(m.isolated) + " (the tick costs every CPU a few us at every jiffy)"
		return c
	}
	c.Status = Pass
	return c
}

func checkRCUNocbs(m *machine, _ *Env) Check {
	v, set := m.cmdline["rcu_nocbs"]
	nocb := union(cmdlineCPUs(v), m.nohz) // nohz_full implies callback offloading
	c := Check{Name: "rcu_nocbs", Data: map[string]any{"rcu_nocbs": fmtList(nocb)}}
	c.Evidence = fmt.Sprintf("RCU callbacks offloaded from CPUs %s (rcu_nocbs=%q on the command line, nohz_full %s)", fmtList(nocb), v, fmtList(m.nohz))
	if !set {
		c.Evidence = fmt.Sprintf("RCU callbacks offloaded from CPUs %s (no rcu_nocbs= on the command line, nohz_full %s)", fmtList(nocb), fmtList(m.nohz))
	}
	if len(m.isolated) == 0 {
		c.Status, c.Evidence = Skip, c.Evidence+"; no CPU isolated"
		return c
	}
	if miss := minus(m.isolated, nocb); len(miss) > 0 {
		c.Status = Warn
		c.Remedy = "boot with rcu_nocbs=" + fmtList(m.isolated) + " so RCU callbacks run on housekeeping CPUs, not in softirq on CPUs " + fmtList(miss)
		return c
	}
	c.Status = Pass
	return c
}

func checkIRQAffinity(m *machine, _ *Env) Check {
	c := Check{Name: "irq_affinity"}
	def, _ := m.read("proc/irq/default_smp_affinity")
	if len(m.isolated) == 0 {
		c.Status = Skip
		c.Evidence = fmt.Sprintf("no CPU isolated; %d IRQs (/proc/irq)", len(m.irqs))
		return c
	}
	var on []string
	for _, q := range m.irqs {
		if x := intersect(q.cpus, m.isolated); len(x) > 0 {
			s := q.num
			if q.name != "" {
				s += " " + q.name
			}
			on = append(on, fmt.Sprintf("%s -> %s", s, fmtList(x)))
		}
	}
	c.Data = map[string]any{"irqs": len(m.irqs), "on_isolated": len(on)}
	if len(on) == 0 {
		c.Status = Pass
		c.Evidence = fmt.Sprintf("none of %d IRQs may land on isolated CPUs %s (effective_affinity_list)", len(m.irqs), fmtList(m.isolated))
		return c
	}
	shown := on
	if len(shown) > 6 {
		shown = append(append([]string{}, on[:6]...), fmt.Sprintf("and %d more", len(on)-6))
	}
	c.Status = Warn
	c.Evidence = fmt.Sprintf("%d of %d IRQs may land on isolated CPUs %s: %s (default_smp_affinity %s)", len(on), len(m.irqs),
		fmtList(m.isolated), strings.Join(shown, ", "), def)
	c.Remedy = "move them to housekeeping CPUs: irqaffinity=HOUSEKEEPING on the command line, or echo LIST > /proc/irq/N/smp_affinity_list (irqbalance --banirq / IRQBALANCE_BANNED_CPULIST); managed IRQs need isolcpus=managed_irq"
	return c
}

// idleState is one cpuidle state of one CPU.
type idleState struct {
	cpu       int
	name      string
	latencyUs int
	disabled  bool
}

func checkIdle(m *machine, _ *Env) Check {
	c := Check{Name: "idle_states"}
	var states []idleState
	dirs, _ := fs.Glob(m.fsys, "sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*")
	for _, d := range dirs {
		var s idleState
		fmt.Sscanf(path.Base(path.Dir(path.Dir(d))), "cpu%d", &s.cpu) //nolint:errcheck // matched by the glob
		s.name, _ = m.read(d + "/name")
		l, _ := m.read(d + "/latency")
		s.latencyUs, _ = strconv.Atoi(l)
		dis, _ := m.read(d + "/disable")
		s.disabled = dis == "1"
		states = append(states, s)
	}
	qos, haveQoS := m.cpuDMALatency()
	qosText := "unreadable"
	if haveQoS {
		qosText = fmt.Sprintf("%d us", qos)
		if qos >= 2000000000 {
			qosText = "no limit"
		}
	}
	driver, _ := m.read("sys/devices/system/cpu/cpuidle/current_driver")
	if len(states) == 0 {
		c.Status = Pass
		c.Evidence = fmt.Sprintf("no cpuidle states (driver %q): idle is the architecture's default wait; /dev/cpu_dma_latency: %s", driver, qosText)
		return c
	}
	// The deepest state an idle CPU may enter: enabled, and its exit latency
	// within the QoS limit (the governor skips deeper ones).
	deepest := idleState{latencyUs: -1}
	var enabled []string
	seen := map[string]bool{}
	for _, s := range states {
		if s.disabled || (haveQoS && s.latencyUs > int(qos)) {
			continue
		}
		if !seen[s.name] {
			seen[s.name] = true
			enabled = append(enabled, fmt.Sprintf("%s %d us", s.name, s.latencyUs))
		}
		if s.latencyUs > deepest.latencyUs {
			deepest = s
		}
	}
	c.Data = map[string]any{"driver": driver, "deepest_exit_latency_ns": int64(deepest.latencyUs) * 1000}
	if haveQoS {
		c.Data["cpu_dma_latency_us"] = qos
	}
	c.Evidence = fmt.Sprintf("driver %s; usable states %s; /dev/cpu_dma_latency: %s", driver, strings.Join(enabled, ", "), qosText)
	switch {
	case deepest.latencyUs > 10:
		c.Status = Warn
		c.Remedy = fmt.Sprintf("an idle CPU takes up to %d us (%s) to wake: hold /dev/cpu_dma_latency open at 0 while the application runs (cyclictest does by default, rtla timerlat with --dma-latency 0 or --deepest-idle-state), or disable the deep states (cpupower idle-set -D 10, or intel_idle.max_cstate=1 / processor.max_cstate=1)", deepest.latencyUs, deepest.name)
	default:
		c.Status = Pass
	}
	return c
}

func checkGovernor(m *machine, _ *Env) Check {
	c := Check{Name: "cpufreq_governor"}
	files, _ := fs.Glob(m.fsys, "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
	if len(files) == 0 {
		c.Status = Info
		c.Evidence = "no cpufreq driver: the kernel does not scale the frequency (firmware or the hypervisor may)"
		return c
	}
	by := map[string][]int{}
	for _, f := range files {
		var cpu int
		fmt.Sscanf(path.Base(path.Dir(path.Dir(f))), "cpu%d", &cpu) //nolint:errcheck // matched by the glob
		g, _ := m.read(f)
		by[g] = append(by[g], cpu)
	}
	var parts, bad []string
	for g, cpus := range by {
		sort.Ints(cpus)
		parts = append(parts, fmt.Sprintf("%s on CPUs %s", g, fmtList(cpus)))
		if g != "performance" {
			bad = append(bad, g)
		}
	}
	sort.Strings(parts)
	c.Evidence = "scaling_governor: " + strings.Join(parts, "; ")
	if len(bad) > 0 {
		c.Status = Warn
		c.Remedy = "cpupower frequency-set -g performance (tuned latency-performance does): other governors change the frequency under the task, and a ramp takes tens of us to ms"
		return c
	}
	c.Status = Pass
	return c
}

func checkBoost(m *machine, _ *Env) Check {
	c := Check{Name: "cpufreq_boost"}
	if v, ok := m.read("sys/devices/system/cpu/intel_pstate/no_turbo"); ok {
		c.Evidence = "intel_pstate/no_turbo = " + v
		if v == "0" {
			c.Status, c.Remedy = Warn, "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo: turbo frequencies depend on temperature and on the other cores' load, so the same loop runs faster or slower"
		} else {
			c.Status = Pass
		}
		return c
	}
	if v, ok := m.read("sys/devices/system/cpu/cpufreq/boost"); ok {
		c.Evidence = "cpufreq/boost = " + v
		if v == "1" {
			c.Status, c.Remedy = Warn, "echo 0 > /sys/devices/system/cpu/cpufreq/boost: boost frequencies depend on temperature and on the other cores' load"
		} else {
			c.Status = Pass
		}
		return c
	}
	c.Status, c.Evidence = Skip, "no boost control (cpufreq/boost, intel_pstate/no_turbo)"
	return c
}

// checkRTThrottling shows the throttling configuration: rt_rq bandwidth
// (sched_rt_runtime_us) and, on 6.12+, the fair server per CPU, which
// throttles real-time tasks whatever sched_rt_runtime_us says.
func checkRTThrottling(m *machine, _ *Env) Check {
	c := Check{Name: "rt_throttling"}
	th := sched.ReadThrottling(m.fsys)
	if th.RTRuntimeNs == nil {
		c.Status, c.Evidence = Skip, "/proc/sys/kernel/sched_rt_runtime_us unreadable"
		return c
	}
	c.Evidence = th.Words()
	c.Data = map[string]any{"runtime_ns": *th.RTRuntimeNs, "period_ns": deref64(th.RTPeriodNs), "throttling": th}
	fair := len(th.FairServer) > 0
	if *th.RTRuntimeNs < 0 && !fair && !hasFairServer(m.release) {
		c.Status = Pass
		return c
	}
	c.Status = Warn
	if run, per := th.Share(0); fair && per > 0 {
		c.Evidence += fmt.Sprintf(": real-time tasks that starve SCHED_OTHER ones lose the CPU for %d us of every %d us (the fair server)", run/1000, per/1000)
	} else if hasFairServer(m.release) {
		c.Evidence += ": on this 6.12+ kernel the fair server throttles real-time tasks that starve SCHED_OTHER ones " +
			"(its runtime of every period, 50 ms of 1000 ms by default)"
	} else {
		c.Evidence += fmt.Sprintf(": real-time tasks that use more than %d us of a CPU in %d us are stopped for the rest",
			*th.RTRuntimeNs/1000, deref64(th.RTPeriodNs)/1000)
	}
	c.Remedy = "no real-time task should run 95% of a second: spread or shorten it; if a busy RT loop is intended, " +
		"sysctl kernel.sched_rt_runtime_us=-1 (older kernels; tuned realtime does) or the fair server's runtime " +
		"(/sys/kernel/debug/sched/fair_server/cpuN/runtime, 6.12+) removes the safety net against runaway RT tasks: at your own risk"
	return c
}

// hasFairServer tells a kernel release of 6.12 or later, which throttles
// real-time tasks by the fair server whatever sched_rt_runtime_us says.
func hasFairServer(release string) bool {
	var major, minor int
	if n, _ := fmt.Sscanf(release, "%d.%d", &major, &minor); n < 2 {
		return true // unknown: do not claim the throttle is off
	}
	return major > 6 || (major == 6 && minor >= 12)
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func checkTHP(m *machine, _ *Env) Check {
	c := Check{Name: "thp"}
	s, ok := m.read("sys/kernel/mm/transparent_hugepage/enabled")
	if !ok {
		c.Status, c.Evidence = Skip, "no transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled)"
		return c
	}
	mode := s
	if i, j := strings.Index(s, "["), strings.Index(s, "]"); i >= 0 && j > i {
		mode = s[i+1 : j]
	}
	c.Evidence = "transparent_hugepage/enabled: " + s
	c.Data = map[string]any{"mode": mode}
	switch mode {
	case "never", "madvise":
		c.Status = Pass
	default:
		c.Status = Warn
		c.Remedy = "echo never > /sys/kernel/mm/transparent_hugepage/enabled (or transparent_hugepage=never): a fault may zero or compact a 2 MiB page (hundreds of us) and khugepaged collapses pages under the task"
	}
	return c
}

// checkDAMON finds DAMON running a scheme on the machine's memory: its
// kernel thread (kdamond) walks every process's pages holding their
// anon_vma locks, and yields the CPU inside the walk, so a process that
// maps memory meanwhile (a heap growing, a thread stack) waits in
// uninterruptible sleep. On this VM (a paddr "pageout" scheme) rtscope's
// own mmaps waited 1-2.9 s behind it beside a loaded CPU.
func checkDAMON(m *machine, _ *Env) Check {
	c := Check{Name: "damon"}
	on := []string{} // JSON: [] when nothing runs
	dirs, _ := fs.Glob(m.fsys, "sys/kernel/mm/damon/admin/kdamonds/[0-9]*")
	for _, d := range dirs {
		if st, _ := m.read(d + "/state"); st != "on" {
			continue
		}
		var acts []string
		schemes, _ := fs.Glob(m.fsys, d+"/contexts/[0-9]*/schemes/[0-9]*/action")
		for _, a := range schemes {
			if s, ok := m.read(a); ok {
				acts = append(acts, s)
			}
		}
		desc := "kdamond " + path.Base(d)
		if ops, _ := m.read(d + "/contexts/0/operations"); ops != "" {
			desc += " (" + strings.Join(append([]string{ops}, acts...), ", ") + ")"
		}
		on = append(on, desc)
	}
	for _, mod := range []string{"damon_reclaim", "damon_lru_sort"} {
		if s, _ := m.read("sys/module/" + mod + "/parameters/enabled"); s == "Y" {
			on = append(on, mod)
		}
	}
	c.Data = map[string]any{"running": on}
	if len(on) == 0 {
		c.Status, c.Evidence = Pass, "no DAMON scheme running (/sys/kernel/mm/damon, damon_reclaim, damon_lru_sort)"
		return c
	}
	c.Status = Warn
	c.Evidence = "DAMON running: " + strings.Join(on, "; ") + " (/sys/kernel/mm/damon/admin/kdamonds)"
	c.Remedy = "mlockall and preallocate in every RT process (no mmap while it runs), or stop DAMON: echo off > /sys/kernel/mm/damon/admin/kdamonds/N/state (damon_reclaim.enabled=N): kdamond walks processes' pages holding their anon_vma locks, and a process that maps memory meanwhile waits, for seconds beside a loaded CPU"
	return c
}

func checkSwap(m *machine, _ *Env) Check {
	c := Check{Name: "swap"}
	s, ok := m.read("proc/swaps")
	if !ok {
		c.Status, c.Evidence = Skip, "/proc/swaps unreadable"
		return c
	}
	var dev []string
	for _, l := range strings.Split(s, "\n")[1:] {
		if f := strings.Fields(l); len(f) > 0 {
			dev = append(dev, f[0])
		}
	}
	c.Data = map[string]any{"devices": len(dev)}
	if len(dev) == 0 {
		c.Status, c.Evidence = Pass, "no swap (/proc/swaps)"
		return c
	}
	c.Status = Warn
	c.Evidence = "swap on " + strings.Join(dev, ", ")
	c.Remedy = "swapoff -a, or mlockall(MCL_CURRENT|MCL_FUTURE) in every real-time process: a page swapped out costs a major fault (milliseconds) when touched"
	return c
}

func checkSMT(m *machine, _ *Env) Check {
	c := Check{Name: "smt"}
	ctl, _ := m.read("sys/devices/system/cpu/smt/control")
	var shared []string
	for _, cpu := range m.isolated {
		sib := m.list(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu))
		if out := minus(sib, m.isolated); len(out) > 0 {
			shared = append(shared, fmt.Sprintf("CPU %d with %s", cpu, fmtList(out)))
		}
	}
	c.Evidence = fmt.Sprintf("smt/control %q", ctl)
	switch {
	case len(m.isolated) == 0:
		c.Status = Info
		c.Evidence += "; no CPU isolated"
	case len(shared) > 0:
		c.Status = Warn
		c.Evidence += "; isolated CPUs share a core with housekeeping CPUs: " + strings.Join(shared, ", ")
		c.Remedy = "isolate both siblings of each real-time core (or echo off > /sys/devices/system/cpu/smt/control, nosmt): a sibling's load slows the core by 10-40%"
	default:
		c.Status = Pass
		c.Evidence += "; no isolated CPU shares a core with a housekeeping CPU"
	}
	return c
}

func checkTimerMigration(m *machine, _ *Env) Check {
	c := Check{Name: "timer_migration"}
	v, ok := m.read("proc/sys/kernel/timer_migration")
	if !ok {
		c.Status, c.Evidence = Skip, "/proc/sys/kernel/timer_migration unreadable (CONFIG_NO_HZ_COMMON off)"
		return c
	}
	c.Evidence = "kernel.timer_migration = " + v
	if v == "0" {
		c.Status = Pass
		return c
	}
	c.Status = Warn
	c.Remedy = "sysctl kernel.timer_migration=0 (tuned realtime does): timers armed on an idle CPU may expire on a busy real-time one"
	return c
}

func checkWatchdogs(m *machine, _ *Env) Check {
	c := Check{Name: "watchdogs"}
	nmi, _ := m.read("proc/sys/kernel/nmi_watchdog")
	soft, _ := m.read("proc/sys/kernel/watchdog")
	mask := m.list("proc/sys/kernel/watchdog_cpumask")
	c.Evidence = fmt.Sprintf("nmi_watchdog %q, watchdog %q, watchdog_cpumask %s", nmi, soft, fmtList(mask))
	var why []string
	if nmi == "1" {
		why = append(why, "the hard-lockup detector interrupts every CPU with an NMI (sysctl kernel.nmi_watchdog=0, nmi_watchdog=0)")
	}
	if on := intersect(mask, m.isolated); soft == "1" && len(on) > 0 {
		why = append(why, "the soft-lockup watchdog wakes a stopper thread on isolated CPUs "+fmtList(on)+" (sysctl kernel.watchdog_cpumask=HOUSEKEEPING, or nowatchdog)")
	}
	if len(why) == 0 {
		c.Status = Pass
		return c
	}
	c.Status, c.Remedy = Warn, strings.Join(why, "; ")
	return c
}

// hypervisor names the hypervisor, or "" on bare metal.
func hypervisor(m *machine) (name, source string) {
	if s, ok := m.read("sys/hypervisor/type"); ok && s != "" {
		return s, "/sys/hypervisor/type"
	}
	flag := false
	if s, ok := m.read("proc/cpuinfo"); ok {
		for _, l := range strings.Split(s, "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "flags" {
				flag = strings.Contains(" "+v+" ", " hypervisor ")
				break
			}
		}
	}
	product, _ := m.read("sys/class/dmi/id/product_name")
	vendor, _ := m.read("sys/class/dmi/id/sys_vendor")
	dmi := strings.TrimSpace(vendor + " " + product)
	for _, k := range []string{"KVM", "QEMU", "VMware", "VirtualBox", "Virtual Machine", "Xen", "HVM domU", "Amazon EC2", "Google Compute Engine", "Cloud Hypervisor", "Firecracker"} {
		if strings.Contains(dmi, k) {
			return dmi, "DMI product name"
		}
	}
	// Arm boards have no CPU flag and often no DMI: QEMU's and crosvm's
	// virt machines say so in the device tree.
	for _, f := range []string{"sys/firmware/devicetree/base/compatible", "proc/device-tree/compatible"} {
		if s, ok := m.read(f); ok {
			s = strings.ReplaceAll(strings.Trim(s, "\x00"), "\x00", " ")
			if strings.Contains(s, "dummy-virt") || strings.Contains(s, "qemu") {
				return "QEMU virt (" + s + ")", "the device tree's compatible"
			}
		}
	}
	// Paravirtual clocks are registered only under their hypervisor.
	avail, _ := m.read("sys/devices/system/clocksource/clocksource0/available_clocksource")
	for _, k := range []struct{ clock, name string }{{"kvm-clock", "KVM"}, {"hyperv_clocksource", "Hyper-V"}, {"xen", "Xen"}} {
		if strings.Contains(avail, k.clock) {
			return k.name, "its paravirtual clock source " + k.clock
		}
	}
	if flag {
		return "not named (no /sys/hypervisor/type or DMI product)", "the CPU's hypervisor flag in /proc/cpuinfo"
	}
	return "", ""
}

// stealTicks sums the steal and all columns of /proc/stat's "cpu" line (USER_HZ ticks).
func stealTicks(m *machine) (steal, total uint64, ok bool) {
	s, okr := m.read("proc/stat")
	if !okr {
		return 0, 0, false
	}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		for i, v := range f[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, 0, false
			}
			if i < 8 { // guest time (columns 9, 10) is already in user
				total += n
			}
			if i == 7 {
				steal = n
			}
		}
		return steal, total, true
	}
	return 0, 0, false
}

func checkHypervisor(m *machine, env *Env) Check {
	c := Check{Name: "hypervisor"}
	name, src := hypervisor(m)
	if name == "" {
		c.Status, c.Evidence = Pass, "bare metal: no hypervisor flag, /sys/hypervisor or virtual DMI product"
		c.Data = map[string]any{"virtual": false}
		return c
	}
	c.Data = map[string]any{"virtual": true, "hypervisor": name}
	c.Evidence = fmt.Sprintf("virtual machine, from %s: %s", src, name)
	c.Status = Warn
	c.Remedy = "measure on the target hardware; in a VM, pin the vCPUs to dedicated host CPUs with an RT host (tuned realtime-virtual-host/-guest): a stalled vCPU looks like a late timer or a long IRQ"
	if env.Sample <= 0 {
		c.Evidence += "; steal not measured (--sample 0)"
		return c
	}
	s0, t0, ok0 := stealTicks(m)
	start := time.Now()
	env.Sleep(env.Sample)
	elapsed := time.Since(start)
	s1, t1, ok1 := stealTicks(m)
	if !ok0 || !ok1 || t1 <= t0 || s1 < s0 {
		c.Evidence += "; steal not measurable (/proc/stat did not advance)"
		return c
	}
	const nsPerTick = 10_000_000 // USER_HZ is 100 on every architecture rtscope builds for
	frac := float64(s1-s0) / float64(t1-t0)
	c.Data["sample_ns"] = elapsed.Nanoseconds()
	c.Data["steal_ns"] = (s1 - s0) * nsPerTick
	c.Data["cpu_ns"] = (t1 - t0) * nsPerTick
	c.Data["steal_fraction"] = frac
	c.Evidence += fmt.Sprintf("; steal %.1f%% of CPU time over %v (%d of %d ticks, /proc/stat)", 100*frac, env.Sample, s1-s0, t1-t0)
	if frac >= 0.05 {
		c.Status = Fail
		c.Remedy = "the hypervisor takes " + fmt.Sprintf("%.1f%%", 100*frac) + " of the CPUs, in stalls of milliseconds: no real-time bound holds here; " + c.Remedy
	}
	return c
}

func checkClocksource(m *machine, _ *Env) Check {
	c := Check{Name: "clocksource"}
	cur, ok := m.read("sys/devices/system/clocksource/clocksource0/current_clocksource")
	if !ok {
		c.Status, c.Evidence = Skip, "current_clocksource unreadable"
		return c
	}
	avail, _ := m.read("sys/devices/system/clocksource/clocksource0/available_clocksource")
	c.Evidence = fmt.Sprintf("current %s (available: %s)", cur, avail)
	c.Data = map[string]any{"current": cur}
	switch cur {
	case "tsc", "arch_sys_counter", "riscv_clocksource", "timebase":
		c.Status = Pass
	default:
		c.Status = Warn
		c.Remedy = "a CPU-local clock: " + cur + " is read through a device or the hypervisor (hpet/acpi_pm take ~0.5-1 us a read, and every timestamp pays it); check dmesg for 'clocksource tsc unstable', or tsc=reliable when it is"
	}
	return c
}

// tracefsState finds tracefs (/sys/kernel/tracing, or under debugfs):
// present when mounted, readable when this user can list its events;
// seen says which, for the evidence. It is mounted mode 0700 on most
// distributions, so to a user other than root it is present, not missing.
func tracefsState(fsys fs.FS) (present, readable bool, seen string) {
	seen = "missing"
	for _, d := range []string{"sys/kernel/tracing", "sys/kernel/debug/tracing"} {
		_, err := fs.Stat(fsys, d+"/events")
		switch {
		case err == nil:
			return true, true, "present"
		case errors.Is(err, fs.ErrPermission) && !present:
			mode := "unknown mode"
			if st, err := fs.Stat(fsys, d); err == nil {
				mode = fmt.Sprintf("mode %#o", st.Mode().Perm())
			}
			present, seen = true, fmt.Sprintf("present but not readable by this user (/%s, %s)", d, mode)
		}
	}
	return present, false, seen
}

// checkRtscope says whether rtscope's own engine can run here: kernel BTF
// and tracefs (informational: doctor itself needs neither).
func checkRtscope(m *machine, _ *Env) Check {
	c := Check{Name: "rtscope_ready", Status: Info}
	btfOK := false
	if st, err := fs.Stat(m.fsys, "sys/kernel/btf/vmlinux"); err == nil && (st.Size() > 0 || st.Mode().IsRegular()) {
		btfOK = true
	}
	tracefs, readable, seen := tracefsState(m.fsys)
	c.Data = map[string]any{"btf": btfOK, "tracefs": tracefs, "tracefs_readable": readable}
	yes := map[bool]string{true: "present", false: "missing"}
	c.Evidence = fmt.Sprintf("kernel BTF %s (/sys/kernel/btf/vmlinux), tracefs %s", yes[btfOK], seen)
	switch {
	case !btfOK && !tracefs:
		c.Remedy = "rtscope watch and timerlat need kernel BTF (CONFIG_DEBUG_INFO_BTF=y) or, for their classic engine, tracefs (mount -t tracefs nodev /sys/kernel/tracing)"
	case !btfOK:
		c.Remedy = "rtscope watch and timerlat will run their classic engine (classic tracepoints, no kernel BTF needed; its limits are in the JSON features.engine_limits); CONFIG_DEBUG_INFO_BTF=y gives the full one, and where the kernel has BTF but hides this file (a container, a masked /sys), --btf FILE with a copy of its vmlinux BTF does"
	}
	if tracefs && !readable {
		c.Remedy = strings.TrimPrefix(c.Remedy+"; tracefs is there but this user cannot read it: run rtscope as root (or with CAP_BPF, CAP_PERFMON and read access to tracefs)", "; ")
	}
	return c
}
