package analysis

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rtscope/rtscope/internal/trace"
)

// Throttle is one interval in which a real-time (or DEADLINE) task,
// runnable on its CPU, was kept off it by throttling: the CPU switched to
// a task of a lower class (SCHED_OTHER, or idle) although it was queued
// there. The scheduler never does that for a queued real-time task unless
// its class is throttled: by the fair server (a DEADLINE server that runs
// SCHED_OTHER tasks for 50 ms of every 1000 ms once they starve, Linux
// 6.12+) or by rt_rq throttling (sched_rt_runtime_us of every
// sched_rt_period_us, older kernels). A DEADLINE task that used up its
// runtime is throttled the same way.
type Throttle struct {
	CPU int `json:"cpu"`
	// T: the switch that gave the CPU away (or when the task was queued,
	// when a lower class held the CPU already), relative to the window start.
	T int64 `json:"t_ns"`
	// Ns: until the real-time class ran there again (or the task
	// migrated, or the window ended).
	Ns uint64 `json:"ns"`
	// Next is what the CPU switched to: a SCHED_OTHER task or idle.
	Next string `json:"next"`
	// UserSpace: no switch told it; a stack sample found Next, a lower
	// class, in user space (preemptible) while the task waited.
	UserSpace bool `json:"user_space,omitempty"`
}

// remoteWakeRaceNs: a switch on the task's CPU this soon after a wakeup
// sent from another CPU may come before the task is queued there (the
// wakeup IPI takes microseconds), so it is no sign of throttling.
const remoteWakeRaceNs = 10_000

// lowerClass tells whether a switch to next (its kernel priority) passes
// over a queued task of kernel priority kprio only under throttling: idle
// or SCHED_OTHER below a real-time task, and anything but a DEADLINE task
// below a DEADLINE one.
func lowerClass(e *trace.Event, kprio int) bool {
	switch {
	case kprio < -1 || kprio >= 100:
		return false
	case e.NextTID == 0:
		// Idle passes over a queued real-time task only when its class is
		// throttled; a DEADLINE task's own reservation leaves the CPU idle
		// after its job ends (sched_yield, its runtime used up) while the
		// window still counts it released: the fair server runs
		// SCHED_OTHER tasks, never idle (cyclicdeadline: its jobs' waits
		// read as "RT throttling ... the CPU switched to idle").
		return kprio != -1
	case e.NextKPrio == kprioUnknown || e.NextSched == "":
		return false
	case kprio == -1:
		return e.NextKPrio >= 0
	}
	return e.NextKPrio >= 100
}

// cpuEvents are the switches and stack samples of each CPU in time order,
// so that a segment's are found by a binary search (a window of 1024
// events has hundreds of runnable segments).
type cpuEvents map[int][]*trace.Event

func switchesAndStacks(events []trace.Event) cpuEvents {
	out := cpuEvents{}
	for i := range events {
		if e := &events[i]; e.Type == trace.EventSwitch || e.Type == trace.EventStack {
			out[e.CPU] = append(out[e.CPU], e)
		}
	}
	return out
}

// in returns cpu's events in [from, to).
func (c cpuEvents) in(cpu int, from, to int64) []*trace.Event {
	evs := c[cpu]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].T >= from })
	j := sort.Search(len(evs), func(j int) bool { return evs[j].T >= to })
	if j < i {
		return nil
	}
	return evs[i:j]
}

