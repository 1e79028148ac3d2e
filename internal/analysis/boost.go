package analysis

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/trace"
)

// boosters finds the threads of a window that ran boosted by priority
// inheritance on another thread's behalf, from the window's events alone:
// boosters[owner] is the waiter it ran for. An owner is a thread that woke
// a waiter above its own lowest priority seen in the window, when the
// waiter slept on a PI futex or the owner also ran at the waiter's
// priority (the kernel drops the boost before it wakes the next waiter).
// In a --pi priority-inversion run, task-M's verdict named task-L (FIFO
// 10, running at 90 for task-H) as a higher-priority thread, "a priority
// misconfiguration".
func boosters(evs []trace.Event, tl *timelines) map[uint32]*Thread {
	ran := map[uint32]map[int]bool{} // priorities each thread was switched with
	at := func(tid uint32, kprio int) {
		if ran[tid] == nil {
			ran[tid] = map[int]bool{}
		}
		ran[tid][kprio] = true
	}
	for _, e := range evs {
		if e.Type == trace.EventSwitch {
			at(e.PrevTID, e.PrevKPrio)
			at(e.NextTID, e.NextKPrio)
		}
	}
	piSleep := map[uint32]bool{}
	out := map[uint32]*Thread{}
	for _, e := range evs {
		switch e.Type {
		case trace.EventSleep:
			piSleep[e.TID] = e.Reason == trace.ReasonPIFutex
		case trace.EventWakeup:
			w := e.Waker
			if w == nil || w.Kind != trace.WakerTask || w.TID == 0 || w.TID == e.TID {
				continue
			}
			l := tl.lowest[w.TID]
			if l == nil || !higher(e.KPrio, l.KPrio) {
				continue
			}
			if piSleep[e.TID] || ran[w.TID][e.KPrio] {
				out[w.TID] = &Thread{TID: e.TID, Comm: e.Comm, Sched: e.Sched, KPrio: e.KPrio}
			}
		}
	}
	return out
}

// boostedTo is the priority a boosted thread ran with, without its policy
// when the boost kept it ("90" of "FIFO 90" for a FIFO 10 thread).
func boostedTo(t *Thread) string {
	now, own := strings.Fields(t.Sched), strings.Fields(t.BoostedFrom)
	if len(now) == 2 && len(own) == 2 && now[0] == own[0] {
		return now[1]
	}
	return t.Sched
}

// boostedSched is a boosted thread's identity, the priority it was boosted
// to and by whom: "FIFO 10, boosted to 90 by task-H (PI)".
func boostedSched(t *Thread) string {
	by := ""
	if t.BoostedBy != "" {
		by = " by " + t.BoostedBy
	}
	return fmt.Sprintf("%s, boosted to %s%s (PI)", t.BoostedFrom, boostedTo(t), by)
}

// whoBoosted names a boosted thread: "task-L/12 (FIFO 10, boosted to 90
// by task-H (PI))".
func whoBoosted(t *Thread) string {
	return fmt.Sprintf("%s/%d (%s)", t.Comm, t.TID, boostedSched(t))
}

// boost is a lock owner's own identity and its waiter's: it ran boosted
// at a kernel priority above from's and up to by's.
type boost struct {
	from  string
	fromK int
	by    string
	byK   int
}

// boosts are the window's lock owners that priority inheritance could
// boost: the task's own lock's, and other waiters' (boosters).
func (a *accountant) boosts() map[uint32]boost {
	out := map[uint32]boost{}
	for tid := range a.lockOwners {
		if l := a.tl.lowest[tid]; l != nil {
			out[tid] = boost{l.Sched, l.KPrio, a.s.Comm, a.s.KPrio}
		}
	}
	for tid, b := range a.boosters {
		if l := a.tl.lowest[tid]; l != nil && out[tid].from == "" {
			out[tid] = boost{l.Sched, l.KPrio, b.Comm, b.KPrio}
		}
	}
	return out
}

// BoostedSched says how thread tid ran at kernel priority kprio when the
// analysis found it boosted by priority inheritance there ("FIFO 10,
// boosted to 90 by task-H (PI)"), for the event listings
// (report.BoostNamer); ok false otherwise.
func (r *Result) BoostedSched(tid uint32, kprio int) (string, bool) {
	if b, ok := r.boosts[tid]; ok && higher(kprio, b.fromK) && !higher(kprio, b.byK) && kprio >= 0 && kprio < 99 {
		to := fmt.Sprintf("kernel priority %d", kprio)
		if p := strings.Fields(b.from); len(p) == 2 && (p[0] == "FIFO" || p[0] == "RR") {
			to = strconv.Itoa(99 - kprio)
		}
		return fmt.Sprintf("%s, boosted to %s by %s (PI)", b.from, to, b.by), true
	}
	// A result read back from JSON: its breakdown's threads.
	for _, it := range r.Breakdown {
		if t := it.Thread; t != nil && t.TID == tid && t.KPrio == kprio && t.BoostedFrom != "" {
			return boostedSched(t), true
		}
	}
	return "", false
}
