package analysis

import (
	"fmt"
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

// whoBoosted names a boosted thread with its own identity, the priority it
// was boosted to and by whom: "task-L/12 (FIFO 10, boosted to 90 by task-H
// (PI))".
func whoBoosted(t *Thread) string {
	by := ""
	if t.BoostedBy != "" {
		by = " by " + t.BoostedBy
	}
	return fmt.Sprintf("%s/%d (%s, boosted to %s%s (PI))", t.Comm, t.TID, t.BoostedFrom, boostedTo(t), by)
}
