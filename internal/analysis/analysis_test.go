package analysis

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/preempt"
	"github.com/rtscope/rtscope/internal/trace"
)

// explain is Explain on a kernel of the given preemption model.
func explain(tr *trace.Trace, s Subject, model preempt.Model) *Result {
	s.Preemption = model
	return Explain(tr, s)
}

// Synthetic windows: events written by hand, as internal/trace decodes them.

type th struct {
	tid   uint32
	comm  string
	sched string
	kprio int
}

var (
	idle       = th{0, "idle", "", 120}
	control    = th{100, "control", "FIFO 80", 19}
	background = th{101, "background", "FIFO 90", 9}
	hog        = th{102, "hog", "FIFO 90", 9}
	inject     = th{103, "preempt-inject", "OTHER nice 0", 120}
	taskH      = th{110, "task-H", "FIFO 90", 9}
	taskM      = th{111, "task-M", "FIFO 50", 49}
	taskL      = th{112, "task-L", "FIFO 10", 89}
	taskLBoost = th{112, "task-L", "FIFO 90", 9}
	notifier   = th{120, "notifier", "FIFO 1", 98}
	other      = th{130, "editor", "OTHER nice 0", 120}
	peer       = th{131, "peer", "FIFO 80", 19}
)

func ip(v int) *int       { return &v }
func i64(v int64) *int64  { return &v }
func us1(v float64) int64 { return int64(v * 1000) }

func sw(t int64, cpu int, prev th, state string, next th) trace.Event {
	e := trace.Event{T: t, CPU: cpu, Type: "switch", PrevTID: prev.tid, PrevComm: prev.comm, PrevSched: prev.sched,
		PrevKPrio: prev.kprio, PrevState: state, NextTID: next.tid, NextComm: next.comm, NextSched: next.sched, NextKPrio: next.kprio}
	e.Preempted = state == "R+"
	return e
}

func wakeTimer(t int64, cpu int, who th, expiry int64) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "wakeup", TID: who.tid, Comm: who.comm, Sched: who.sched, KPrio: who.kprio,
		TargetCPU: ip(cpu), ExpiryT: i64(expiry), Waker: &trace.Waker{Kind: "timer", Function: "hrtimer_wakeup"}}
}

func wakeBy(t int64, cpu int, who th, by th) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "wakeup", TID: who.tid, Comm: who.comm, Sched: who.sched, KPrio: who.kprio,
		TargetCPU: ip(cpu), Waker: &trace.Waker{Kind: "task", TID: by.tid, Comm: by.comm, Sched: by.sched, KPrio: by.kprio}}
}

func timerIn(t int64, cpu int, fn string, expiry int64) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "timer_entry", Function: fn, HardIRQ: true, ExpiryT: i64(expiry)}
}

func timerOut(t int64, cpu int, fn string) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "timer_exit", Function: fn, HardIRQ: true}
}

func sleep(t int64, cpu int, who th, reason trace.Reason) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "sleep", TID: who.tid, Comm: who.comm, State: "S", Reason: reason}
}

func sleepUntil(t int64, cpu int, who th, reason trace.Reason, expiry int64) trace.Event {
	e := sleep(t, cpu, who, reason)
	e.ExpiryT = i64(expiry)
	return e
}

func stack(t int64, cpu int, who th, waiting th, frames ...string) trace.Event {
	e := trace.Event{T: t, CPU: cpu, Type: "stack", TID: who.tid, Comm: who.comm, WaitingTID: waiting.tid, Stack: frames}
	if len(frames) == 0 {
		e.Reason = "user space"
	}
	return e
}

func irqIn(t int64, cpu, irq int, name string) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "irq_entry", IRQ: ip(irq), IRQName: name}
}

func irqOut(t int64, cpu, irq int, name string) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "irq_exit", IRQ: ip(irq), IRQName: name}
}

func softIn(t int64, cpu, vec int, name string) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "softirq_entry", Vec: ip(vec), VecName: name}
}

func softOut(t int64, cpu, vec int, name string) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "softirq_exit", Vec: ip(vec), VecName: name}
}

func window(metric string, subj th, w int64, evs ...trace.Event) *trace.Trace {
	return &trace.Trace{Metric: metric, TID: subj.tid, Value: uint64(w), Start: 1_000_000_000, End: 1_000_000_000 + uint64(w),
		CPUStart: 1, CPUEnd: 1, CPUs: []int{1}, Events: evs}
}

func subject(t th, metric string) Subject {
	pol := strings.Fields(t.sched)[0]
	return Subject{TID: t.tid, Comm: t.comm, Policy: pol, KPrio: t.kprio, Sched: t.sched, Metric: metric}
}

// checkSums: the items add up to the window, the percentages to 100.0.
func checkSums(t *testing.T, r *Result) {
	t.Helper()
	var ns uint64
	var tenths int64
	for _, it := range r.Breakdown {
		ns += it.Ns
		tenths += int64(it.Percent*10 + 0.5)
	}
	if ns != r.WindowNs {
		t.Errorf("items add up to %d ns, window is %d ns:\n%s", ns, r.WindowNs, dump(r))
	}
	if len(r.Breakdown) > 0 && tenths != 1000 {
		t.Errorf("percentages add up to %.1f%%:\n%s", float64(tenths)/10, dump(r))
	}
	p := r.PhaseNs
	if p.Release+p.Runnable+p.Running+p.Blocked != r.WindowNs {
		t.Errorf("phase totals %+v do not add up to %d", p, r.WindowNs)
	}
}

func dump(r *Result) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "cause %s: %s\n", r.Cause, r.Verdict)
	r.WriteText(&b, "  ")
	return b.String()
}

func item(r *Result, phase Phase, kind Kind, tid uint32) *Item {
	for i := range r.Breakdown {
		it := &r.Breakdown[i]
		if it.Phase == phase && it.Kind == kind && (tid == 0 || (it.Thread != nil && it.Thread.TID == tid)) {
			return it
		}
	}
	return nil
}

func wantCause(t *testing.T, r *Result, cause Cause, words ...string) {
	t.Helper()
	if r.Cause != cause {
		t.Errorf("cause %q, want %q:\n%s", r.Cause, cause, dump(r))
	}
	for _, w := range words {
		if !strings.Contains(r.Verdict, w) {
			t.Errorf("verdict lacks %q: %s", w, r.Verdict)
		}
	}
}

// Case 6.1 of the origin paper: a FIFO 90 task runs through the wait of a FIFO 80 one.
func TestPriorityMisconfiguration(t *testing.T) {
	tr := window("latency", control, us1(2000),
		sw(us1(-100), 1, idle, "R", background),
		timerIn(us1(-2), 1, "hrtimer_wakeup", us1(-10)),
		wakeTimer(0, 1, control, us1(-10)),
		timerOut(us1(3), 1, "hrtimer_wakeup"),
		sleep(us1(2000), 1, background, "timer sleep (nanosleep)"),
		sw(us1(2000), 1, background, "S", control),
	)
	r := explain(tr, subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "interference", "priority misconfiguration", "background/101 (FIFO 90)", "1997.0 us", "FIFO 80", "CPU 1")
	if it := item(r, PhaseRunnable, KindInterference, background.tid); it == nil || it.Ns != uint64(us1(1997)) {
		t.Errorf("interference item: %+v", it)
	}
	if it := item(r, PhaseRunnable, KindOwnTimer, 0); it == nil || it.Ns != uint64(us1(3)) {
		t.Errorf("own timer callback item: %+v", it)
	}
	if r.BlockingThread == nil || r.BlockingThread.TID != background.tid {
		t.Errorf("blocking thread %+v", r.BlockingThread)
	}
	if len(r.Releases) != 1 || r.Releases[0].Where != "start" || *r.Releases[0].IRQDelayNs != us1(8) {
		t.Errorf("release %+v", r.Releases)
	}
	if !strings.Contains(strings.Join(r.RuledOut, ","), "hard IRQs") || !strings.Contains(strings.Join(r.RuledOut, ","), "migration (stayed on CPU 1)") {
		t.Errorf("ruled out: %v", r.RuledOut)
	}
}

