package isolation

import (
	"fmt"
	"strings"
)

const ipiTLB = "{sender} changes the memory mappings (mprotect, munmap, madvise, page migration) of a process " +
	"that also runs on CPU {cpu}: move it out of that process, or pre-fault and lock the memory (mlockall) before the real-time phase"

// The remedies, as data: a sentence per cause and kind, its {fields}
// filled in by fixes.fill.
var (
	ipiRemedies = map[string]string{
		"TLB shootdown": ipiTLB,
		"function call": "{sender} runs {func} on CPU {cpu} (smp_call_function from {callsite}): keep CPU {cpu} out of that caller's CPU mask, " +
			"or stop it during the real-time phase",
		"reschedule": "{sender} wakes or moves a task onto CPU {cpu}: expected when it wakes the workload; " +
			"else keep other tasks off the CPU (taskset, a cpuset)",
		"irq_work": "{sender} queues irq_work on CPU {cpu} (perf sampling, printk, BPF): stop perf sampling and console output there",
		"remote wakeup": "{sender} wakes a task of CPU {cpu} through its wake list: expected when it wakes the workload; " +
			"else keep the woken task off the CPU",
		"": "received with no send seen: sent before the hooks were attached, or from a path ipi:ipi_send_cpu/csd:csd_queue_cpu do not show",
	}
	// By the function a function-call IPI runs, where it says more than the kind.
	callRemedies = map[string]string{
		"ipi_mb": "{sender} calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which interrupts every CPU running its process: " +
			"move the caller to another process, or use MEMBARRIER_CMD_GLOBAL (no IPI, slower)",
		"nohz_csd_func":    "the scheduler on CPU {scpu} kicks CPU {cpu} to balance load while idle: take CPU {cpu} out of the scheduling domains (isolcpus=domain,{cpu})",
		"do_sync_core":     "{sender} patches kernel text (BPF programs, ftrace, static keys) and every CPU must resynchronise: do it before the real-time phase",
		"flush_tlb_func":   ipiTLB,
		"do_flush_tlb_all": "{sender} flushes the kernel's TLB on every CPU (vmalloc, module or BPF memory freed): avoid loading and unloading during the real-time phase",
	}
	softirqRemedies = map[string]string{
		"TIMER":    "timer-wheel timers expire on CPU {cpu}: nohz_full={cpu} stops its tick; find who arms timers there (timer:timer_start)",
		"HRTIMER":  "soft hrtimers expire on CPU {cpu}: find who arms them there (timer:hrtimer_start)",
		"NET_RX":   "network receive runs on CPU {cpu}: move the NIC's IRQs and RPS (/sys/class/net/*/queues/rx-*/rps_cpus) to {hkcpus}",
		"NET_TX":   "network transmit completes on CPU {cpu}: move the NIC's IRQs and XPS to {hkcpus}",
		"BLOCK":    "block I/O completes on CPU {cpu}: move the device's IRQs to {hkcpus}",
		"IRQ_POLL": "a driver polls its completions on CPU {cpu}: move the device's IRQs to {hkcpus}",
		"TASKLET":  "a driver's tasklets run on CPU {cpu}: move the device's IRQs to {hkcpus}",
		"HI":       "a driver's high-priority tasklets run on CPU {cpu}: move the device's IRQs to {hkcpus}",
		"SCHED":    "the scheduler balances load on CPU {cpu}: take it out of the scheduling domains (isolcpus=domain,{cpu} or an isolated cpuset partition)",
		"RCU":      "RCU callbacks run on CPU {cpu}: boot with rcu_nocbs={cpu} (and nohz_full={cpu})",
	}
	workRemedies = map[string]string{
		"vmstat_update": "per-CPU memory statistics: raise vm.stat_interval, or boot with nohz_full={cpu} (vmstat is quiesced there)",
		// With its queueing seen: per-CPU work queued onto the CPU.
		"queued": "work queued onto CPU {cpu} by the senders: stop them during the real-time phase, or make them queue it elsewhere",
		// Queued only inside interrupts on the CPU: a delayed work's timer, or a handler.
		"irq": "queued inside interrupts on CPU {cpu} (a delayed work's timer, or a handler): the timer rows say who armed it; nohz_full={cpu} keeps the kernel's deferrable work on {hkcpus}",
		// None seen: unbound work (its pool has no CPU), or per-CPU work queued before the run.
		"": "no queueing onto CPU {cpu} seen: unbound work stays on {hkcpus} with echo {hk} > /sys/devices/virtual/workqueue/cpumask; else per-CPU work queued before the run",
	}
	taskRemedies = map[string]string{
		"task":                  "taskset -a -p -c {hk} {pid}, or a cpuset without CPU {cpu}",
		"kernel thread":         "taskset -p -c {hk} {pid} (a kernel thread that may move); isolcpus=domain,{cpu} keeps them off at boot",
		"per-CPU kernel thread": "a per-CPU kernel thread: it cannot move; it runs what the causes above count (softirqs in ksoftirqd, queued work in kworkers, RCU in rcuc)",
	}
	tickRemedies = map[string]string{
		"SCHED":          "more than one task was runnable on the CPU",
		"POSIX_TIMER":    "a POSIX CPU-time timer is armed (setitimer, timer_create on a CPU clock)",
		"PERF_EVENTS":    "perf events need the tick (perf stat/record on the CPU)",
		"RCU":            "RCU needs the CPU (rcu_nocbs= and nohz_full= together)",
		"RCU_EXP":        "an expedited RCU grace period needs the CPU",
		"CLOCK_UNSTABLE": "the scheduler clock is unstable (an unstable TSC)",
	}
)

