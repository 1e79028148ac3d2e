package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// accountant sums the window into items.
type accountant struct {
	tl    *timelines
	s     Subject
	w     int64
	items map[string]*Item
	last  map[string]int64 // end of the last span of each item
	// lockOwners: the tasks that released the subject's PI futex locks in
	// the window (woke it from a "PI futex lock" sleep).
	lockOwners map[uint32]bool
	// boosters: the waiter each boosted lock owner of the window ran for.
	boosters map[uint32]*Thread
	// whole: the rings reached the window's start (not truncated), so a
	// CPU without events ran on undisturbed.
	whole bool
	// throttles: the task's throttled intervals (throttle.go).
	throttles []Throttle
}

func (a *accountant) add(it Item, from, to int64) *Item {
	if to <= from {
		return nil
	}
	key := it.Phase.String() + "|" + it.key
	x := a.items[key]
	if x == nil {
		it.FirstT = from
		it.key = key
		x = &it
		a.items[key] = x
	}
	if x != &it && it.Thread != nil && x.Thread != nil && it.Thread.Comm != x.Thread.Comm {
		// The thread exec'd inside the window (timeout -> chrt -> taskset ->
		// sh): named as it is last, as ps names it, not as it first ran
		// ("taskset/20970 (FIFO 2) ran 1677190.4 us" of a shell loop).
		x.Thread, x.Label = it.Thread, it.Label
	}
	if a.last[key] != from || x.Spans == 0 {
		x.Spans++
	}
	x.Ns += uint64(to - from)
	a.last[key] = to
	return x
}

func (a *accountant) thread(t *Thread) *Thread {
	if t == nil {
		return nil
	}
	c := *t
	if c.KPrio == kprioUnknown {
		if k, ok := a.tl.threads[c.TID]; ok {
			c = *k
		}
	}
	c.Monitor = a.tl.monitor[c.TID]
	// The owner of the task's PI lock above its own priority seen in the
	// window: priority inheritance, on the task's behalf.
	if l := a.tl.lowest[c.TID]; a.lockOwners[c.TID] && l != nil && higher(c.KPrio, l.KPrio) && c.KPrio >= -1 {
		c.BoostedFrom, c.BoostedBy = l.Sched, a.s.Comm
	}
	// Another waiter's lock: boosted at most to the waiter's priority.
	if b, l := a.boosters[c.TID], a.tl.lowest[c.TID]; c.BoostedFrom == "" && b != nil && l != nil &&
		higher(c.KPrio, l.KPrio) && !higher(c.KPrio, b.KPrio) && c.KPrio >= -1 {
		c.BoostedFrom, c.BoostedBy = l.Sched, b.Comm
	}
	return &c
}

// higher tells whether kernel prio a is strictly above b (deadline, -1, is above all).
func higher(a, b int) bool { return a < b }

func who(t *Thread) string {
	if t == nil {
		return "?"
	}
	if t.TID == 0 {
		return "idle"
	}
	if t.Monitor {
		return MonitorName
	}
	if t.BoostedFrom != "" {
		return whoBoosted(t)
	}
	if t.Sched == "" {
		return fmt.Sprintf("%s/%d", t.Comm, t.TID)
	}
	return fmt.Sprintf("%s/%d (%s)", t.Comm, t.TID, t.Sched)
}

func irqLabel(c *cpuCtx) string {
	if c.irq == nil {
		return "hard IRQ"
	}
	if c.irqName == "" {
		return fmt.Sprintf("hard IRQ %d", *c.irq)
	}
	return fmt.Sprintf("hard IRQ %d %s", *c.irq, c.irqName)
}

func (a *accountant) wokeNames(c *cpuCtx) []string {
	var out []string
	for _, t := range c.woke {
		out = append(out, fmt.Sprintf("%s/%d", c.wokeBy[t], t))
	}
	return out
}

func mergeNames(a, b []string) []string {
	for _, n := range b {
		dup := false
		for _, m := range a {
			dup = dup || m == n
		}
		if !dup && len(a) < 8 {
			a = append(a, n)
		}
	}
	return a
}