// A non-RT task kept off its CPU by an RT one: starvation, not misconfiguration.
func TestStarvationOfNormalTask(t *testing.T) {
	tr := window("latency", other, us1(5000),
		sw(us1(-10), 1, idle, "R", hog),
		wakeBy(0, 1, other, hog),
		sw(us1(5000), 1, hog, "S", other),
	)
	r := explain(tr, subject(other, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "cpu-hog", "CPU hog / starvation", "hog/102")
}

// Case: the timer's interrupt is held up by another hard-IRQ callback (irq-noise).
func TestHardIRQNoiseOnTimerIRQ(t *testing.T) {
	injector := th{140, "irq-inject", "FIFO 1", 98}
	tr := window("timer-irq", control, us1(2940),
		sw(us1(-900), 1, control, "S", idle),
		timerIn(us1(-70), 1, "hrtimer_wakeup", us1(-100)),
		wakeTimer(us1(2930), 1, injector, us1(-100)),
		timerOut(us1(2935), 1, "hrtimer_wakeup"),
		timerIn(us1(2940), 1, "hrtimer_wakeup", 0),
	)
	r := explain(tr, subject(control, "timer-irq"), "none")
	checkSums(t, r)
	wantCause(t, r, "hardirq", "hard-IRQ noise", "2940.0 us late", "irq-inject/140", "CPU 1")
	if r.PhaseNs.Release != r.WindowNs {
		t.Errorf("a timer-irq window is all release: %+v", r.PhaseNs)
	}
	if len(r.Releases) != 1 || *r.Releases[0].IRQDelayNs != us1(2940) || r.Releases[0].CPUState != "hard IRQ" {
		t.Errorf("release %+v", r.Releases)
	}
}

// The timer interrupt arrives late while the CPU is idle: exit from idle.
func TestExitFromIdle(t *testing.T) {
	tr := window("timer-irq", control, us1(250),
		sw(us1(-800), 1, control, "S", idle),
		timerIn(us1(250), 1, "hrtimer_wakeup", 0),
	)
	r := explain(tr, subject(control, "timer-irq"), "none")
	checkSums(t, r)
	wantCause(t, r, "exit-from-idle", "exit from idle", "idle when the timer expired")
}

func interruptsOffTrace(stealClock bool, sampled ...trace.Event) *trace.Trace {
	evs := []trace.Event{
		sw(us1(-800), 1, control, "S", other),
		timerIn(us1(3350), 1, "hrtimer_wakeup", 0),
		wakeTimer(us1(3354), 1, control, 0),
	}
	evs = append(evs, sampled...)
	evs = append(evs, timerOut(us1(3356), 1, "hrtimer_wakeup"), sw(us1(3360), 1, other, "R+", control))
	tr := window("timer-thread", control, us1(3360), evs...)
	tr.StealClock = stealClock
	return tr
}

// The timer interrupt arrives late while a task runs with no other event,
// and the steal clock says the hypervisor took nothing: interrupts off.
func TestInterruptsOff(t *testing.T) {
	r := explain(interruptsOffTrace(true), subject(control, "timer-thread"), "none")
	checkSums(t, r)
	wantCause(t, r, "irq-off", "interrupts were disabled", "editor/130")
	if it := item(r, PhaseRelease, KindIRQOff, other.tid); it == nil || it.Ns != uint64(us1(3350)) {
		t.Errorf("irq-off item %+v", it)
	}
	if r.StealNs == nil || *r.StealNs != 0 {
		t.Errorf("steal %v, want 0 (a steal clock, no steal)", r.StealNs)
	}
}

// The same window where no steal clock exists and no stack was sampled:
// nothing tells interrupts off from a CPU that did not run, so the task
// that happened to be current is not blamed.
func TestInterruptsOffOrCPUNotRunning(t *testing.T) {
	r := explain(interruptsOffTrace(false), subject(control, "timer-thread"), "none")
	checkSums(t, r)
	wantCause(t, r, "cpu-unavailable", "CPU 1 recorded nothing for 3350.0 us", "not running", "no stack sample nothing in the trace tells which")
	if r.StealNs != nil {
		t.Errorf("steal %d, want unknown (no steal clock)", *r.StealNs)
	}
}

// Without a steal clock, the late timer's callback sampled the task its
// interrupt stopped: in kernel code (where interrupts came back on), so
// interrupts off with its stack; in user space, which cannot keep them off,
// so the CPU was not running.
func TestInterruptsOffSampledAtTheLateInterrupt(t *testing.T) {
	tr := interruptsOffTrace(false, stack(us1(3354), 1, other, control, "rtsfi_irqoff_fn", "kthread"))
	r := explain(tr, subject(control, "timer-thread"), "none")
	checkSums(t, r)
	wantCause(t, r, "irq-off", "interrupts were disabled", "editor/130", "its kernel stack: rtsfi_irqoff_fn <- kthread")

	tr = interruptsOffTrace(false, stack(us1(3354), 1, other, control))
	r = explain(tr, subject(control, "timer-thread"), "none")
	wantCause(t, r, "cpu-unavailable", "CPU 1 was not running", "in user space, which cannot keep interrupts off")

	// A timer-irq window ends at the interrupt's entry: the stack comes
	// just after it.
	tr = window("timer-irq", control, us1(3350),
		sw(us1(-800), 1, control, "S", other),
		timerIn(us1(3350), 1, "hrtimer_wakeup", 0),
		wakeTimer(us1(3354), 1, control, 0),
		stack(us1(3354), 1, other, control, "rtsfi_irqoff_fn", "kthread"),
	)
	r = explain(tr, subject(control, "timer-irq"), "none")
	checkSums(t, r)
	wantCause(t, r, "irq-off", "interrupts were disabled", "its kernel stack: rtsfi_irqoff_fn <- kthread")
}

func preemptOffTrace(frames ...string) *trace.Trace {
	return window("latency", control, us1(3000),
		sw(us1(-60), 1, idle, "R", inject),
		timerIn(us1(-1), 1, "hrtimer_wakeup", us1(-20)),
		wakeTimer(0, 1, control, us1(-20)),
		timerOut(us1(2), 1, "hrtimer_wakeup"),
		timerIn(us1(1500), 1, "tick_nohz_handler", us1(1490)),
		stack(us1(1500), 1, inject, control, frames...),
		timerOut(us1(1510), 1, "tick_nohz_handler"),
		sw(us1(3000), 1, inject, "R+", control),
	)
}

// A SCHED_OTHER task in the kernel keeps a FIFO 80 task off its CPU.
func TestNonPreemptibleSection(t *testing.T) {
	r := explain(preemptOffTrace("bpf_test_run", "bpf_prog_test_run_raw_tp", "__sys_bpf"), subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "non-preemptible", "non-preemptible kernel section", "woken on time", "preempt-inject/103",
		"preempt=none", "bpf_test_run <- bpf_prog_test_run_raw_tp")
	if it := item(r, PhaseRunnable, KindBlocking, inject.tid); it == nil || it.Ns != uint64(us1(2998-10)) {
		t.Errorf("blocking item %+v", it)
	}
	if it := item(r, PhaseRunnable, KindTimer, 0); it == nil || it.Ns != uint64(us1(10)) || it.Function != "tick_nohz_handler" {
		t.Errorf("tick item %+v", it)
	}
	if b := r.BlockingThread; b == nil || b.TID != inject.tid || len(b.Stack) != 3 || b.UserSpace {
		t.Errorf("blocking thread %+v", b)
	}
	// The same with a fully preemptible kernel, and with an unknown model.
	r = explain(preemptOffTrace("bpf_test_run"), subject(control, "latency"), "full")
	wantCause(t, r, "non-preemptible", "with preemption disabled")
	r = explain(preemptOffTrace("bpf_test_run"), subject(control, "latency"), "")
	wantCause(t, r, "non-preemptible", "the preemption model is unknown")
}

// The same wait with the blocker sampled in user space is not a kernel
// section: user space is preemptible, so only throttling keeps it there.
func TestLowerPriorityInUserSpace(t *testing.T) {
	r := explain(preemptOffTrace(), subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "rt-throttling", "preempt-inject/103 ran in user space", "fair server")
	if len(r.Throttling) != 1 || !r.Throttling[0].UserSpace || r.Throttling[0].Ns != uint64(us1(3000)) {
		t.Errorf("throttling %+v, want the whole wait, sampled in user space", r.Throttling)
	}
}

// SCHED_FIFO never preempts an equal priority.
func TestEqualPriority(t *testing.T) {
	tr := window("latency", control, us1(1000),
		sw(us1(-10), 1, idle, "R", peer),
		wakeBy(0, 1, control, peer),
		sw(us1(1000), 1, peer, "S", control),
	)
	r := explain(tr, subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "blocking", "equal-priority", "peer/131")
}

func inversionTrace(pi bool) *trace.Trace {
	if pi {
		// L inherits H's priority and runs its critical section at once.
		return window("cycle", taskH, us1(3000),
			sw(us1(-700), 1, taskL, "R+", taskM),
			timerIn(us1(-2), 1, "hrtimer_wakeup", us1(-17)),
			wakeTimer(0, 1, taskH, us1(-17)),
			timerOut(us1(3), 1, "hrtimer_wakeup"),
			sw(us1(10), 1, taskM, "R+", taskH),
			sleep(us1(1000), 1, taskH, "PI futex lock"),
			sw(us1(1000), 1, taskH, "S", taskLBoost),
			wakeBy(us1(2900), 1, taskH, taskLBoost),
			sw(us1(2905), 1, taskL, "R+", taskH),
			sleep(us1(3000), 1, taskH, "timer sleep (nanosleep)"),
			sw(us1(3000), 1, taskH, "S", taskM),
		)
	}
	return window("cycle", taskH, us1(9600),
		sw(us1(-700), 1, taskL, "R+", taskM),
		timerIn(us1(-2), 1, "hrtimer_wakeup", us1(-17)),
		wakeTimer(0, 1, taskH, us1(-17)),
		timerOut(us1(3), 1, "hrtimer_wakeup"),
		sw(us1(10), 1, taskM, "R+", taskH),
		sleep(us1(1000), 1, taskH, "futex wait"),
		sw(us1(1000), 1, taskH, "S", taskM),
		sleep(us1(9000), 1, taskM, "timer sleep (nanosleep)"),
		sw(us1(9000), 1, taskM, "S", taskL),
		wakeBy(us1(9500), 1, taskH, taskL),
		sw(us1(9505), 1, taskL, "R+", taskH),
		sleep(us1(9600), 1, taskH, "timer sleep (nanosleep)"),
		sw(us1(9600), 1, taskH, "S", taskL),
	)
}

// Case 6.4: H waits on a plain futex held by L while M preempts L.
func TestPriorityInversion(t *testing.T) {
	r := explain(inversionTrace(false), subject(taskH, "cycle"), "none")
	checkSums(t, r)
	wantCause(t, r, "priority-inversion", "priority inversion", "without priority inheritance", "task-L/112 (FIFO 10)",
		"task-M/111 (FIFO 50)", "8000.0 us", "PTHREAD_PRIO_INHERIT")
	inv := r.Inversion
	if inv == nil || !inv.Inverted || inv.BlockedNs != uint64(us1(8500)) || inv.OwnerWaitNs != uint64(us1(8000)) ||
		inv.OwnerRunNs != uint64(us1(500)) || len(inv.Preempters) != 1 || inv.Preempters[0].TID != taskM.tid {
		t.Errorf("inversion %+v", inv)
	}
	if r.FutexWaitsNoPI != 1 {
		t.Errorf("futex waits without PI: %d", r.FutexWaitsNoPI)
	}
}

// With priority inheritance L runs boosted: a lock wait, no inversion.
func TestPriorityInheritanceNoInversion(t *testing.T) {
	r := explain(inversionTrace(true), subject(taskH, "cycle"), "none")
	checkSums(t, r)
	wantCause(t, r, "internal-blocking", "priority-inheritance futex", "task-L/112")
	if strings.Contains(r.Verdict, "inversion:") || (r.Inversion != nil && r.Inversion.Inverted) {
		t.Errorf("inversion reported with PI: %s", r.Verdict)
	}
	if r.FutexWaitsNoPI != 0 {
		t.Errorf("a PI lock counted as a futex wait without PI")
	}
}

// Issue 15, item 4: the owner of the task's PI lock (FIFO 5) runs boosted
// to the waiter's FIFO 70 after releasing it to the waiter, until it is
// switched out: it ran on the waiter's behalf, not as a higher or equal
// priority.
func TestBoostedLockOwner(t *testing.T) {
	waiter := th{140, "waiter", "FIFO 70", 29}
	owner := th{141, "owner", "FIFO 5", 94}
	boosted := th{141, "owner", "FIFO 70", 29}
	stale := th{140, "waiter", "OTHER nice 0", 120}
	const want = "owner/141 (FIFO 5, boosted to 70 by waiter (PI)) ran by priority inheritance while holding this task's lock"
	// A cycle: the waiter blocks on the PI lock, the owner runs boosted
	// and wakes it, and keeps the CPU 40 us more in the kernel.
	cycle := window("cycle", waiter, us1(1100),
		sw(us1(-500), 1, idle, "R", owner),
		sw(us1(-100), 1, owner, "R+", waiter),
		sleep(us1(100), 1, waiter, "PI futex lock"),
		sw(us1(100), 1, waiter, "S", boosted),
		wakeBy(us1(1000), 1, waiter, owner),
		sw(us1(1040), 1, boosted, "R+", waiter),
		sleep(us1(1100), 1, waiter, "timer sleep (nanosleep)"),
		sw(us1(1100), 1, waiter, "S", owner),
	)
	for _, subj := range []th{waiter, stale} { // stale: the identity the report had
		r := explain(cycle, subject(subj, "cycle"), "none")
		checkSums(t, r)
		it := item(r, PhaseRunnable, KindBlocking, owner.tid)
		if it == nil || it.Label != want || it.Ns != uint64(us1(40)) || it.Thread.BoostedFrom != "FIFO 5" {
			t.Errorf("subject %s: owner item %+v, want %q for 40 us:\n%s", subj.sched, it, want, dump(r))
		}
		for _, it := range r.Breakdown {
			if strings.Contains(it.Label, "higher priority") || strings.Contains(it.Label, "equal priority") {
				t.Errorf("subject %s: %s", subj.sched, it.Label)
			}
		}
	}
	// A latency window the boosted owner dominates: a lock hand-over.
	lat := window("latency", waiter, us1(500),
		sw(us1(-2000), 1, idle, "R", owner),
		sw(us1(-1500), 1, owner, "R+", waiter),
		sleep(us1(-900), 1, waiter, "PI futex lock"),
		sw(us1(-900), 1, waiter, "S", boosted),
		wakeBy(0, 1, waiter, owner),
		sw(us1(500), 1, boosted, "R+", waiter),
	)
	r := explain(lat, subject(waiter, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "internal-blocking", "lock hand-over", "owner/141 (FIFO 5, boosted to 70 by waiter (PI))", "not a higher priority")
	// A FIFO 90 task holding the lock is no boost: plain interference.
	hi := th{141, "owner", "FIFO 90", 9}
	plain := window("latency", waiter, us1(500),
		sleep(us1(-900), 1, waiter, "PI futex lock"),
		sw(us1(-900), 1, waiter, "S", hi),
		wakeBy(0, 1, waiter, hi),
		sw(us1(500), 1, hi, "R+", waiter),
	)
	r = explain(plain, subject(waiter, "latency"), "none")
	wantCause(t, r, "interference", "owner/141 (FIFO 90)")
}

// Issue 36: with --pi, task-L (FIFO 10) runs boosted to 90 for task-H's
// lock while task-M (FIFO 50) waits: task-M's verdict names the boost,
// with its booster, and never a priority misconfiguration. The boost is
// told from the window alone: task-H's PI futex sleep, or, when that sleep
// is before the window, task-L seen at FIFO 10 and at task-H's priority,
// and waking task-H.
func TestBoostedForAnotherWaiter(t *testing.T) {
	const want = "task-L/112 (FIFO 10, boosted to 90 by task-H (PI))"
	for _, withSleep := range []bool{true, false} {
		evs := []trace.Event{
			sw(us1(-3000), 1, idle, "R", taskL),
			sw(us1(-2000), 1, taskL, "R+", taskH),
			sleep(us1(-1500), 1, taskH, "PI futex lock"),
			sw(us1(-1500), 1, taskH, "S", taskLBoost),
			wakeTimer(0, 1, taskM, 0),
			wakeBy(us1(1900), 1, taskH, taskL), // the unlock: task-L back at FIFO 10
			sw(us1(1905), 1, taskL, "R+", taskH),
			sleep(us1(2100), 1, taskH, "timer sleep (nanosleep)"),
			sw(us1(2100), 1, taskH, "S", taskM),
		}
		if !withSleep {
			evs = slices.Delete(evs, 2, 3)
		}
		r := explain(window("latency", taskM, us1(2100), evs...), subject(taskM, "latency"), "none")
		checkSums(t, r)
		wantCause(t, r, "interference", "priority-inheritance boost", want, "holding a lock task-H waits for",
			"not a priority misconfiguration")
		if strings.Contains(r.Verdict, "A priority misconfiguration") || strings.Contains(r.Verdict, "task-L/112 (FIFO 90)") {
			t.Errorf("PI sleep in the window %v: %s", withSleep, r.Verdict)
		}
		// The event listings name it so too (report.BoostNamer), at 90 only.
		if got, ok := r.BoostedSched(taskL.tid, taskLBoost.kprio); !ok || got != "FIFO 10, boosted to 90 by task-H (PI)" {
			t.Errorf("PI sleep in the window %v: listed as %q", withSleep, got)
		}
		if got, ok := r.BoostedSched(taskL.tid, taskL.kprio); ok {
			t.Errorf("task-L at its own FIFO 10 listed as boosted: %q", got)
		}
		for _, it := range r.Breakdown {
			if it.Thread != nil && it.Thread.TID == taskL.tid && it.Thread.KPrio == taskLBoost.kprio && !strings.Contains(it.Label, want) {
				t.Errorf("PI sleep in the window %v: boosted task-L unlabelled: %s", withSleep, it.Label)
			}
		}
	}
	// task-L raised to FIFO 90 by sched_setattr wakes nobody at 90: no boost.
	r := explain(window("latency", taskM, us1(2000),
		sw(us1(-3000), 1, idle, "R", taskL),
		sw(us1(-1500), 1, taskL, "R+", taskLBoost),
		wakeTimer(0, 1, taskM, 0),
		sw(us1(2000), 1, taskLBoost, "S", taskM),
	), subject(taskM, "latency"), "none")
	if strings.Contains(r.Verdict, "boost") {
		t.Errorf("a plain priority change taken for a boost: %s", r.Verdict)
	}
}

// Case 6.2: a semaphore posted by a lower-priority thread that sleeps meanwhile.
func TestInternalBlocking(t *testing.T) {
	tr := window("cycle", control, us1(6100),
		sw(us1(-50), 1, control, "S", idle),
		timerIn(us1(-3), 1, "hrtimer_wakeup", us1(-20)),
		wakeTimer(0, 1, control, us1(-20)),
		timerOut(us1(2), 1, "hrtimer_wakeup"),
		sw(us1(5), 1, idle, "R", control),
		sleep(us1(1000), 1, control, "futex wait"),
		sw(us1(1000), 1, control, "S", idle),
		timerIn(us1(6000), 1, "hrtimer_wakeup", us1(5990)),
		wakeTimer(us1(6002), 1, notifier, us1(5990)),
		timerOut(us1(6004), 1, "hrtimer_wakeup"),
		sw(us1(6010), 1, idle, "R", notifier),
		wakeBy(us1(6020), 1, control, notifier),
		sw(us1(6025), 1, notifier, "R+", control),
		sleep(us1(6100), 1, control, "timer sleep (nanosleep)"),
		sw(us1(6100), 1, control, "S", notifier),
	)
	r := explain(tr, subject(control, "cycle"), "none")
	checkSums(t, r)
	wantCause(t, r, "internal-blocking", "internal blocking", "futex wait", "5020.0 us", "notifier/120 (FIFO 1)")
	if r.Inversion == nil || r.Inversion.Inverted {
		t.Errorf("the notifier was asleep, not preempted: %+v", r.Inversion)
	}
	if r.PhaseNs.Running != uint64(us1(995+75)) {
		t.Errorf("running %d", r.PhaseNs.Running)
	}
}

// Mixed: a hog, a device IRQ and a softirq in one wait; each gets its share,
// the largest names the cause, and the shares still add up to 100%.
func TestMixedIRQAndInterference(t *testing.T) {
	mk := func(irqLen float64) *trace.Trace {
		return window("latency", control, us1(1000+irqLen+200),
			sw(us1(-10), 1, idle, "R", hog),
			wakeBy(0, 1, control, hog),
			irqIn(us1(300), 1, 36, "virtio1-req.0"),
			irqOut(us1(300+irqLen), 1, 36, "virtio1-req.0"),
			softIn(us1(300+irqLen), 1, 3, "NET_RX"),
			softOut(us1(500+irqLen), 1, 3, "NET_RX"),
			sw(us1(1000+irqLen+200), 1, hog, "S", control),
		)
	}
	r := explain(mk(800), subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "interference", "hog/102")
	if it := item(r, PhaseRunnable, KindHardIRQ, 0); it == nil || it.Ns != uint64(us1(800)) || it.IRQName != "virtio1-req.0" {
		t.Errorf("irq item %+v", it)
	}
	if it := item(r, PhaseRunnable, KindSoftIRQ, 0); it == nil || it.Ns != uint64(us1(200)) || it.VecName != "NET_RX" {
		t.Errorf("softirq item %+v", it)
	}
	if it := item(r, PhaseRunnable, KindInterference, hog.tid); it == nil || it.Ns != uint64(us1(1000)) || it.Spans != 2 {
		t.Errorf("hog item %+v", it)
	}
	r = explain(mk(3000), subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "hardirq", "hard-IRQ noise", "hard IRQ 36 virtio1-req.0")
}

// A task runnable on a busy CPU is pulled to another one.
func TestMigration(t *testing.T) {
	tr := &trace.Trace{Metric: "latency", TID: control.tid, Value: uint64(us1(500)), Start: 1e9, End: 1e9 + uint64(us1(500)),
		CPUStart: 0, CPUEnd: 1, CPUs: []int{0, 1}, Events: []trace.Event{
			sw(us1(-10), 0, idle, "R", hog),
			sw(us1(-10), 1, idle, "R", other),
			wakeBy(0, 0, control, hog),
			{T: us1(450), CPU: 1, Type: "migrate", TID: control.tid, Comm: control.comm, FromCPU: ip(0), ToCPU: ip(1)},
			sw(us1(500), 1, other, "R+", control),
		}}
	tr.Events[2].TargetCPU = ip(0)
	r := explain(tr, subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "interference", "hog/102", "migrated from CPU 0 to CPU 1")
	if len(r.Migrations) != 1 || r.Migrations[0].From != 0 || r.Migrations[0].To != 1 {
		t.Errorf("migrations %+v", r.Migrations)
	}
	if it := item(r, PhaseRunnable, KindBlocking, other.tid); it == nil || it.Ns != uint64(us1(50)) || it.CPU != 1 {
		t.Errorf("after the migration, CPU 1's task: %+v", it)
	}
}

// A CPU the trace did not record (a truncated trace): unknown, said as such.
func TestUnknownCPU(t *testing.T) {
	tr := window("latency", control, us1(100), wakeBy(0, 1, control, hog))
	tr.Events[0].TargetCPU = ip(3)
	tr.Truncated, tr.Note = true, "the flight recorder of CPU 3 was overwritten"
	r := explain(tr, subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "inconclusive", "inconclusive", "no events", "CPU 3", "overwritten")
	// Time no event tells of can hide any cause: nothing is ruled out.
	if len(r.RuledOut) != 0 || strings.Contains(r.Verdict, "ruled out") {
		t.Errorf("ruled out %v in a window with no events: %s", r.RuledOut, r.Verdict)
	}
}

// A short period: its start was released late (the CPU was idle).
func TestJitterLateStart(t *testing.T) {
	tr := window("jitter", control, us1(741),
		sw(us1(-690), 1, control, "S", idle),
		timerIn(us1(-2), 1, "hrtimer_wakeup", us1(-267)),
		wakeTimer(0, 1, control, us1(-267)),
		timerOut(us1(3), 1, "hrtimer_wakeup"),
		sw(us1(11), 1, idle, "R", control),
		sleep(us1(228), 1, control, "timer sleep (nanosleep)"),
		sw(us1(228), 1, control, "S", idle),
		timerIn(us1(740), 1, "hrtimer_wakeup", us1(733)),
		wakeTimer(us1(741), 1, control, us1(733)),
	)
	s := subject(control, "jitter")
	s.NominalPeriod = uint64(us1(1000))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "exit-from-idle", "259.0 us shorter", "started late", "267.0 us after the timer expiry")
	if len(r.Releases) != 2 || r.Releases[0].Where != "start" || r.Releases[1].Where != "end" {
		t.Errorf("releases %+v", r.Releases)
	}
	if it := item(r, PhaseBlocked, KindPeriodSleep, 0); it == nil || it.Ns != uint64(us1(733-228)) {
		t.Errorf("period sleep %+v", it)
	}
}

// A long period whose end was released late by hard-IRQ noise.
func TestPeriodLateEnd(t *testing.T) {
	tr := window("period", control, us1(2000),
		wakeTimer(0, 1, control, 0),
		sw(us1(5), 1, idle, "R", control),
		sleep(us1(100), 1, control, "timer sleep (nanosleep)"),
		sw(us1(100), 1, control, "S", idle),
		timerIn(us1(950), 1, "hrtimer_wakeup", us1(940)),
		wakeTimer(us1(1990), 1, th{140, "irq-inject", "FIFO 1", 98}, us1(940)),
		timerOut(us1(1995), 1, "hrtimer_wakeup"),
		timerIn(us1(1997), 1, "hrtimer_wakeup", us1(1000)),
		wakeTimer(us1(2000), 1, control, us1(1000)),
	)
	s := subject(control, "period")
	s.NominalPeriod = uint64(us1(1000))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "hardirq", "1000.0 us longer", "997.0 us late", "irq-inject/140")
}

