package engine

import "testing"

// preempt runs a preempted switch prev -> next with their kernel prios.
func (tw *twin) preempt(now, cpu uint64, prev, next uint32, prevPrio, nextPrio int64) {
	tw.t.Helper()
	tw.run(tw.objs.TestSwitchPrio, now, cpu, uint64(prev), uint64(next), uint64(prevPrio), uint64(nextPrio))
}

// TestTwinThrottled: a real-time task preempted in favour of a lower class
// (idle, SCHED_OTHER) counts a throttled interval; one preempted by a
// higher real-time priority, or a SCHED_OTHER task preempted, does not;
// nor does a DEADLINE task whose job ended (its runtime used up, or
// yielded: rts_dl_waits; the twin reads no entity, so it cannot tell).
func TestTwinThrottled(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false) // FIFO, kernel prio 89
	tw.track(101, true, false) // SCHED_OTHER
	tw.track(102, true, false) // DEADLINE
	tw.track(300, true, false)
	cases := []struct {
		tid        uint32
		prio, next int64
		nextTID    uint32
		throttled  bool
	}{
		{100, 89, 120, idle, true},  // to idle: the fair server idling, or rt_rq throttled
		{100, 89, 120, 300, true},   // to a SCHED_OTHER task
		{100, 89, 10, 300, false},   // a higher real-time priority
		{100, 89, 139, 300, true},   // nice 19
		{101, 120, 120, 300, false}, // SCHED_OTHER time sharing
		{102, -1, 50, 300, false},   // DEADLINE below a real-time task: its runtime used up, its own overrun (rts_dl_waits; no entity read here)
		{102, -1, -1, 300, false},   // another DEADLINE task (earlier deadline)
	}
	want := map[uint32]uint64{}
	now := uint64(1000)
	for _, c := range cases {
		tw.switchTo(now, 0, idle, c.tid, false, 0)
		tw.preempt(now+100, 0, c.tid, c.nextTID, c.prio, c.next)
		tw.switchTo(now+200, 0, c.nextTID, idle, true, 0)
		if c.throttled {
			want[c.tid]++
		}
		now += 1000
	}
	for _, tid := range []uint32{100, 101, 102} {
		if got := tw.stats(tid).Throttled; uint64(got) != want[tid] {
			t.Errorf("tid %d: throttled %d, want %d", tid, got, want[tid])
		}
	}
}
