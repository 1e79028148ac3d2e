package analysis

import (
	"math"
	"sort"

	"github.com/rtscope/rtscope/internal/trace"
)

// Contexts a CPU can be in.
const (
	ctxUnknown     = iota // no event tells (before the first one, CPU not recorded)
	ctxTask               // a task (thr) in task context
	ctxIdle               // the idle task
	ctxHardIRQ            // an IRQ handler (irq_entry/exit)
	ctxTickGap            // inside the timer interrupt between two callbacks
	ctxTimer              // an hrtimer callback (hard or soft)
	ctxSoftIRQ            // a softirq vector
	ctxSteal              // the hypervisor ran something else: this vCPU was not running
	ctxIPI                // an IPI handler (ipi_entry/exit, ipi.go)
	ctxNotKept            // a sparse window's start: the CPU's events were not kept (notKept)
	ctxOverwritten        // before a CPU's first event, its flight recorder overwritten (overwritten)
)

// cpuCtx is what a CPU runs. Frames of IRQs are shared by the segments
// before and after a nested frame, so what a callback woke, learnt at its
// end, is seen by all of them.
type cpuCtx struct {
	kind    int
	thr     *Thread
	irq     *int
	irqName string
	vec     *int
	vecName string
	fn      string
	hard    bool
	ipi     *trace.IPI // ctxIPI: its kind and sender
	woke    []uint32
	wokeBy  map[uint32]string // tid -> comm
}

func (c *cpuCtx) wokeTID(tid uint32) bool {
	for _, t := range c.woke {
		if t == tid {
			return true
		}
	}
	return false
}

type ctxSeg struct {
	from, to int64
	c        *cpuCtx
}

const (
	minT = math.MinInt64 / 4
	maxT = math.MaxInt64 / 4
	// tickGap: a gap this short between two hard timer callbacks is the
	// timer interrupt itself (hrtimer_interrupt running its queue).
	tickGap = 20_000
	// kprioUnknown: a thread known only from a stack sample.
	kprioUnknown = -2
)

// timelines holds what the events say about CPUs and tasks.
type timelines struct {
	events []trace.Event
	cpus   map[int][]ctxSeg
	// thread identities learnt from switches (effective priority at that time)
	threads map[uint32]*Thread
	// stack samples per tid
	stacks map[uint32][]trace.Event
	// stealClock: steal events would have been recorded (their absence
	// means none); steal: ns charged to the hypervisor per CPU.
	stealClock bool
	steal      map[int]uint64
	// ipiSendersUnseen: why IPI sends were not recorded ("": they were): an IPI with no sender is unattributed.
	ipiSendersUnseen string
	// lapped: a CPU's ring lost the window's start (overwritten), and
	// with it any steal event there.
	lapped bool
	// monitor: rtscope's own threads (trace.Trace.Monitor).
	monitor map[uint32]bool
	// lowest: each thread's lowest priority seen in the window (its own,
	// when it also ran boosted by priority inheritance).
	lowest map[uint32]*Thread
}

func threadOfNext(e *trace.Event) *Thread {
	return &Thread{TID: e.NextTID, Comm: e.NextComm, Sched: e.NextSched, KPrio: e.NextKPrio}
}

func threadOfPrev(e *trace.Event) *Thread {
	return &Thread{TID: e.PrevTID, Comm: e.PrevComm, Sched: e.PrevSched, KPrio: e.PrevKPrio}
}

func build(events []trace.Event) *timelines {
	tl := &timelines{events: events, cpus: map[int][]ctxSeg{}, threads: map[uint32]*Thread{}, stacks: map[uint32][]trace.Event{},
		steal: map[int]uint64{}, monitor: map[uint32]bool{}, lowest: map[uint32]*Thread{}}
	seen := func(tid uint32, comm, sched string, kprio int) {
		if tid == 0 || sched == "" || kprio == kprioUnknown {
			return
		}
		if l := tl.lowest[tid]; l == nil || kprio > l.KPrio {
			tl.lowest[tid] = &Thread{TID: tid, Comm: comm, Sched: sched, KPrio: kprio}
		}
	}
	byCPU := map[int][]int{}
	for i := range events {
		e := &events[i]
		byCPU[e.CPU] = append(byCPU[e.CPU], i)
		switch e.Type {
		case trace.EventWakeup:
			seen(e.TID, e.Comm, e.Sched, e.KPrio)
			if w := e.Waker; w != nil && w.Kind == trace.WakerTask {
				seen(w.TID, w.Comm, w.Sched, w.KPrio)
			}
		case trace.EventSwitch:
			seen(e.NextTID, e.NextComm, e.NextSched, e.NextKPrio)
			seen(e.PrevTID, e.PrevComm, e.PrevSched, e.PrevKPrio)
			if e.NextTID != 0 {
				tl.threads[e.NextTID] = threadOfNext(e)
			}
			if e.PrevTID != 0 {
				if _, ok := tl.threads[e.PrevTID]; !ok {
					tl.threads[e.PrevTID] = threadOfPrev(e)
				}
			}
		case trace.EventStack:
			tl.stacks[e.TID] = append(tl.stacks[e.TID], *e)
		}
	}
	for cpu, idx := range byCPU {
		tl.cpus[cpu] = cpuTimeline(events, idx)
	}
	for i := range events {
		if e := &events[i]; e.Type == trace.EventSteal && e.StealNs > 0 && e.SinceT != nil {
			tl.cpus[e.CPU] = carveSteal(tl.cpus[e.CPU], *e.SinceT, e.T, int64(e.StealNs))
		}
	}
	return tl
}