// throttles finds the task's throttled intervals: in each runnable segment
// on a known CPU, from each switch there to a lower class until the
// real-time class runs again there (unthrottled), or the segment ends (it
// migrates, or the window ends). The fair server (6.18) can let the
// real-time class run inside its 50 ms while its SCHED_OTHER tasks sleep:
// each return to a lower class opens another interval.
func throttles(tl *timelines, s Subject, segs []taskSeg, w int64) []Throttle {
	if !s.RT() || s.noThrottle {
		return nil
	}
	ev := switchesAndStacks(tl.events)
	var out []Throttle
	for i := range segs {
		sg := &segs[i]
		if sg.st != stRunnable || sg.cpu < 0 || sg.to <= 0 || sg.from >= w {
			continue
		}
		remote := i > 0 && segs[i-1].wake != nil && segs[i-1].wake.CPU != sg.cpu
		until := sg.from // the end of the last interval: switches before it are inside it
		// Its own preempted switch-out opens the segment: the task it
		// gives the CPU to is evidence too.
		for _, e := range ev.in(sg.cpu, sg.from, sg.to) {
			if e.T < until || e.Type != trace.EventSwitch || (remote && e.T-sg.from < remoteWakeRaceNs) || !lowerClass(e, s.KPrio) {
				continue
			}
			start := e.T
			if until == sg.from && firstSwitch(ev, sg.cpu, sg.from, e.T) && lowerAt(tl, sg.cpu, sg.from, s.KPrio) {
				// A lower class already held the CPU when the task was
				// queued, and no real-time task ran before the CPU went
				// to a lower class again: throttled from the start
				// (pi_stress: 12 ms of a SCHED_OTHER task before it).
				start = sg.from
			}
			end := unthrottled(ev, sg.cpu, e.T, sg.to, s.KPrio)
			if from, to := max(start, 0), min(end, w); to > from {
				out = append(out, Throttle{CPU: sg.cpu, T: from, Ns: uint64(to - from), Next: nextWho(e)})
			}
			until = end
		}
		if until == sg.from {
			out = append(out, sampledThrottle(tl, ev, s, sg, w)...)
		}
	}
	return out
}

// sampledThrottle finds the throttling of a runnable segment in which the
// CPU never switched: a lower class held it from the start, and a stack
// sample caught that task in user space while the task waited. User space
// is preemptible: only throttling keeps a queued real-time task behind it
// (rt-throttling's 'starved' spun 50 ms with no switch, its one kernel
// sample read as a non-preemptible section).
func sampledThrottle(tl *timelines, ev cpuEvents, s Subject, sg *taskSeg, w int64) []Throttle {
	if !lowerAt(tl, sg.cpu, sg.from, s.KPrio) {
		return nil
	}
	end := unthrottled(ev, sg.cpu, sg.from, sg.to, s.KPrio)
	for _, e := range ev.in(sg.cpu, sg.from+1, end) {
		if e.Type == trace.EventSwitch {
			return nil // the CPU switched before any sample: not this case
		}
		if e.WaitingTID != s.TID || e.Reason != trace.ReasonUserSpace {
			continue
		}
		from, to := max(sg.from, 0), min(end, w)
		if to <= from {
			return nil
		}
		return []Throttle{{CPU: sg.cpu, T: from, Ns: uint64(to - from), Next: who(&Thread{TID: e.TID, Comm: e.Comm}), UserSpace: true}}
	}
	return nil
}

// unthrottled is when the throttling that began at from on cpu ends: the
// first switch there to a task of the task's class or above (a higher
// priority may run first: its time is interference), else until.
func unthrottled(ev cpuEvents, cpu int, from, until int64, kprio int) int64 {
	for _, e := range ev.in(cpu, from+1, until) {
		if e.Type == trace.EventSwitch && !lowerClass(e, kprio) {
			return e.T
		}
	}
	return until
}

// firstSwitch tells whether no switch on cpu comes in (from, t).
func firstSwitch(ev cpuEvents, cpu int, from, t int64) bool {
	for _, e := range ev.in(cpu, from+1, t) {
		if e.Type == trace.EventSwitch {
			return false
		}
	}
	return true
}

// lowerAt tells whether the task context of cpu at t (idle, or a thread)
// is of a lower class than kernel priority kprio.
func lowerAt(tl *timelines, cpu int, t int64, kprio int) bool {
	var cur *cpuCtx
	for _, sg := range tl.cpus[cpu] {
		if sg.from > t {
			break
		}
		if sg.c.kind == ctxTask || sg.c.kind == ctxIdle {
			cur = sg.c
		}
	}
	switch {
	case cur == nil:
		return false
	case cur.kind == ctxIdle:
		return true
	case cur.thr == nil:
		return false
	}
	return lowerClass(&trace.Event{NextTID: cur.thr.TID, NextKPrio: cur.thr.KPrio, NextSched: cur.thr.Sched}, kprio)
}

func nextWho(e *trace.Event) string {
	if e.NextTID == 0 {
		return "idle"
	}
	return who(&Thread{TID: e.NextTID, Comm: e.NextComm, Sched: e.NextSched})
}

// throttledAt returns the throttled interval holding [from, to) on cpu.
func throttledAt(ths []Throttle, cpu int, from, to int64) bool {
	for _, t := range ths {
		if t.CPU == cpu && from >= t.T && to <= t.T+int64(t.Ns) {
			return true
		}
	}
	return false
}