// ctxItem accounts [from, to) of a CPU context to the phase.
func (a *accountant) ctxItem(phase Phase, cpu int, from, to int64, c *cpuCtx) {
	switch c.kind {
	case ctxSteal:
		// Whatever phase: the vCPU did not run, so nothing on it ran.
		if it := a.add(Item{Phase: phase, Kind: KindHypervisor, CPU: cpu, key: fmt.Sprint("steal", cpu),
			Label: fmt.Sprintf("hypervisor: CPU %d's vCPU was not running (steal)", cpu)}, from, to); it != nil {
			a.tl.steal[cpu] += uint64(to - from)
		}
	case ctxTask, ctxIdle:
		a.taskCtx(phase, cpu, from, to, c)
	case ctxHardIRQ:
		it := a.add(Item{Phase: phase, Kind: KindHardIRQ, CPU: cpu, IRQ: c.irq, IRQName: c.irqName, HardIRQ: true,
			key: fmt.Sprint("irq", deref(c.irq)), Label: irqLabel(c)}, from, to)
		if it != nil {
			it.Woke = mergeNames(it.Woke, a.wokeNames(c))
		}
	case ctxIPI:
		a.ipiCtx(phase, cpu, from, to, c)
	case ctxTickGap:
		a.add(Item{Phase: phase, Kind: KindHardIRQ, CPU: cpu, HardIRQ: true, key: "tick",
			Label: "timer interrupt (between callbacks)"}, from, to)
	case ctxTimer:
		a.timerCtx(phase, cpu, from, to, c)
	case ctxNotKept:
		a.add(Item{Phase: phase, Kind: KindUnknown, CPU: cpu, key: fmt.Sprint("notkept", cpu),
			Label: fmt.Sprintf("CPU %d: not kept", cpu)}, from, to)
	case ctxOverwritten:
		a.add(Item{Phase: phase, Kind: KindUnknown, CPU: cpu, key: fmt.Sprint("overwritten", cpu),
			Label: fmt.Sprintf("CPU %d: overwritten", cpu)}, from, to)
	case ctxSoftIRQ:
		it := a.add(Item{Phase: phase, Kind: KindSoftIRQ, CPU: cpu, Vec: c.vec, VecName: c.vecName,
			key: fmt.Sprint("softirq", deref(c.vec)), Label: "softirq " + c.vecName}, from, to)
		if it != nil {
			it.Woke = mergeNames(it.Woke, a.wokeNames(c))
		}
	default:
		if phase == PhaseRunning && a.whole {
			// The task runs there and no event says otherwise: a loop that
			// never sleeps switches nothing, and its CPU records only its
			// interrupts (an overrunning iteration was 36% "no events"
			// before this).
			a.add(Item{Phase: PhaseRunning, Kind: KindExecution, Label: "own execution", CPU: cpu, key: "exec"}, from, to)
			return
		}
		a.add(Item{Phase: phase, Kind: KindUnknown, CPU: cpu, key: fmt.Sprint("unknown", cpu),
			Label: fmt.Sprintf("CPU %d: no events recorded", cpu)}, from, to)
	}
}

// taskCtx accounts a CPU in task context: the task itself, the idle task
// (leaving idle), or another thread (otherThread).
func (a *accountant) taskCtx(phase Phase, cpu int, from, to int64, c *cpuCtx) {
	if phase == PhaseRunning || (c.thr != nil && c.thr.TID == a.s.TID) {
		a.add(Item{Phase: PhaseRunning, Kind: KindExecution, Label: "own execution", CPU: cpu, key: "exec"}, from, to)
		return
	}
	if c.kind == ctxIdle {
		if phase == PhaseRelease {
			a.add(Item{Phase: phase, Kind: KindIdle, CPU: cpu, key: fmt.Sprint("idle", cpu),
				Label: fmt.Sprintf("CPU %d idle when the timer expired (exit from idle)", cpu)}, from, to)
		} else {
			a.add(Item{Phase: phase, Kind: KindIdle, CPU: cpu, key: fmt.Sprint("idle", cpu),
				Label: fmt.Sprintf("CPU %d idle (leaving the idle state, scheduling)", cpu)}, from, to)
		}
		return
	}
	a.otherThread(phase, cpu, from, to, a.thread(c.thr))
}