// carveSteal charges ns of hypervisor steal, known only to lie somewhere in
// (since, at], to the CPU's timeline: into its longest stretches without an
// event first, at their ends. A vCPU that is not running records nothing,
// so a stall shows as a gap; and what it delays is the event after the gap
// (a late timer interrupt, a late switch), so the stolen time is placed just
// before that event. Steal never exceeds the clock time between two readings
// (the kernel caps it), so it always fits.
func carveSteal(segs []ctxSeg, since, at int64, ns int64) []ctxSeg {
	type piece struct {
		seg  int
		a, b int64
	}
	var ps []piece
	for i, sg := range segs {
		if sg.c.kind == ctxSteal {
			continue
		}
		a, b := max(sg.from, since), min(sg.to, at)
		if b > a {
			ps = append(ps, piece{i, a, b})
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].b-ps[i].a > ps[j].b-ps[j].a })
	carve := map[int][2]int64{} // segment -> stolen [a, b)
	for _, p := range ps {
		if ns <= 0 {
			break
		}
		take := min(ns, p.b-p.a)
		carve[p.seg] = [2]int64{p.b - take, p.b}
		ns -= take
	}
	if len(carve) == 0 {
		return segs
	}
	stolen := &cpuCtx{kind: ctxSteal}
	out := make([]ctxSeg, 0, len(segs)+2*len(carve))
	for i, sg := range segs {
		c, ok := carve[i]
		if !ok {
			out = append(out, sg)
			continue
		}
		if c[0] > sg.from {
			out = append(out, ctxSeg{sg.from, c[0], sg.c})
		}
		out = append(out, ctxSeg{c[0], c[1], stolen})
		if sg.to > c[1] {
			out = append(out, ctxSeg{c[1], sg.to, sg.c})
		}
	}
	return out
}

func frameOf(e *trace.Event) *cpuCtx {
	switch e.Type {
	case trace.EventIRQEntry, trace.EventIRQExit:
		return &cpuCtx{kind: ctxHardIRQ, irq: e.IRQ, irqName: e.IRQName, hard: true}
	case trace.EventSoftirqEntry, trace.EventSoftirqExit:
		return &cpuCtx{kind: ctxSoftIRQ, vec: e.Vec, vecName: e.VecName}
	case trace.EventTimerEntry, trace.EventTimerExit:
		return &cpuCtx{kind: ctxTimer, fn: e.Function, hard: e.HardIRQ}
	case trace.EventIPIEntry, trace.EventIPIExit:
		return &cpuCtx{kind: ctxIPI, ipi: e.IPI, hard: true}
	}
	return nil
}

// cpuTimeline turns the events of one CPU into contiguous context segments
// covering all time: what ran before the first event is backfilled (the
// first switch's prev task, IRQ frames whose entry came before the trace).
func cpuTimeline(events []trace.Event, idx []int) []ctxSeg {
	c := &cpuWalk{cur: runningFirst(events, idx), stack: framesOpenFirst(events, idx), start: minT}
	c.ctx = c.top()
	for k, i := range idx {
		e := &events[i]
		switch e.Type {
		case trace.EventSwitch:
			c.emit(e.T)
			// A switch happens in task context: frames still open are stale.
			c.stack = c.stack[:0]
			c.cur = threadOfNext(e)
			c.refresh()
		case trace.EventIRQEntry, trace.EventSoftirqEntry, trace.EventTimerEntry, trace.EventIPIEntry:
			c.emit(e.T)
			if len(c.stack) > 0 && c.stack[len(c.stack)-1].kind == ctxTickGap {
				c.stack = c.stack[:len(c.stack)-1]
			}
			c.stack = append(c.stack, frameOf(e))
			c.refresh()
		case trace.EventIRQExit, trace.EventSoftirqExit, trace.EventTimerExit, trace.EventIPIExit:
			c.emit(e.T)
			if len(c.stack) > 0 {
				c.stack = c.stack[:len(c.stack)-1]
			}
			// Between two hard timer callbacks of one interrupt.
			if e.Type == trace.EventTimerExit && e.HardIRQ && len(c.stack) == 0 && k+1 < len(idx) {
				n := &events[idx[k+1]]
				if n.Type == trace.EventTimerEntry && n.HardIRQ && n.T-e.T <= tickGap {
					c.stack = append(c.stack, &cpuCtx{kind: ctxTickGap, hard: true})
				}
			}
			c.refresh()
		case trace.EventWakeup:
			c.woke(e)
		}
	}
	c.emit(maxT)
	return c.segs
}