// throttledCtx accounts a piece of a throttled interval: what ran in task
// context (a SCHED_OTHER task, or idle) is the throttling's; interrupts,
// softirqs and steal keep their own items, as they would have taken the
// CPU anyway.
func (a *accountant) throttledCtx(cpu int, from, to int64, c *cpuCtx) {
	if c.kind != ctxTask && c.kind != ctxIdle {
		a.ctxItem(PhaseRunnable, cpu, from, to, c)
		return
	}
	a.add(Item{Phase: PhaseRunnable, Kind: KindThrottled, CPU: cpu, key: fmt.Sprint("throttled", cpu),
		Label: fmt.Sprintf("throttled: CPU %d given to lower classes (RT throttling / fair server)", cpu)}, from, to)
}

// runnable accounts a runnable segment on its CPU, its throttled
// intervals to throttledCtx.
func (a *accountant) runnable(cpu int, from, to int64) {
	if cpu < 0 || len(a.throttles) == 0 {
		a.onCPU(PhaseRunnable, cpu, from, to)
		return
	}
	a.tl.pieces(cpu, from, to, func(f, t int64, c *cpuCtx) {
		if throttledAt(a.throttles, cpu, f, t) {
			a.throttledCtx(cpu, f, t, c)
		} else {
			a.ctxItem(PhaseRunnable, cpu, f, t, c)
		}
	})
}

// throttleWords names the configuration that throttles: the fair server's
// share, or rt_rq throttling's, from the subject (the defaults when the
// caller could not read them).
func throttleWords(s Subject) string {
	return fmt.Sprintf("RT throttling (fair server: %s)", fairServerWords(s))
}

// fairServerWords is the fair server's share from the subject (the
// defaults when the caller could not read them).
func fairServerWords(s Subject) string {
	run, per := s.FairServerRuntimeNs, s.FairServerPeriodNs
	if run == 0 || per == 0 {
		run, per = 50_000_000, 1_000_000_000
	}
	return fmt.Sprintf("SCHED_OTHER tasks get %s of every %s", msWords(run), msWords(per))
}

func msWords(ns uint64) string {
	if ns%1_000_000 == 0 {
		return fmt.Sprintf("%d ms", ns/1_000_000)
	}
	return us(ns)
}

// throttleVerdict explains a window dominated by throttling, with what ran
// meanwhile and the remedy.
func throttleVerdict(res *Result, s Subject, g *group, share string) {
	res.Cause = CauseThrottling
	res.Culprit = "RT throttling"
	var next, sampled []string
	for _, t := range res.Throttling {
		l := &next
		if t.UserSpace {
			l = &sampled
		}
		if !strings.Contains(strings.Join(*l, ","), t.Next) && len(*l) < 3 {
			*l = append(*l, t.Next)
		}
	}
	cpu := g.top().CPU
	var ran []string
	if len(next) > 0 {
		ran = append(ran, "the CPU switched to "+strings.Join(next, ", ")+" while it was queued")
	}
	if len(sampled) > 0 {
		ran = append(ran, strings.Join(sampled, ", ")+" ran in user space (preemptible) while it was queued")
	}
	if s.KPrio == -1 {
		// Not "RT throttling": a DEADLINE task is throttled by its own
		// runtime (or an earlier deadline, the fair server's), not by
		// sched_rt_runtime_us (deadline_test read "RT throttling (fair
		// server: ...)" over "it used up its runtime").
		res.Culprit = "DEADLINE throttling"
		res.Verdict = fmt.Sprintf("DEADLINE throttling: %s: this DEADLINE task was runnable but throttled on CPU %d for %s (%d interval(s); %s): "+
			"it used up its runtime, or the fair server (%s) took its turn; give it more runtime, or keep the CPU's real-time load lower",
			us(g.ns), cpu, share, len(res.Throttling), strings.Join(ran, "; "), fairServerWords(s))
		return
	}
	res.Verdict = fmt.Sprintf("%s: %s: this %s task was runnable but CPU %d was taken from the real-time class for %s "+
		"(%d interval(s); %s): the real-time tasks on that CPU ran for 95%% of a second. No real-time task should; "+
		"spread or shorten them (raising sched_rt_runtime_us or the fair server's runtime, or setting it to -1 / 0, "+
		"removes the safety net: at your own risk)",
		throttleWords(s), us(g.ns), s.Sched, cpu, share, len(res.Throttling), strings.Join(ran, "; "))
}