// fixes fills in the remedies of one CPU.
type fixes struct {
	cpu          int
	housekeeping string // the CPUs not watched
}

func (f fixes) fill(tmpl string, kv ...string) string {
	hk := "CPU " + f.housekeeping // "CPU 0", "CPUs 0,2-3"
	if strings.ContainsAny(f.housekeeping, ",-") {
		hk = "CPUs " + f.housekeeping
	}
	kv = append(kv, "{cpu}", fmt.Sprint(f.cpu), "{hk}", f.housekeeping, "{hkcpus}", hk)
	return strings.NewReplacer(kv...).Replace(tmpl)
}

func (f fixes) ipi(r IPIRow) string {
	if r.SenderTID == 0 {
		return ipiRemedies[""]
	}
	tmpl, ok := callRemedies[r.Func]
	if !ok || r.Kind != "function call" {
		tmpl = ipiRemedies[r.Kind]
	}
	return f.fill(tmpl, "{sender}", who(r.Comm, r.SenderTID), "{func}", orDash(r.Func), "{callsite}", orDash(r.Callsite),
		"{scpu}", fmt.Sprint(r.SenderCPU))
}

// irq: the affinity to write, or why the IRQ came here anyway.
func (f fixes) irq(r IRQRow) string {
	aff, _ := parseList(r.Affinity)
	eff, _ := parseList(r.Effective)
	switch {
	case hasCPU(aff, f.cpu):
		return f.fill("its affinity ({aff}) includes CPU {cpu}: echo {hk} > /proc/irq/{irq}/smp_affinity_list (or irqaffinity={hk} at boot)",
			"{aff}", r.Affinity, "{irq}", fmt.Sprint(r.IRQ))
	case hasCPU(eff, f.cpu):
		return f.fill("its effective affinity ({eff}) is CPU {cpu} though smp_affinity_list is {aff}: a managed IRQ; boot with isolcpus=managed_irq,{cpu}",
			"{eff}", r.Effective, "{aff}", r.Affinity)
	}
	return f.fill("its affinity ({aff}) excludes CPU {cpu}: it was changed during the run, or the handler is per-CPU", "{aff}", r.Affinity)
}

func (f fixes) softirq(vec string) string {
	if t, ok := softirqRemedies[vec]; ok {
		return f.fill(t)
	}
	return f.fill("softirq {vec} runs on CPU {cpu}", "{vec}", vec)
}

// work is the remedy of work fn run on the CPU; how: "queued" (tasks
// queued it), "irq" (only interrupts on the CPU did), "" (none seen).
func (f fixes) work(fn, how string) string {
	if t, ok := workRemedies[fn]; ok {
		return f.fill(t)
	}
	return f.fill(workRemedies[how])
}

func (f fixes) task(r TaskRow) string {
	what := "task"
	switch {
	case r.Kthread && r.PerCPU:
		what = "per-CPU kernel thread"
	case r.Kthread:
		what = "kernel thread"
	}
	pid := r.PID
	if r.Kthread {
		pid = r.TID
	}
	return f.fill(taskRemedies[what], "{pid}", fmt.Sprint(pid))
}

// tickWhy says what each dependency that kept the tick means.
func tickWhy(dep string) string {
	if t, ok := tickRemedies[dep]; ok {
		return t
	}
	return "dependency " + dep
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func parseList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	return cpusetParse(s)
}