// runningFirst is the task running before a CPU's first switch (its prev),
// else the task a stack sample or a task-context wakeup names.
func runningFirst(events []trace.Event, idx []int) *Thread {
	var cur *Thread
	for _, i := range idx {
		e := &events[i]
		if e.Type == trace.EventSwitch {
			return threadOfPrev(e)
		}
		if cur == nil && e.Type == trace.EventStack {
			cur = &Thread{TID: e.TID, Comm: e.Comm, KPrio: kprioUnknown}
		}
		if cur == nil && e.Type == trace.EventWakeup && e.Waker != nil && e.Waker.Kind == trace.WakerTask {
			cur = &Thread{TID: e.Waker.TID, Comm: e.Waker.Comm, Sched: e.Waker.Sched, KPrio: e.Waker.KPrio}
		}
	}
	return cur
}

// framesOpenFirst is the stack of IRQ frames open at a CPU's first event:
// the exits whose entry came before the trace, outermost first.
func framesOpenFirst(events []trace.Event, idx []int) []*cpuCtx {
	var stack []*cpuCtx
	depth := 0
	for _, i := range idx {
		e := &events[i]
		if e.Type.Entry() {
			depth++
		} else if e.Type.Exit() {
			if depth > 0 {
				depth--
			} else {
				stack = append([]*cpuCtx{frameOf(e)}, stack...)
			}
		}
	}
	return stack
}

// cpuWalk is the state of cpuTimeline along a CPU's events: the task in
// task context, the open IRQ frames, and the segment being built.
type cpuWalk struct {
	cur   *Thread
	stack []*cpuCtx
	segs  []ctxSeg
	start int64   // of the current segment
	ctx   *cpuCtx // of the current segment
}

// top is what the CPU runs now: the innermost frame, else the task.
func (c *cpuWalk) top() *cpuCtx {
	if len(c.stack) > 0 {
		return c.stack[len(c.stack)-1]
	}
	if c.cur == nil {
		return &cpuCtx{kind: ctxUnknown}
	}
	if c.cur.TID == 0 {
		return &cpuCtx{kind: ctxIdle, thr: c.cur}
	}
	return &cpuCtx{kind: ctxTask, thr: c.cur}
}

// emit closes the current segment at t.
func (c *cpuWalk) emit(t int64) {
	if t > c.start {
		c.segs = append(c.segs, ctxSeg{c.start, t, c.ctx})
		c.start = t
	}
}

func (c *cpuWalk) refresh() {
	n := c.top()
	// Keep the same frame object while nothing changed, so that a
	// segment split by an event still shares the frame.
	if n.kind == ctxTask || n.kind == ctxIdle || n.kind == ctxUnknown {
		if c.ctx.kind == n.kind && c.ctx.thr == n.thr {
			return
		}
	}
	c.ctx = n
}

// woke records a wakeup in the frame that made it (none in task context).
func (c *cpuWalk) woke(e *trace.Event) {
	if len(c.stack) == 0 {
		return
	}
	f := c.stack[len(c.stack)-1]
	f.woke = append(f.woke, e.TID)
	if f.wokeBy == nil {
		f.wokeBy = map[uint32]string{}
	}
	f.wokeBy[e.TID] = e.Comm
}

// pieces calls f with each piece of a CPU's timeline inside [a, b), in order.
func (tl *timelines) pieces(cpu int, a, b int64, f func(from, to int64, c *cpuCtx)) {
	segs, ok := tl.cpus[cpu]
	if !ok {
		f(a, b, &cpuCtx{kind: ctxUnknown})
		return
	}
	for _, s := range segs {
		if s.to <= a || s.from >= b {
			continue
		}
		f(max(s.from, a), min(s.to, b), s.c)
	}
}