// Own execution dominates a response window: said, with what was ruled out.
func TestOwnExecution(t *testing.T) {
	tr := window("response", control, us1(1000),
		wakeTimer(0, 1, control, 0),
		sw(us1(5), 1, idle, "R", control),
		sleep(us1(1000), 1, control, "timer sleep (nanosleep)"),
		sw(us1(1000), 1, control, "S", idle),
	)
	r := explain(tr, subject(control, "response"), "none")
	checkSums(t, r)
	wantCause(t, r, "execution", "own execution", "995.0 us", "ruled out")
}

// A sparse trace (only the task's own events before SparseUntil) is
// explained from the task's events, and the explanation says what the
// sparse part cannot tell.
func TestSparseTraceSaid(t *testing.T) {
	tr := window("response", control, us1(1000),
		wakeTimer(0, 1, control, 0),
		sw(us1(5), 1, idle, "R", control),
		sleep(us1(1000), 1, control, "timer sleep (nanosleep)"),
		sw(us1(1000), 1, control, "S", idle),
	)
	sparse := us1(600)
	tr.SparseUntil = &sparse
	tr.Note = "until 600.0 us after its start the window holds only the task's own events"
	r := explain(tr, subject(control, "response"), "none")
	checkSums(t, r)
	wantCause(t, r, "execution", "own execution", "995.0 us")
	if notes := strings.Join(r.Notes, " "); !strings.Contains(notes, "sparse trace: until 600.0 us") || !strings.Contains(notes, "may include interrupts") {
		t.Errorf("notes %q do not say the trace is sparse and what that hides", notes)
	}
}