// otherThread accounts another thread that ran while the task waited: up
// to the timer interrupt (release), as the owner of its lock, boosted for
// another waiter's lock, or by its priority against the task's.
func (a *accountant) otherThread(phase Phase, cpu int, from, to int64, t *Thread) {
	if phase == PhaseRelease {
		a.add(Item{Phase: phase, Kind: KindIRQOff, CPU: cpu, Thread: t, key: fmt.Sprint("irqoff", t.TID),
			Label: fmt.Sprintf("%s ran until the timer interrupt (entry latency, or interrupts off)", who(t))}, from, to)
		return
	}
	kind, rel := KindBlocking, ""
	switch {
	case t.BoostedFrom != "" && a.lockOwners[t.TID]:
		// Not a priority misconfiguration nor equal-priority FIFO: the
		// owner finishing its critical section at the waiter's priority.
		a.add(Item{Phase: phase, Kind: KindBlocking, CPU: cpu, Thread: t, key: fmt.Sprint("pi-owner", t.TID),
			Label: fmt.Sprintf("%s ran by priority inheritance while holding this task's lock", who(t))}, from, to)
		return
	case t.BoostedFrom != "":
		// Above this task for another waiter's lock: inheritance at
		// work, not the owner's own priority.
		kind = KindInterference
		if !higher(t.KPrio, a.s.KPrio) {
			kind = KindBlocking
		}
		a.add(Item{Phase: phase, Kind: kind, CPU: cpu, Thread: t, key: fmt.Sprint("pi-boost", t.TID),
			Label: fmt.Sprintf("%s ran boosted by priority inheritance, holding a lock %s waits for", who(t), t.BoostedBy)}, from, to)
		return
	case t.KPrio == kprioUnknown:
		rel = "priority unknown"
	case higher(t.KPrio, a.s.KPrio):
		kind, rel = KindInterference, "higher priority"
	case t.KPrio == a.s.KPrio:
		rel = "equal priority"
	default:
		rel = "lower priority"
	}
	key := fmt.Sprint(kind, t.TID)
	if t.Monitor {
		// rtscope's threads are one cause, however many ran.
		key = kind.String() + "monitor"
	}
	a.add(Item{Phase: phase, Kind: kind, CPU: cpu, Thread: t, key: key,
		Label: fmt.Sprintf("%s ran: %s", who(t), rel)}, from, to)
}