// notKept marks, on every CPU, what ran before until (a sparse window's
// SparseUntil: only the task's own events and steal were kept there) as
// not kept, but for task tid itself and steal. Extrapolated instead, the
// last task a kept switch named held its CPU the whole sparse part: one
// 53.9 ms wait of cyclictest's main thread read as "ipi-spinner ran 93%",
// "gofmt ran 53%" and "its own timer callback took 48%" in three windows
// of the same wait.
func (tl *timelines) notKept(until int64, tid uint32) {
	for cpu, segs := range tl.cpus {
		var out []ctxSeg
		for _, sg := range segs {
			own := sg.c.kind == ctxSteal || (sg.c.kind == ctxTask && sg.c.thr != nil && sg.c.thr.TID == tid)
			if sg.from >= until || own {
				out = append(out, sg)
				continue
			}
			out = append(out, ctxSeg{sg.from, min(sg.to, until), &cpuCtx{kind: ctxNotKept}})
			if sg.to > until {
				out = append(out, ctxSeg{until, sg.to, sg.c})
			}
		}
		tl.cpus[cpu] = out
	}
}

// overwritten marks what cpu ran before its first event as overwritten:
// its flight recorder lapped past the window's start (Trace.Overwritten),
// so the backfill (the first switch's prev task, the frame of an exit
// with no entry) is a guess. A signaltest thread's 62.4 ms response
// window kept CPU 0's events from 40.9 ms on, the first an
// hrtimer_wakeup callback's exit: "CPU 0 spent 41469.3 us (66%) of the
// window in hard-IRQ context, mostly timer callback hrtimer_wakeup".
// Steal is kept: it is placed by the steal clock, not by the ring.
func (tl *timelines) overwritten(cpu int) {
	first, ok := int64(0), false
	for i := range tl.events {
		if e := &tl.events[i]; e.CPU == cpu && e.Type != trace.EventSteal {
			first, ok = e.T, true
			break
		}
	}
	var out []ctxSeg
	for _, sg := range tl.cpus[cpu] {
		if (ok && sg.from >= first) || sg.c.kind == ctxSteal {
			out = append(out, sg)
			continue
		}
		end := sg.to
		if ok {
			end = min(sg.to, first)
		}
		out = append(out, ctxSeg{sg.from, end, &cpuCtx{kind: ctxOverwritten}})
		if end < sg.to {
			out = append(out, ctxSeg{end, sg.to, sg.c})
		}
	}
	tl.cpus[cpu] = out
	tl.lapped = true
}

// Task states.
const (
	stUnknown = iota
	stRunning
	stRunnable
	stBlocked
	stExited
)

// taskSeg is one state of a task over [from, to).
type taskSeg struct {
	from, to int64
	st       int
	cpu      int
	sleep    *trace.Event // the sleep that started a blocked segment
	state    string       // prev_state letters of the switch-out
	wake     *trace.Event // the wakeup that ended a blocked segment
	missed   bool         // it ended without a recorded wakeup or switch-in (lost events)
}

// taskTimeline follows one task through switches, wakeups, sleeps and
// migrations. The state before its first event is inferred from that event
// (a wakeup: it slept; a switch-out or sleep: it ran), else unknown.
func (tl *timelines) taskTimeline(tid uint32) (segs []taskSeg, migrations []Migration) {
	t := &taskWalk{cur: taskSeg{from: minT, st: stUnknown, cpu: -1}, first: true}
	for i := range tl.events {
		e := &tl.events[i]
		switch {
		case e.Type == trace.EventSwitch && e.PrevTID == tid && tid != 0:
			t.switchedOut(e)
		case e.Type == trace.EventSwitch && e.NextTID == tid && tid != 0:
			if t.first {
				t.cur.st, t.cur.cpu = stUnknown, e.CPU
			}
			t.closeAt(e.T, taskSeg{st: stRunning, cpu: e.CPU})
		case e.Type == trace.EventWakeup && e.TID == tid:
			t.woken(e)
		case e.Type == trace.EventSleep && e.TID == tid:
			if t.first {
				t.cur.st, t.cur.cpu = stRunning, e.CPU
			} else if t.cur.st != stRunning {
				t.cur.missed = true
				t.closeAt(e.T, taskSeg{st: stRunning, cpu: e.CPU})
			}
			t.pendingSleep = e
		case e.Type == trace.EventMigrate && e.TID == tid:
			t.migrated(e)
		case (e.Type == trace.EventUserReturn || e.Type == trace.EventHandlerEntry || e.Type == trace.EventHandlerExit || e.Type == trace.EventTimerArm) && e.TID == tid,
			e.Type == trace.EventStack && e.TID == tid,
			e.Type == trace.EventWakeup && e.Waker != nil && e.Waker.Kind == trace.WakerTask && e.Waker.TID == tid:
			t.onCPU(e)
		case e.Type == trace.EventExit && e.TID == tid:
			t.closeAt(e.T, taskSeg{st: stExited, cpu: -1})
		default:
			continue
		}
		t.first = false
	}
	t.cur.to = maxT
	return append(t.segs, t.cur), t.migrations
}