// Lost events: the task runs with no recorded wakeup; the gap is said, not guessed.
func TestMissedEvents(t *testing.T) {
	tr := window("cycle", control, us1(3000),
		wakeTimer(0, 1, control, 0),
		sw(us1(5), 1, idle, "R", control),
		sleepUntil(us1(1000), 1, control, "timer sleep (nanosleep)", us1(1500)),
		sw(us1(1000), 1, control, "S", idle),
		wakeBy(us1(2500), 1, other, control), // control runs here: its wakeup and switch were lost
		sleep(us1(3000), 1, control, "timer sleep (nanosleep)"),
		sw(us1(3000), 1, control, "S", idle),
	)
	r := explain(tr, subject(control, "cycle"), "none")
	checkSums(t, r)
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "not recorded") {
		t.Errorf("notes %v", r.Notes)
	}
	// Asleep until its timer's expiry (1500 us), then unknown until seen running.
	if it := item(r, PhaseBlocked, KindSleep, 0); it == nil || it.Ns != uint64(us1(500)) {
		t.Errorf("sleep until the expiry: %+v", it)
	}
	if it := item(r, PhaseBlocked, KindUnknown, 0); it == nil || it.Ns != uint64(us1(1000)) {
		t.Errorf("lost part: %+v", it)
	}
	wantCause(t, r, "inconclusive", "events of this task were lost")
}