// timerCtx accounts an hrtimer callback: the task's own timer, or one item
// per callback and what it woke, so the one that spun is told apart.
func (a *accountant) timerCtx(phase Phase, cpu int, from, to int64, c *cpuCtx) {
	ctx := "softirq"
	if c.hard {
		ctx = "hard IRQ"
	}
	if c.wokeTID(a.s.TID) {
		a.add(Item{Phase: phase, Kind: KindOwnTimer, CPU: cpu, Function: c.fn, HardIRQ: c.hard, key: "owntimer",
			Label: fmt.Sprintf("its own timer callback %s (%s)", c.fn, ctx)}, from, to)
		return
	}
	woke := a.wokeNames(c)
	it := a.add(Item{Phase: phase, Kind: KindTimer, CPU: cpu, Function: c.fn, HardIRQ: c.hard,
		key: fmt.Sprint("timer", c.fn, c.hard, woke), Label: fmt.Sprintf("timer callback %s (%s)", c.fn, ctx)}, from, to)
	if it != nil {
		it.Woke = mergeNames(it.Woke, a.wokeNames(c))
	}
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func (a *accountant) onCPU(phase Phase, cpu int, from, to int64) {
	if cpu < 0 {
		a.add(Item{Phase: phase, Kind: KindUnknown, CPU: -1, key: "unknown-cpu",
			Label: "CPU unknown"}, from, to)
		return
	}
	a.tl.pieces(cpu, from, to, func(f, t int64, c *cpuCtx) { a.ctxItem(phase, cpu, f, t, c) })
}

func sleepReason(sg *taskSeg) trace.Reason {
	switch {
	case sg.sleep != nil && sg.sleep.Reason != "":
		return sg.sleep.Reason
	case sg.state != "":
		return trace.ReasonInState(sg.state)
	}
	return trace.ReasonSleep
}

func wakerLabel(w *trace.Waker) string {
	if w == nil {
		return "not woken in the window"
	}
	switch w.Kind {
	case trace.WakerTask:
		return "woken by " + who(&Thread{TID: w.TID, Comm: w.Comm, Sched: w.Sched})
	case trace.WakerHardIRQ:
		s := fmt.Sprintf("woken by hard IRQ %d", deref(w.IRQ))
		if w.IRQName != "" {
			s += " " + w.IRQName
		}
		return s
	case trace.WakerSoftIRQ:
		return "woken by softirq " + w.VecName
	case trace.WakerTimer:
		return "woken by its timer (" + w.Function + ")"
	}
	return "woken by " + w.Kind.String()
}

func wakerKey(w *trace.Waker) string {
	if w == nil {
		return "none"
	}
	return fmt.Sprint(w.Kind, w.TID, deref(w.IRQ), deref(w.Vec), w.Function)
}

// blocked accounts a sleep: until its timer's expiry it is a sleep; from the
// expiry to the wakeup it is the timer's release, on the timer's CPU.
func (a *accountant) blocked(sg *taskSeg, from, to int64) {
	r := sleepReason(sg)
	reason := r.String()
	var w *trace.Waker
	if sg.wake != nil {
		w = sg.wake.Waker
	}
	if w != nil && w.Kind == trace.WakerTimer && sg.wake.ExpiryT != nil {
		exp := *sg.wake.ExpiryT
		if e := min(to, exp); e > from {
			kind, label := KindSleep, reason+", until its timer expired"
			if a.s.Metric == "period" || a.s.Metric == "jitter" || a.s.Metric == "iteration" {
				kind, label = KindPeriodSleep, reason+", until the next period's timer expired"
			}
			a.add(Item{Phase: PhaseBlocked, Kind: kind, CPU: -1, Reason: r, Waker: w,
				key: "sleep|" + kind.String() + "|" + reason, Label: label}, from, e)
		}
		if s := max(from, exp); s < to {
			cpu := sg.wake.CPU
			a.tl.pieces(cpu, s, to, func(f, t int64, c *cpuCtx) { a.ctxItem(PhaseRelease, cpu, f, t, c) })
		}
		return
	}
	if w == nil && sg.missed {
		// Lost events: it slept, and was next seen running. Until its armed
		// timer's expiry it surely slept; after that nothing tells.
		e := from
		if sg.sleep != nil && sg.sleep.ExpiryT != nil {
			e = max(from, min(to, *sg.sleep.ExpiryT))
			a.add(Item{Phase: PhaseBlocked, Kind: KindSleep, CPU: -1, Reason: r, key: "sleep|lost|" + reason,
				Label: reason + ", until its timer expired"}, from, e)
		}
		a.add(Item{Phase: PhaseBlocked, Kind: KindUnknown, CPU: -1, Reason: r, key: "lost",
			Label: "events lost: asleep, then running, with no recorded wakeup or switch-in"}, e, to)
		return
	}
	a.add(Item{Phase: PhaseBlocked, Kind: KindSleep, CPU: -1, Reason: r, Waker: w,
		key: "sleep|" + reason + "|" + wakerKey(w), Label: reason + ", " + wakerLabel(w)}, from, to)
}

// effective returns the subject as it was in the window: its priority from
// its own events (it may have changed since, or been boosted).
func effective(tr *trace.Trace, s Subject) (Subject, string) {
	kprio, sched, found := 0, "", false
	for i := range tr.Events {
		e := &tr.Events[i]
		var k int
		var sc string
		switch {
		case e.Type == trace.EventWakeup && e.TID == s.TID && e.Sched != "":
			k, sc = e.KPrio, e.Sched
		case e.Type == trace.EventSwitch && e.NextTID == s.TID && e.NextSched != "":
			k, sc = e.NextKPrio, e.NextSched
		case e.Type == trace.EventSwitch && e.PrevTID == s.TID && e.PrevSched != "":
			k, sc = e.PrevKPrio, e.PrevSched
		default:
			continue
		}
		kprio, sched, found = k, sc, true
		if e.T >= 0 {
			break
		}
	}
	if !found || (kprio == s.KPrio && sched == s.Sched) {
		return s, ""
	}
	note := fmt.Sprintf("in this window the task ran as %s (it is %s now)", sched, s.Sched)
	s.laterAs = ""
	if s.RT() {
		s.laterAs = s.Sched
	}
	s.KPrio, s.Sched = kprio, sched
	if f := strings.Fields(sched); len(f) > 0 {
		s.Policy = f[0]
	}
	return s, note
}

// timerIRQRelease describes the release of a timer-irq window, which ends at
// the callback's entry, before the wakeup.
func timerIRQRelease(tl *timelines, s Subject, tr *trace.Trace, w int64) []Release {
	var entry *trace.Event
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Type == trace.EventTimerEntry && e.T <= w && e.ExpiryT != nil && *e.ExpiryT == 0 {
			entry = e
		}
	}
	if entry == nil {
		return nil
	}
	d := entry.T
	r := Release{Where: AtStart, ExpiryT: 0, CPU: entry.CPU, IRQDelayNs: &d, SlackNs: entry.SlackNs}
	r.CPUState, r.Task = cpuState(tl, s, entry.CPU, 0, entry.T)
	return []Release{r}
}

