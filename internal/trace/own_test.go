package trace

import (
	"slices"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// putEv writes one event of type typ naming a (and b) to cpu's ring.
func (r *ringSource) putEv(cpu int, typ uint8, a, b uint32) {
	seq := r.reserve(cpu)
	r.ts += 100
	e := engine.Event{Ts: r.ts, Seq: uint32(seq), Cpu: uint16(cpu), Type: typ, A: a, B: b}
	tid := a // the task an event is numbered for (rts_own_seq)
	if typ == evSwitch {
		tid = b
	}
	if n, ok := r.own[tid]; ok && mentions(e, tid) {
		n++
		n += b2u16(n == 0)
		r.own[tid], e.Own = n, n
	}
	r.slots[uint32(cpu)*r.per+uint32(seq)&(r.per-1)] = e
}

func b2u16(b bool) uint16 {
	if b {
		return 1
	}
	return 0
}

// period writes a periodic task's activation on CPU 0 (woken, switched in,
// sleeping, switched out) and returns its wakeup's time.
func (r *ringSource) period(tid uint32) uint64 {
	r.putEv(0, evWakeup, tid, 0)
	start := r.ts
	r.putEv(0, evSwitch, 50, tid)
	r.putEv(0, evTimerArm, tid, 0)
	r.putEv(0, evSleep, tid, 0)
	r.putEv(0, evSwitch, tid, 50)
	return start
}

// busy writes n switches between untracked tasks on every CPU, a Follow
// every 10 (polls that keep up) when sn is not nil.
func (r *ringSource) busy(t *testing.T, n int, sn *Snapshot) *Snapshot {
	for i := 0; i < n; i++ {
		for cpu := range r.heads {
			r.putEv(cpu, evSwitch, 50, 51)
		}
		if sn != nil && i%10 == 9 {
			if err := sn.Follow(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sn
}

func ownTypes(tr *Trace, tid uint32) string {
	var got []string
	for _, e := range tr.Events {
		if e.TID == tid || e.PrevTID == tid || e.NextTID == tid {
			got = append(got, string(e.Type))
		}
	}
	return strings.Join(got, " ")
}

// keptSource returns rings of 2 CPUs of 64 events and a snapshot of
// them that keeps task 7's own events (KeepOwn).
func keptSource(t *testing.T) (*ringSource, *Snapshot) {
	t.Helper()
	src := newRingSource(2, 64)
	sn, err := Take(src)
	if err != nil {
		t.Fatal(err)
	}
	sn.KeepOwn(7)
	return src, sn
}

// TestTrackedTaskLongWindowWhole: a period far longer than the rings reach
// keeps the task's own events (KeepOwn) across its whole span when Follow
// reads the rings before they wrap: not truncated, sparse (only
// the task's events) until the rings' reach, full context after.
func TestTrackedTaskLongWindowWhole(t *testing.T) {
	src, sn := keptSource(t)
	start := src.period(7)
	sn = src.busy(t, 500, sn) // 8 rings' worth on each CPU
	src.putEv(0, evWakeup, 7, 0)
	end := src.ts
	src.putEv(0, evSwitch, 50, 7)
	sn, err := TakeInto(src, sn)
	if err != nil {
		t.Fatal(err)
	}
	tr := sn.Cut(Window{Metric: "period", TID: 7, Start: start, End: end, CPUStart: 0, CPUEnd: 0}, nil).Decode(nil)
	if tr.Truncated {
		t.Fatalf("truncated: %s", tr.Note)
	}
	if got, want := ownTypes(tr, 7), "wakeup switch timer_arm sleep switch wakeup"; got != want {
		t.Errorf("the task's events %q, want %q", got, want)
	}
	if tr.SparseUntil == nil || *tr.SparseUntil <= 0 || !strings.Contains(tr.Note, "only the task's own events") {
		t.Fatalf("sparse until %v, note %q", tr.SparseUntil, tr.Note)
	}
	others := 0
	for _, e := range tr.Events {
		if e.T < *tr.SparseUntil && e.PrevTID == 50 && e.NextTID == 51 {
			t.Fatalf("another task's event at %d, before the sparse part ends (%d)", e.T, *tr.SparseUntil)
		}
		if e.T >= *tr.SparseUntil {
			others++
		}
	}
	if others < 32 {
		t.Errorf("%d events after the sparse part: the rings' context near the end is missing", others)
	}
}

// TestTrackedTaskWindowTruncatedWhenNotWhole: the task's events are not
// claimed whole when some were missed: a ring wrapped between two
// Follows, the task was kept once the rings no longer held the window's
// start, it wrote more events
// than it keeps, or they were not kept at all.
func TestTrackedTaskWindowTruncatedWhenNotWhole(t *testing.T) {
	cut := func(src *ringSource, sn *Snapshot, start uint64) *Trace {
		src.putEv(0, evWakeup, 7, 0)
		end := src.ts
		sn, err := TakeInto(src, sn)
		if err != nil {
			t.Fatal(err)
		}
		return sn.Cut(Window{Metric: "period", TID: 7, Start: start, End: end}, nil).Decode(nil)
	}
	for _, c := range []struct {
		name string
		run  func(src *ringSource, sn *Snapshot) (*Snapshot, uint64)
	}{
		{"own events not kept (KeepOwn)", func(src *ringSource, sn *Snapshot) (*Snapshot, uint64) {
			start := src.period(7)
			return src.busy(t, 200, sn), start
		}},
		{"a ring wrapped between Follows", func(src *ringSource, sn *Snapshot) (*Snapshot, uint64) {
			sn.KeepOwn(7)
			start := src.period(7)
			src.busy(t, 200, nil)
			return sn, start
		}},
		{"kept once the rings no longer held the window's start", func(src *ringSource, sn *Snapshot) (*Snapshot, uint64) {
			start := src.period(7)
			sn = src.busy(t, 100, sn)
			sn.KeepOwn(7)
			return src.busy(t, 200, sn), start
		}},
		{"more events than kept", func(src *ringSource, sn *Snapshot) (*Snapshot, uint64) {
			sn.KeepOwn(7)
			start := src.period(7)
			for i := 0; i < OwnPerTask; i++ {
				src.putEv(1, evMigrate, 7, 1)
				src.ts += ownMinSpan / OwnPerTask // not a busy task
				if i%10 == 9 {
					sn = src.busy(t, 10, sn)
				}
			}
			return src.busy(t, 200, sn), start
		}},
		{"a busy task, no longer kept", func(src *ringSource, sn *Snapshot) (*Snapshot, uint64) {
			sn.KeepOwn(7)
			start := src.period(7)
			for i := 0; i < 2*OwnPerTask; i++ {
				src.putEv(1, evMigrate, 7, 1)
				if i%10 == 9 {
					sn = src.busy(t, 10, sn)
				}
			}
			sn.KeepOwn(7) // refused: busy
			if sn.own.tasks[7] != nil {
				t.Error("a busy task is kept again")
			}
			return src.busy(t, 200, sn), start
		}},
	} {
		src := newRingSource(2, 64)
		sn, err := Take(src)
		if err != nil {
			t.Fatal(err)
		}
		sn, start := c.run(src, sn)
		if tr := cut(src, sn, start); !tr.Truncated || tr.SparseUntil != nil {
			t.Errorf("%s: truncated %v, sparse until %v, note %q", c.name, tr.Truncated, tr.SparseUntil, tr.Note)
		}
	}
}

// cutPeriod ends task 7's period with its wakeup and cuts the window
// from start (at most max events, 0: no bound) out of a fresh snapshot.
func cutPeriod(t *testing.T, src *ringSource, start uint64, max int) *Trace {
	t.Helper()
	src.putEv(0, evWakeup, 7, 0)
	end := src.ts
	sn, err := Take(src)
	if err != nil {
		t.Fatal(err)
	}
	return sn.Cut(Window{Metric: "period", TID: 7, Start: start, End: end, MaxEvents: max}, nil).Decode(nil)
}

// TestMaxEventsKeepsTheTasksEvents: a window with more events than
// MaxEvents keeps the task's own across it and the others' nearest its
// end: not truncated, sparse until the last one left out.
func TestMaxEventsKeepsTheTasksEvents(t *testing.T) {
	src := newRingSource(1, 1024)
	start := src.period(7)
	src.busy(t, 300, nil)
	tr := cutPeriod(t, src, start, 100)
	if tr.Truncated || len(tr.Events) != 100 {
		t.Fatalf("truncated %v (%q), %d events, want 100", tr.Truncated, tr.Note, len(tr.Events))
	}
	if got, want := ownTypes(tr, 7), "wakeup switch timer_arm sleep switch wakeup"; got != want {
		t.Errorf("the task's events %q, want %q", got, want)
	}
	if tr.SparseUntil == nil || *tr.SparseUntil <= tr.Events[4].T || *tr.SparseUntil > tr.Events[5].T {
		t.Errorf("sparse until %v, want after the task's switch-out (%d), at most the first other event kept (%d)",
			tr.SparseUntil, tr.Events[4].T, tr.Events[5].T)
	}
}

// TestKeptLateReadsBack: a task kept after its window opened (its first
// timer notice comes after the wakeup that opened its first period) gets
// the events the rings still hold read back: the window is whole.
func TestKeptLateReadsBack(t *testing.T) {
	src := newRingSource(2, 64)
	sn, err := Take(src)
	if err != nil {
		t.Fatal(err)
	}
	start := src.period(7)
	sn = src.busy(t, 20, sn) // read by Follow, not kept: 7 is not kept yet
	sn.KeepOwn(7)
	sn = src.busy(t, 500, sn)
	src.putEv(0, evWakeup, 7, 0)
	end := src.ts
	if sn, err = TakeInto(src, sn); err != nil {
		t.Fatal(err)
	}
	tr := sn.Cut(Window{Metric: "period", TID: 7, Start: start, End: end}, nil).Decode(nil)
	if tr.Truncated || tr.SparseUntil == nil {
		t.Fatalf("truncated %v, sparse until %v: %s", tr.Truncated, tr.SparseUntil, tr.Note)
	}
	if got, want := ownTypes(tr, 7), "wakeup switch timer_arm sleep switch wakeup"; got != want {
		t.Errorf("the task's events %q, want %q", got, want)
	}
}

// TestNumberedTaskWholeAcrossAGap: a ring that lapped before it was read
// leaves a kept task's window whole when its own numbers show that the
// gap held none of its events (sparse, not truncated), and truncated when
// it held one; without numbers (an engine that numbers none), truncated.
func TestNumberedTaskWholeAcrossAGap(t *testing.T) {
	for _, c := range []struct {
		name      string
		numbered  bool
		lostOwn   bool
		truncated bool
	}{
		{"numbered, the gap held none of its events", true, false, false},
		{"numbered, the gap held one of its events", true, true, true},
		{"not numbered", false, false, true},
	} {
		src := newRingSource(2, 64)
		if c.numbered {
			src.own = map[uint32]uint16{7: 65533} // wraps inside the window
		}
		sn, err := Take(src)
		if err != nil {
			t.Fatal(err)
		}
		sn.KeepOwn(7)
		src.putEv(0, evSleep, 7, 0) // the previous period's end: the anchor
		src.putEv(0, evSwitch, 7, 50)
		start := src.period(7)
		sn = src.busy(t, 20, sn) // read: kept
		src.busy(t, 100, nil)    // the rings lap before the next Follow
		if c.lostOwn {
			src.putEv(1, evMigrate, 7, 1)
		}
		src.busy(t, 100, nil)
		sn = src.busy(t, 20, sn)
		src.putEv(0, evWakeup, 7, 0)
		end := src.ts
		src.putEv(0, evSwitch, 50, 7)
		if sn, err = TakeInto(src, sn); err != nil {
			t.Fatal(err)
		}
		tr := sn.Cut(Window{Metric: "period", TID: 7, Start: start, End: end}, nil).Decode(nil)
		if tr.Truncated != c.truncated {
			t.Errorf("%s: truncated %v, want %v (%s)", c.name, tr.Truncated, c.truncated, tr.Note)
			continue
		}
		if c.truncated {
			continue
		}
		if tr.SparseUntil == nil {
			t.Errorf("%s: not sparse: %q", c.name, tr.Note)
		}
		if got, want := ownTypes(tr, 7), "wakeup switch timer_arm sleep switch wakeup"; got != want {
			t.Errorf("%s: the task's events %q, want %q", c.name, got, want)
		}
	}
}

// TestOwnNumbers: the task's own numbers from its last before the window
// to its first at or after its end leave no hole (they wrap, a race may
// swap two or repeat one), and its switch out is there between two
// switches in.
func TestOwnNumbers(t *testing.T) {
	const tid = 7
	ev := func(ts uint64, typ uint8, a, b uint32, own uint16) raw {
		return raw{Event: engine.Event{Ts: ts, Seq: uint32(ts), Type: typ, A: a, B: b, Own: own}, seq: ts}
	}
	base := []raw{
		ev(10, evSleep, tid, 0, 65534),
		ev(11, evSwitch, tid, 50, 0), // switch out: numbered for 50 (untracked)
		ev(20, evWakeup, tid, 0, 65535),
		ev(30, evSwitch, 50, tid, 1),
		ev(35, evSwitch, 51, 52, 0), // another task's
		ev(40, evTimerArm, tid, 0, 2),
		ev(50, evSleep, tid, 0, 3),
		ev(51, evSwitch, tid, 50, 0),
		ev(60, evWakeup, tid, 0, 4),
	}
	edit := func(f func([]raw) []raw) []raw { return f(slices.Clone(base)) }
	for _, c := range []struct {
		name  string
		evs   []raw
		whole bool
	}{
		{"whole, wrapping", base, true},
		{"read twice", append(slices.Clone(base), base[3], base[5]), true},
		{"two swapped by a race", edit(func(e []raw) []raw { e[5].Own, e[6].Own = 3, 2; return e }), true},
		{"one number twice", edit(func(e []raw) []raw { e[6].Own, e[8].Own = 2, 3; return e }), true},
		{"a numbered event lost", edit(func(e []raw) []raw { return slices.Delete(e, 5, 6) }), false},
		{"its switch out lost", edit(func(e []raw) []raw {
			e = slices.Delete(e, 7, 8)
			e[7] = ev(60, evSwitch, 50, tid, 4) // switched in again, never out
			return e
		}), false},
		{"nothing numbered before the window", base[2:], false},
		{"nothing numbered at or after its end", base[:8], false},
		{"an engine that numbers none", edit(func(e []raw) []raw {
			for i := range e {
				e[i].Own = 0
			}
			return e
		}), false},
	} {
		anchor, whole := ownNumbers(tid, 20, 60, c.evs)
		if whole != c.whole || (whole && anchor != 10) {
			t.Errorf("%s: whole %v (anchor %d), want %v", c.name, whole, anchor, c.whole)
		}
	}
}

// TestNumberedBoundsTheLoss: numbers tell a task's loss only across gaps
// that lost fewer events than half their range, counting the gaps since
// the anchor and the events between each read and the snapshot's copy.
func TestNumberedBoundsTheLoss(t *testing.T) {
	var o ownLog
	o.resize(2)
	o.addGap(0, 100)
	o.gaps[0].at = 1000
	if !o.numbered(500, []uint64{0, 0}) {
		t.Error("a gap of 100 events: numbered")
	}
	o.addGap(1, maxNumberedLoss)
	if o.numbered(500, []uint64{0, 0}) {
		t.Error("a gap newer than the anchor that lost too many, its time unknown: numbered")
	}
	o.gaps[1].at = 400
	if !o.numbered(500, []uint64{0, 0}) {
		t.Error("the big gap is older than the anchor: numbered")
	}
	o.fed[1] = 10
	if o.numbered(500, []uint64{0, 10 + maxNumberedLoss}) {
		t.Error("too many events between the read and the copy: numbered")
	}
	for i := 0; i < maxGaps; i++ {
		o.addGap(0, 1)
		o.gaps[len(o.gaps)-1].at = 2000
	}
	if o.numbered(500, []uint64{0, 0}) {
		t.Error("gaps forgotten after the anchor: numbered")
	}
	if !o.numbered(3000, []uint64{0, 0}) {
		t.Error("every gap remembered is older than the anchor: numbered")
	}
}

// TestStealKeptBeyondTheRings: the hypervisor's steal read with a kept
// task's own events stays in the sparse part of its window, long after
// the rings overwrote it: the verdict charges a wait there to a vCPU
// stall instead of whatever ran on the stalled CPU.
func TestStealKeptBeyondTheRings(t *testing.T) {
	src, sn := keptSource(t)
	start := src.period(7)
	sn = src.busy(t, 20, sn)
	src.putEv(1, evSteal, 0, 0)
	stealAt := src.ts
	sn = src.busy(t, 500, sn) // 8 rings' worth on each CPU, read every 10
	src.putEv(0, evWakeup, 7, 0)
	end := src.ts
	sn, err := TakeInto(src, sn)
	if err != nil {
		t.Fatal(err)
	}
	tr := sn.Cut(Window{Metric: "period", TID: 7, Start: start, End: end, CPUStart: 0, CPUEnd: 1}, nil).Decode(nil)
	if tr.Truncated || tr.SparseUntil == nil || *tr.SparseUntil <= int64(stealAt-start) {
		t.Fatalf("truncated %v, sparse until %v (the steal at %d): %s", tr.Truncated, tr.SparseUntil, stealAt-start, tr.Note)
	}
	found := 0
	for _, e := range tr.Events {
		if e.Type == EventSteal {
			found++
			if e.T != int64(stealAt-start) || e.CPU != 1 {
				t.Errorf("steal at %d on CPU %d, want %d on CPU 1", e.T, e.CPU, stealAt-start)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d steal events in the window, want 1", found)
	}
}