// The task ran with another priority in the window (before chrt): the verdict uses it.
func TestEffectivePriority(t *testing.T) {
	early := th{control.tid, control.comm, "OTHER nice 0", 120}
	tr := window("latency", early, us1(100),
		sw(us1(-10), 1, idle, "R", other),
		wakeBy(0, 1, early, other),
		sw(us1(100), 1, other, "R+", early),
	)
	r := explain(tr, subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "blocking", "CPU contention")
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "OTHER nice 0") {
		t.Errorf("notes %v", r.Notes)
	}
}

// Issue 15, item 7: a task that set FIFO 70 on itself after it started,
// reported with the identity it had at discovery (OTHER nice 0), is judged
// as the FIFO 70 task its window's events show: interference by a FIFO 90
// task, not the starvation of a SCHED_OTHER one.
func TestPolicySetAfterStart(t *testing.T) {
	fifo70 := th{control.tid, control.comm, "FIFO 70", 29}
	stale := th{control.tid, control.comm, "OTHER nice 0", 120}
	tr := window("latency", fifo70, us1(1000),
		sw(us1(-10), 1, idle, "R", hog),
		wakeBy(0, 1, fifo70, hog),
		sw(us1(1000), 1, hog, "S", fifo70),
	)
	s := subject(stale, "latency")
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "interference", "hog/102 (FIFO 90)", "FIFO 70")
	if strings.Contains(r.Verdict, "OTHER") || strings.Contains(r.Verdict, "starvation") {
		t.Errorf("verdict uses the stale identity: %s", r.Verdict)
	}
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "ran as FIFO 70") {
		t.Errorf("notes %v", r.Notes)
	}
}