// Explain analyses the window tr of the task s. It never fails: what the
// events cannot tell is accounted as unknown and said in the verdict. It
// reads nothing but its arguments: safe for concurrent use.
func Explain(tr *trace.Trace, s Subject) *Result {
	if s.Metric == "" {
		s.Metric = tr.Metric
	}
	w := int64(0)
	if tr.End > tr.Start {
		w = int64(tr.End - tr.Start)
	}
	res := &Result{Metric: s.Metric, WindowNs: uint64(w), ValueNs: tr.Value, Preemption: s.Preemption}
	res.idleExitNs, _ = idleBound(s)
	if tr.Truncated {
		res.Notes = append(res.Notes, "the trace is truncated: "+tr.Note)
	}
	if tr.SparseUntil != nil {
		res.Notes = append(res.Notes, "sparse trace: "+tr.Note+"; the task's running time until then may include interrupts, which were not kept")
	}
	s, note := effective(tr, s)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	tl := build(tr.Events)
	tl.stealClock = tr.StealClock
	tl.ipiSendersUnseen = tr.IPISendersUnseen
	if tr.SparseUntil != nil {
		tl.notKept(*tr.SparseUntil, s.TID)
	}
	for _, cpu := range tr.Overwritten {
		tl.overwritten(cpu)
	}
	for _, tid := range tr.Monitor {
		tl.monitor[tid] = true
	}
	a := &accountant{tl: tl, s: s, w: w, items: map[string]*Item{}, last: map[string]int64{}, whole: !tr.Truncated}
	segs, migs := tl.taskTimeline(s.TID)
	a.lockOwners = lockOwners(segs)
	a.boosters = boosters(tr.Events, tl)
	res.boosts = a.boosts()
	res.Notes = append(res.Notes, lostNotes(segs, w)...)
	startState(segs, s.Metric, tr.CPUStart)
	deadlineStates(segs, s)
	if strings.HasPrefix(s.Metric, "timer-") {
		timerWindowRelease(segs, s.TID, tr.CPUEnd, w)
	}
	a.throttles = throttles(tl, s, segs, w)
	res.Throttling = a.throttles
	a.account(segs)
	for _, m := range migs {
		if m.T >= 0 && m.T <= w {
			res.Migrations = append(res.Migrations, m)
		}
	}
	res.Breakdown = a.finish()
	sumPhases(res)
	res.Releases = releases(tl, s, segs, w)
	if s.Metric == "timer-irq" {
		res.Releases = timerIRQRelease(tl, s, tr, w)
	}
	if s.RT() {
		res.FutexWaitsNoPI = futexWaitsNoPI(tr, s.TID, w)
	}
	stealSummary(res, tl, tr, w)
	for _, it := range res.Breakdown {
		if it.Thread != nil && it.Thread.Monitor {
			res.MonitorNs += it.Ns
		}
	}
	verdict(res, tl, s, segs)
	if s.Metric == "noise" {
		noiseVerdict(res, tr, s)
	}
	if res.PageFaults = pageFaults(tr, s.TID, w); res.PageFaults != nil {
		res.Verdict += "; " + res.PageFaults.say(s.MemNotLocked)
	}
	ipiNote(res, tl.ipiSendersUnseen)
	return res
}