// taskWalk is the state of taskTimeline along the events: the segment
// being built, and the sleep that will start the next blocked one.
type taskWalk struct {
	cur          taskSeg
	first        bool // no event of the task yet
	pendingSleep *trace.Event
	segs         []taskSeg
	migrations   []Migration
}

// closeAt ends the current segment at t and starts next.
func (t *taskWalk) closeAt(at int64, next taskSeg) {
	t.cur.to = at
	if t.cur.to > t.cur.from {
		t.segs = append(t.segs, t.cur)
	} else if len(t.segs) > 0 && t.cur.st == stBlocked && t.cur.wake != nil {
		// A zero-length sleep still passes its waker on.
		t.segs[len(t.segs)-1].wake = t.cur.wake
	}
	next.from = at
	t.cur = next
}

// switchedOut: the task leaves its CPU, preempted (runnable) or to sleep.
func (t *taskWalk) switchedOut(e *trace.Event) {
	if t.first {
		t.cur.st, t.cur.cpu = stRunning, e.CPU
	} else if t.cur.st != stRunning {
		t.cur.missed = true // it ran: its wakeup or switch-in was lost
	}
	if e.Preempted || e.PrevState == "R" || e.PrevState == "R+" {
		t.closeAt(e.T, taskSeg{st: stRunnable, cpu: e.CPU})
	} else {
		t.closeAt(e.T, taskSeg{st: stBlocked, cpu: e.CPU, sleep: t.pendingSleep, state: e.PrevState})
	}
	t.pendingSleep = nil
}

// woken ends a sleep (or an unknown state, then a sleep) on the CPU the
// task is woken to.
func (t *taskWalk) woken(e *trace.Event) {
	if t.first {
		t.cur.st = stBlocked
	}
	if t.cur.st != stBlocked && t.cur.st != stUnknown {
		return
	}
	t.cur.wake = e
	if t.cur.st == stUnknown {
		t.cur.st = stBlocked
	}
	cpu := e.CPU
	if e.TargetCPU != nil {
		cpu = *e.TargetCPU
	}
	t.closeAt(e.T, taskSeg{st: stRunnable, cpu: cpu})
}

// migrated moves a waiting task to its new CPU and notes the migration.
func (t *taskWalk) migrated(e *trace.Event) {
	from, to := -1, -1
	if e.FromCPU != nil {
		from = *e.FromCPU
	}
	if e.ToCPU != nil {
		to = *e.ToCPU
	}
	t.migrations = append(t.migrations, Migration{T: e.T, From: from, To: to})
	if t.cur.cpu < 0 {
		// Before its first event it was on the CPU it left, not on the
		// window's first CPU (startState's guess): a DEADLINE job queued
		// 2.1 ms on CPU 1 read as throttled by CPU 0's SCHED_OTHER task.
		t.cur.cpu = from
	}
	if t.cur.st == stRunnable || t.cur.st == stUnknown {
		t.closeAt(e.T, taskSeg{st: t.cur.st, cpu: to})
	} else if t.cur.st == stBlocked {
		t.cur.cpu = to
	}
}

// onCPU: an event the task makes itself (or a wakeup it makes) puts it on
// a CPU: if the events said otherwise, some were lost.
func (t *taskWalk) onCPU(e *trace.Event) {
	if t.first {
		t.cur.st, t.cur.cpu = stRunning, e.CPU
	} else if t.cur.st == stBlocked || t.cur.st == stRunnable || t.cur.st == stUnknown {
		t.cur.missed = true
		t.closeAt(e.T, taskSeg{st: stRunning, cpu: e.CPU})
	}
}

// stackFor returns the stack sample of tid closest to [a, b) on cpu: inside
// it if any (the latest), else the nearest one before it.
func (tl *timelines) stackFor(tid uint32, a, b int64) (trace.Event, bool) {
	var best trace.Event
	found := false
	for _, s := range tl.stacks[tid] {
		if s.T <= b {
			best, found = s, true
		}
	}
	if found && best.T < a-5_000_000 {
		return best, false // too old to speak for this interval
	}
	return best, found
}