// Percentages add up to 100.0 whatever the split (largest remainder), and
// every nanosecond is in one item, on pseudo-random windows.
func TestSumsOnRandomWindows(t *testing.T) {
	threads := []th{idle, background, hog, inject, other, peer}
	seed := uint64(42)
	rnd := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	for round := 0; round < 200; round++ {
		var evs []trace.Event
		t0 := int64(-rnd(500) * 1000)
		cur := threads[rnd(len(threads))]
		evs = append(evs, sw(t0, 1, idle, "R", cur))
		tt := int64(0)
		evs = append(evs, wakeBy(0, 1, control, cur))
		for k := 0; k < 20; k++ {
			tt += int64(1 + rnd(333_333))
			switch rnd(4) {
			case 0:
				next := threads[rnd(len(threads))]
				evs = append(evs, sw(tt, 1, cur, "R+", next))
				cur = next
			case 1:
				evs = append(evs, irqIn(tt, 1, 36, "virtio"))
				tt += int64(1 + rnd(77_777))
				evs = append(evs, irqOut(tt, 1, 36, "virtio"))
			case 2:
				evs = append(evs, softIn(tt, 1, 9, "RCU"))
				tt += int64(1 + rnd(55_555))
				evs = append(evs, softOut(tt, 1, 9, "RCU"))
			case 3:
				evs = append(evs, timerIn(tt, 1, "tick_nohz_handler", tt-5))
				tt += int64(1 + rnd(11_111))
				evs = append(evs, timerOut(tt, 1, "tick_nohz_handler"))
			}
		}
		tt += 7
		evs = append(evs, sw(tt, 1, cur, "R+", control))
		tr := window("latency", control, tt, evs...)
		r := explain(tr, subject(control, "latency"), "none")
		checkSums(t, r)
		if r.Verdict == "" || r.Cause == "" {
			t.Fatalf("no verdict:\n%s", dump(r))
		}
	}
}

func TestRender(t *testing.T) {
	r := explain(preemptOffTrace("bpf_test_run", "__sys_bpf"), subject(control, "latency"), "none")
	var b bytes.Buffer
	r.WriteText(&b, "  ")
	out := b.String()
	for _, want := range []string{"breakdown of the 3000.0 us window", "runnable", "preempt-inject/103 (OTHER nice 0) ran: lower priority",
		"2988.0", "99.6%", "total", "100.0%", "blocking thread: preempt-inject/103", "-> bpf_test_run",
		"timer release (start)", "IRQ handler delay", "ruled out:"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// A late timer interrupt while tasks switch (interrupts on) is not "interrupts
// off"; for a SCHED_OTHER task a short one is its timer slack.
func TestLateInterruptWithSwitches(t *testing.T) {
	mk := func(subj th, d float64) *trace.Trace {
		return window("timer-irq", subj, us1(d),
			sw(us1(-100), 1, subj, "S", other),
			sw(us1(d/2), 1, other, "S", peer),
			timerIn(us1(d), 1, "hrtimer_wakeup", 0),
		)
	}
	r := explain(mk(control, 400), subject(control, "timer-irq"), "none")
	checkSums(t, r)
	wantCause(t, r, "release", "late timer interrupt", "interrupts were on")
	normal := th{control.tid, control.comm, "OTHER nice 0", 120}
	r = explain(mk(normal, 58), subject(normal, "timer-irq"), "none")
	checkSums(t, r)
	wantCause(t, r, "release", "timer slack", "OTHER nice 0")
}

// A SCHED_OTHER task's release delay within the timer slack read from the
// task, or mostly the slack's (at most twice it), is named with the slack's
// value, whether the CPU switched tasks or idled meanwhile; beyond twice the
// slack, or for an RT task, the slack does not explain it.
func TestTimerSlackRead(t *testing.T) {
	normal := th{control.tid, control.comm, "OTHER nice 0", 120}
	switches := func(subj th, d float64) *trace.Trace {
		return window("timer-irq", subj, us1(d),
			sw(us1(-100), 1, subj, "S", other),
			sw(us1(d/2), 1, other, "S", peer),
			timerIn(us1(d), 1, "hrtimer_wakeup", 0),
		)
	}
	idles := func(subj th, d float64) *trace.Trace {
		return window("timer-irq", subj, us1(d),
			sw(us1(-800), 1, subj, "S", idle),
			timerIn(us1(d), 1, "hrtimer_wakeup", 0),
		)
	}
	withSlack := func(subj th, ns uint64) Subject {
		s := subject(subj, "timer-irq")
		s.TimerSlackNs = ns
		return s
	}
	for _, tc := range []struct {
		name  string
		tr    *trace.Trace
		s     Subject
		slack bool
		words string
	}{
		{"within, switches", switches(normal, 150), withSlack(normal, 200_000), true, "within this OTHER nice 0 task's timer slack of 200.0 us"},
		{"within, idle", idles(normal, 150), withSlack(normal, 200_000), true, "within this OTHER nice 0 task's timer slack of 200.0 us"},
		{"mostly the slack, idle", idles(normal, 350), withSlack(normal, 200_000), true, "timer slack of 200.0 us (read from the task) accounts for most, the remaining 150.0 us"},
		{"beyond, switches", switches(normal, 450), withSlack(normal, 200_000), false, ""},
		{"beyond, idle", idles(normal, 450), withSlack(normal, 200_000), false, ""},
		{"beyond twice the default slack", switches(normal, 120), withSlack(normal, 50_000), false, ""},
		{"RT", switches(control, 150), withSlack(control, 200_000), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := explain(tc.tr, tc.s, "none")
			checkSums(t, r)
			if !tc.slack {
				if r.Culprit == "timer slack" || strings.HasPrefix(r.Verdict, "timer slack") {
					t.Errorf("blamed on the timer slack: %s", r.Verdict)
				}
				return
			}
			wantCause(t, r, "release", "timer slack", tc.words, "PR_SET_TIMERSLACK")
			if r.Culprit != "timer slack" {
				t.Errorf("culprit %q, want timer slack", r.Culprit)
			}
		})
	}
}

func stealEv(t int64, cpu int, ns uint64, since int64) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "steal", StealNs: ns, SinceT: i64(since)}
}