// lockOwners are the tasks that woke the subject from a PI futex lock
// sleep: the owners of its locks.
func lockOwners(segs []taskSeg) map[uint32]bool {
	owners := map[uint32]bool{}
	for _, sg := range segs {
		if sg.st == stBlocked && sg.sleep != nil && sg.sleep.Reason == trace.ReasonPIFutex && sg.wake != nil &&
			sg.wake.Waker != nil && sg.wake.Waker.Kind == trace.WakerTask {
			owners[sg.wake.Waker.TID] = true
		}
	}
	return owners
}

// lostNotes says where the task's events were lost in the window: the
// first gap, and how many when more than one.
func lostNotes(segs []taskSeg, w int64) []string {
	var notes []string
	lost := 0
	for _, sg := range segs {
		if sg.missed && sg.to > 0 && sg.from < w {
			if lost == 0 {
				notes = append(notes, fmt.Sprintf("events of the task were not recorded: it ran at %s us with no wakeup or switch-in before",
					units.UsFine(sg.to)))
			}
			lost++
		}
	}
	if lost > 1 {
		notes = append(notes, fmt.Sprintf("%d gaps of the task's events in this window: it may span several activations the engine did not see", lost))
	}
	return notes
}

// startState sets the state the events cannot tell at the window's start
// from the metric: the windows open on a wakeup (runnable), a timer expiry
// (asleep) or a handler entry (running).
func startState(segs []taskSeg, metric string, cpuStart int) {
	if segs[0].st != stUnknown {
		return
	}
	switch metric {
	case "timer-irq", "timer-thread", "timer-user":
		segs[0].st = stBlocked
	case "handler", "iteration", "noise":
		// An iteration opens when the task arms its timer, a noise
		// interval when its running task is interrupted: it runs.
		segs[0].st = stRunning
	default:
		segs[0].st = stRunnable
	}
	if segs[0].cpu < 0 {
		segs[0].cpu = cpuStart
	}
}

// timerWindowRelease gives the sleeps of a timer window with no recorded
// wakeup one by its timer on cpu: the window opens at the expiry, so a
// sleep running into it is the release even when its wakeup is past the
// window's end (timer-irq).
func timerWindowRelease(segs []taskSeg, tid uint32, cpu int, w int64) {
	for i := range segs {
		sg := &segs[i]
		if sg.st == stBlocked && sg.to > 0 && sg.from < w && sg.wake == nil && !sg.missed {
			zero := int64(0)
			sg.wake = &trace.Event{Type: trace.EventWakeup, T: sg.to, CPU: cpu, TID: tid, ExpiryT: &zero,
				Waker: &trace.Waker{Kind: trace.WakerTimer}}
		}
	}
}

// account accounts the task's states inside the window: on its CPU while
// running or runnable, its sleeps, and what no event tells.
func (a *accountant) account(segs []taskSeg) {
	for i := range segs {
		sg := &segs[i]
		from, to := max(sg.from, 0), min(sg.to, a.w)
		if from >= to {
			continue
		}
		switch sg.st {
		case stRunning:
			a.onCPU(PhaseRunning, sg.cpu, from, to)
		case stRunnable:
			a.runnable(sg.cpu, from, to)
		case stBlocked:
			a.blocked(sg, from, to)
		case stExited:
			a.add(Item{Phase: PhaseBlocked, Kind: KindUnknown, CPU: -1, key: "exited", Label: "exited"}, from, to)
		default:
			a.add(Item{Phase: PhaseRunnable, Kind: KindUnknown, CPU: sg.cpu, key: "unknown-state",
				Label: "state unknown (no event of the task)"}, from, to)
		}
	}
}