// The stalls this project's VM showed, each misjudged before the steal
// clock was read: the hypervisor took the vCPU, and the verdict says so
// instead of blaming whatever was current.
func TestHypervisorSteal(t *testing.T) {
	spinner := th{150, "spinner", "FIFO 40", 59}
	cases := []struct {
		name   string
		metric string
		subj   th
		tr     *trace.Trace
		words  []string
	}{{
		// "a user-space spinner (FIFO 40) is blamed for interrupts were
		// disabled during a 9407 us timer-interrupt delay"
		name: "late timer interrupt", metric: "timer-thread", subj: control,
		tr: window("timer-thread", control, us1(9420),
			sw(us1(-800), 1, control, "S", spinner),
			timerIn(us1(9407), 1, "hrtimer_wakeup", 0),
			wakeTimer(us1(9410), 1, control, 0),
			stack(us1(9410), 1, spinner, control),
			timerOut(us1(9412), 1, "hrtimer_wakeup"),
			stealEv(us1(9420), 1, uint64(us1(9300)), us1(-800)),
			sw(us1(9420), 1, spinner, "R+", control),
		),
		words: []string{"hypervisor", "CPU 1's vCPU was not running", "9300.0 us", "dedicated or pinned vCPUs"},
	}, {
		// "its own timer callback hrtimer_wakeup took 7165.2 us (99%)"
		name: "own timer callback", metric: "timer-thread", subj: control,
		tr: window("timer-thread", control, us1(7240),
			sw(us1(-500), 1, control, "S", idle),
			timerIn(us1(20), 1, "hrtimer_wakeup", 0),
			wakeTimer(us1(7185), 1, control, 0),
			timerOut(us1(7190), 1, "hrtimer_wakeup"),
			stealEv(us1(7240), 1, uint64(us1(7150)), us1(-500)),
			sw(us1(7240), 1, idle, "R", control),
		),
		words: []string{"hypervisor", "7150.0 us"},
	}, {
		// "CPU 1 kept running task-M (FIFO 50) in the kernel for 3496.3 us
		// ... with preemption disabled"
		name: "non-preemptible section", metric: "latency", subj: taskH,
		tr: window("latency", taskH, us1(3500),
			sw(us1(-60), 1, idle, "R", taskM),
			wakeBy(0, 1, taskH, taskL),
			stealEv(us1(3500), 1, uint64(us1(3450)), us1(-60)),
			sw(us1(3500), 1, taskM, "R+", taskH),
		),
		words: []string{"hypervisor", "3450.0 us"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.tr.StealClock = true
			r := explain(c.tr, subject(c.subj, c.metric), "none")
			checkSums(t, r)
			wantCause(t, r, "hypervisor", c.words...)
			if r.StealNs == nil || *r.StealNs == 0 || r.Culprit != "hypervisor" {
				t.Errorf("steal %v culprit %q, want the window's steal and culprit hypervisor", r.StealNs, r.Culprit)
			}
		})
	}
}

// Steal that is only part of the window is placed in its longest eventless
// stretch (where the stall left its gap) and named beside the real cause.
func TestStealBesideAnotherCause(t *testing.T) {
	tr := window("latency", control, us1(4000),
		sw(us1(-100), 1, idle, "R", background),
		wakeBy(0, 1, control, peer),
		timerIn(us1(1000), 1, "tick_nohz_handler", us1(1000)),
		timerOut(us1(1002), 1, "tick_nohz_handler"),
		stealEv(us1(4000), 1, uint64(us1(1500)), us1(-100)),
		sw(us1(4000), 1, background, "R+", control),
	)
	tr.StealClock = true
	r := explain(tr, subject(control, "latency"), "none")
	checkSums(t, r)
	wantCause(t, r, "interference", "background/101", "the hypervisor took 1500.0 us (38%) of it")
	h := item(r, PhaseRunnable, KindHypervisor, 0)
	if h == nil || h.Ns != uint64(us1(1500)) || h.FirstT != us1(2500) {
		t.Errorf("hypervisor item %+v, want 1500 us at the end of the longest gap (from 2500 us)", h)
	}
}

// Steal on a CPU outside the window's items is a note: a stall of one CPU
// can hold kernel code on another.
func TestStealOnAnotherCPU(t *testing.T) {
	tr := preemptOffTrace("hrtimer_try_to_cancel", "hrtimer_cancel", "do_epoll_wait")
	tr.Events = append(tr.Events, stealEv(us1(2900), 0, uint64(us1(2800)), us1(-10)))
	tr.StealClock = true
	r := explain(tr, subject(control, "latency"), "full")
	checkSums(t, r)
	found := false
	for _, n := range r.Notes {
		found = found || strings.Contains(n, "CPU 0 lost up to 2800.0 us to the hypervisor")
	}
	if !found || r.StealNs == nil || *r.StealNs != 0 {
		t.Errorf("notes %q, steal %v; want a note on CPU 0's steal and none on the window's CPU", r.Notes, r.StealNs)
	}
}

func arm(t int64, cpu int, who th, expiry int64) trace.Event {
	return trace.Event{T: t, CPU: cpu, Type: "timer_arm", TID: who.tid, Comm: who.comm, ExpiryT: i64(expiry), Missed: expiry <= t}
}

// neverSleepingIteration is a 1500 us iteration of a loop that never
// sleeps: it opens and closes with the arming of a deadline already past,
// the past deadline's timer waking it while it runs.
func neverSleepingIteration() *trace.Trace {
	return window("iteration", control, us1(1500),
		arm(us1(-1500), 1, control, us1(-2500)),
		timerIn(us1(-1480), 1, "hrtimer_wakeup", us1(-2500)),
		wakeTimer(us1(-1479), 1, control, us1(-2500)),
		timerOut(us1(-1478), 1, "hrtimer_wakeup"),
		arm(0, 1, control, us1(-1500)),
		timerIn(us1(20), 1, "hrtimer_wakeup", us1(-1500)),
		wakeTimer(us1(21), 1, control, us1(-1500)),
		timerOut(us1(22), 1, "hrtimer_wakeup"),
		arm(us1(1500), 1, control, us1(-500)),
	)
}

// The same iteration of a loop that sleeps relative to its wakeup has no
// deadline to miss: its period stretches, never "overrun" (task-M of
// priority-inversion was called one with no overrun counted).
func TestIterationStretchedRelativeSleep(t *testing.T) {
	tr := neverSleepingIteration()
	s := subject(control, "iteration")
	s.NominalPeriod = uint64(us1(1000))
	s.SleepsRelative = true
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "execution", "a stretched iteration: the loop's work took 1500.0 us of its 1000.0 us period", "no deadline to miss")
	if strings.Contains(r.Verdict, "overrun") {
		t.Errorf("a relative sleeper's verdict names an overrun: %s", r.Verdict)
	}
}

// A loop that arms absolute deadlines from its wakeup (now + sleep: no
// overrun ever counted) stretches its period too: its long iteration and
// its long period are never "overrun" (task-M of priority-inversion, which
// the consistency checker caught against its zero overrun count).
func TestStretchedArmsFromWakeup(t *testing.T) {
	s := subject(control, "iteration")
	s.NominalPeriod = uint64(us1(1000))
	s.ArmsFromWakeup = true
	r := explain(neverSleepingIteration(), s, "none")
	checkSums(t, r)
	wantCause(t, r, "execution", "a stretched iteration", "arms each deadline from its wakeup")
	if strings.Contains(r.Verdict, "overrun:") {
		t.Errorf("an iteration verdict names an overrun: %s", r.Verdict)
	}
	tr := window("period", control, us1(2500),
		wakeTimer(0, 1, control, 0),
		sw(us1(5), 1, idle, "R", control),
		sleep(us1(2300), 1, control, "timer sleep (nanosleep)"),
		sw(us1(2300), 1, control, "S", idle),
		timerIn(us1(2495), 1, "hrtimer_wakeup", us1(2490)),
		wakeTimer(us1(2500), 1, control, us1(2490)),
	)
	s = subject(control, "period")
	s.NominalPeriod = uint64(us1(1000))
	s.ArmsFromWakeup = true
	r = explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "execution", "a stretched period", "arms each deadline from its wakeup")
	if strings.Contains(r.Verdict, "an overrun") {
		t.Errorf("a period verdict names an overrun: %s", r.Verdict)
	}
}

// A loop that never sleeps: its iteration opens and closes with the arming
// of a deadline already past, the past deadline's timer wakes it while it
// runs (no state change), and no switch happens on its CPU. Its work took
// 1500 us of its 1000 us period: an overrun of its own.
func TestIterationOverrunOwnWork(t *testing.T) {
	tr := neverSleepingIteration()
	s := subject(control, "iteration")
	s.NominalPeriod = uint64(us1(1000))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "overrun", "overrun: the loop's own work took 1500.0 us of its 1000.0 us period (running 100%)", "missed its deadline by itself")
	if r.Culprit != "own work" {
		t.Errorf("culprit %q, want own work", r.Culprit)
	}
	// Without its armings, the running task's wakeups read as sleeps and
	// the window as unknown: what the timer_arm events fix.
	var bare []trace.Event
	for _, e := range tr.Events {
		if e.Type != "timer_arm" {
			bare = append(bare, e)
		}
	}
	tr.Events = bare
	if r0 := explain(tr, s, "none"); r0.Cause == "overrun" {
		t.Errorf("without timer_arm events the window still gets %q (%s): the test no longer shows what they fix", r0.Cause, r0.Verdict)
	}
}

// An overrun caused by a higher priority: the verdict says the deadline was
// missed, and why.
func TestIterationOverrunPreempted(t *testing.T) {
	tr := window("iteration", control, us1(2600),
		sw(us1(-100), 1, idle, "R", control),
		arm(0, 1, control, us1(800)),
		sw(us1(10), 1, control, "S", idle),
		timerIn(us1(800), 1, "hrtimer_wakeup", us1(800)),
		wakeTimer(us1(801), 1, control, us1(800)),
		timerOut(us1(802), 1, "hrtimer_wakeup"),
		sw(us1(805), 1, idle, "R", control),
		sw(us1(900), 1, control, "R+", hog),
		sw(us1(2400), 1, hog, "S", control),
		arm(us1(2600), 1, control, us1(1800)),
	)
	s := subject(control, "iteration")
	s.NominalPeriod = uint64(us1(1000))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "interference", "overrun: the loop's work took 1809.0 us of its 1000.0 us period (running 17%)", "hog")
}

// A healthy iteration: it slept until its next period, its work fit.
// An iteration of 1.5 periods or more is never "no overrun", though its
// work fit the period: a start-up iteration that slept until a deadline
// 44 ms ahead (a 5 ms loop's first one was 45.5 ms, "no overrun").
func TestIterationLongerThanPeriods(t *testing.T) {
	tr := window("iteration", control, us1(45500),
		sw(us1(-100), 1, idle, "R", control),
		arm(0, 1, control, us1(44500)),
		sleepUntil(us1(5), 1, control, "timer sleep", us1(44500)),
		sw(us1(5), 1, control, "S", idle),
		timerIn(us1(44500), 1, "hrtimer_wakeup", us1(44500)),
		wakeTimer(us1(44501), 1, control, us1(44500)),
		timerOut(us1(44502), 1, "hrtimer_wakeup"),
		sw(us1(44505), 1, idle, "R", control),
		arm(us1(45500), 1, control, us1(49500)),
	)
	s := subject(control, "iteration")
	s.NominalPeriod = uint64(us1(5000))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "long-sleep", "a long iteration: 45500.0 us, 9.1 times its 5000.0 us period", "slept 44495.0 us")
	if strings.Contains(r.Verdict, "no overrun") {
		t.Errorf("a 9-period iteration called no overrun: %s", r.Verdict)
	}
}

func TestIterationWithinPeriod(t *testing.T) {
	tr := window("iteration", control, us1(1000),
		sw(us1(-100), 1, idle, "R", control),
		arm(0, 1, control, us1(700)),
		sleepUntil(us1(5), 1, control, "timer sleep", us1(700)),
		sw(us1(5), 1, control, "S", idle),
		timerIn(us1(700), 1, "hrtimer_wakeup", us1(700)),
		wakeTimer(us1(701), 1, control, us1(700)),
		timerOut(us1(702), 1, "hrtimer_wakeup"),
		sw(us1(705), 1, idle, "R", control),
		arm(us1(1000), 1, control, us1(1700)),
	)
	s := subject(control, "iteration")
	s.NominalPeriod = uint64(us1(1000))
	r := explain(tr, s, "none")
	checkSums(t, r)
	wantCause(t, r, "execution", "no overrun", "slept 695.0 us until its next period")
}