func sumPhases(res *Result) {
	for _, it := range res.Breakdown {
		switch it.Phase {
		case PhaseRelease:
			res.PhaseNs.Release += it.Ns
		case PhaseRunnable:
			res.PhaseNs.Runnable += it.Ns
		case PhaseRunning:
			res.PhaseNs.Running += it.Ns
		case PhaseBlocked:
			res.PhaseNs.Blocked += it.Ns
		}
	}
}

// futexWaitsNoPI counts the task's futex waits without priority
// inheritance in the window.
func futexWaitsNoPI(tr *trace.Trace, tid uint32, w int64) int {
	n := 0
	for _, e := range tr.Events {
		if e.Type == trace.EventSleep && e.TID == tid && e.T >= 0 && e.T <= w && e.Reason.FutexWait() {
			n++
		}
	}
	return n
}

// stealSummary sets the window's steal and notes steal on CPUs that have
// none of the window's items: a stall of one CPU can hold kernel code on
// another (waiting for a callback or a lock there).
func stealSummary(res *Result, tl *timelines, tr *trace.Trace, w int64) {
	var total uint64
	for _, ns := range tl.steal {
		total += ns
	}
	if tr.StealClock || total > 0 {
		res.StealNs = &total
	}
	other := map[int]uint64{}
	for _, e := range tr.Events {
		if e.Type != trace.EventSteal || e.SinceT == nil || tl.steal[e.CPU] > 0 {
			continue
		}
		if a, b := max(*e.SinceT, 0), min(e.T, w); b > a {
			other[e.CPU] += min(e.StealNs, uint64(b-a))
		}
	}
	cpus := make([]int, 0, len(other))
	for cpu := range other {
		cpus = append(cpus, cpu)
	}
	sort.Ints(cpus)
	for _, cpu := range cpus {
		if ns := other[cpu]; ns*10 >= uint64(w) && w > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("CPU %d lost up to %s to the hypervisor (steal) during this window: "+
				"a stalled CPU can hold kernel code on another one (waiting for a callback or a lock there)", cpu, us(ns)))
		}
	}
}

var phaseOrder = map[Phase]int{PhaseRelease: 0, PhaseRunnable: 1, PhaseRunning: 2, PhaseBlocked: 3}

// finish orders the items (by phase, then time) and gives them percentages
// that add up to exactly 100.0 (largest remainder on tenths).
func (a *accountant) finish() []Item {
	var out []Item
	for _, it := range a.items {
		if it.Thread != nil {
			a.attachStack(it)
		}
		out = append(out, *it)
	}
	sort.Slice(out, func(i, j int) bool {
		if phaseOrder[out[i].Phase] != phaseOrder[out[j].Phase] {
			return phaseOrder[out[i].Phase] < phaseOrder[out[j].Phase]
		}
		if out[i].Ns != out[j].Ns {
			return out[i].Ns > out[j].Ns
		}
		return out[i].key < out[j].key
	})
	var total uint64
	for _, it := range out {
		total += it.Ns
	}
	if total == 0 {
		return out
	}
	tenths := make([]int64, len(out))
	rem := make([]float64, len(out))
	sum := int64(0)
	for i, it := range out {
		exact := float64(it.Ns) * 1000 / float64(total)
		tenths[i] = int64(math.Floor(exact))
		rem[i] = exact - float64(tenths[i])
		sum += tenths[i]
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool { return rem[idx[x]] > rem[idx[y]] })
	for k := 0; sum < 1000 && k < len(idx); k++ {
		tenths[idx[k]]++
		sum++
	}
	for i := range out {
		out[i].Percent = float64(tenths[i]) / 10
	}
	return out
}

// irqOffStackSlack: how long after a late timer interrupt's entry its
// callback may still sample the interrupted task (the callback runs in
// hard-IRQ context: nothing else runs on the CPU meanwhile). Tens of
// microseconds on a real machine; more under emulation.
const irqOffStackSlack = 500_000

// attachStack adds the thread's kernel stack sampled while it ran in the item's span.
func (a *accountant) attachStack(it *Item) {
	end := a.last[it.key]
	if it.Kind == KindIRQOff {
		// The late timer's own callback samples the task its interrupt
		// stopped (where interrupts came back on), just after the span.
		end += irqOffStackSlack
	}
	s, ok := a.tl.stackFor(it.Thread.TID, it.FirstT, end)
	if !ok {
		return
	}
	it.Thread.Sampled = true
	it.Thread.Stack = s.Stack
	it.Thread.UserSpace = len(s.Stack) == 0
}

// releases describes the task's timer wakeups that open or close the window.
func releases(tl *timelines, s Subject, segs []taskSeg, w int64) []Release {
	var out []Release
	for i := range segs {
		wk := segs[i].wake
		if wk == nil || wk.Waker == nil || wk.Waker.Kind != trace.WakerTimer || wk.ExpiryT == nil || wk.T < 0 || wk.T > w {
			continue
		}
		where := InWindow
		switch {
		case wk.T == 0 || *wk.ExpiryT == 0:
			where = AtStart
		case wk.T == w:
			where = AtEnd
		}
		wake := wk.T - *wk.ExpiryT
		r := Release{Where: where, ExpiryT: *wk.ExpiryT, CPU: wk.CPU, WakeupNs: &wake, CPUState: CPUUnknown}
		if entry := callbackEntry(tl.events, wk); entry != nil {
			d, c := entry.T-*wk.ExpiryT, wk.T-entry.T
			r.IRQDelayNs, r.CallbackNs, r.SlackNs = &d, &c, entry.SlackNs
			r.CPUState, r.Task = cpuState(tl, s, wk.CPU, *wk.ExpiryT, entry.T)
		}
		out = append(out, r)
	}
	return out
}

// callbackEntry finds the timer_entry of the callback in which wk happened.
func callbackEntry(events []trace.Event, wk *trace.Event) *trace.Event {
	at := -1
	for i := range events {
		if &events[i] == wk {
			at = i
			break
		}
	}
	depth := 0
	for i := at - 1; i >= 0; i-- {
		e := &events[i]
		if e.CPU != wk.CPU {
			continue
		}
		switch e.Type {
		case trace.EventTimerExit:
			depth++
		case trace.EventTimerEntry:
			if depth == 0 {
				return e
			}
			depth--
		case trace.EventSwitch:
			return nil
		}
	}
	return nil
}

// cpuState names what a CPU did over [from, to): the context that took most of it.
func cpuState(tl *timelines, s Subject, cpu int, from, to int64) (CPUState, *Thread) {
	if to <= from {
		return CPUNoDelay, nil
	}
	by := map[CPUState]int64{}
	var thr *Thread
	var thrNs int64
	tl.pieces(cpu, from, to, func(f, t int64, c *cpuCtx) {
		switch c.kind {
		case ctxIdle:
			by[CPUIdle] += t - f
		case ctxTask:
			by[CPUTask] += t - f
			if t-f > thrNs {
				thr, thrNs = c.thr, t-f
			}
		case ctxHardIRQ, ctxTickGap, ctxIPI:
			by[CPUHardIRQ] += t - f
		case ctxTimer:
			if c.hard {
				by[CPUHardIRQ] += t - f
			} else {
				by[CPUSoftIRQ] += t - f
			}
		case ctxSoftIRQ:
			by[CPUSoftIRQ] += t - f
		case ctxSteal:
			by[CPUSteal] += t - f
		default:
			by[CPUUnknown] += t - f
		}
	})
	best, bestNs := CPUUnknown, int64(-1)
	for _, k := range cpuStates {
		if by[k] > bestNs {
			best, bestNs = k, by[k]
		}
	}
	if best != CPUTask {
		thr = nil
	}
	if thr != nil {
		c := *thr
		thr = &c
	}
	return best, thr
}
