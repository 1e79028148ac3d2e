package trace

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// putEv writes one event of type typ naming a (and b) to cpu's ring.
func (r *ringSource) putEv(cpu int, typ uint8, a, b uint32) {
	seq := r.reserve(cpu)
	r.ts += 100
	r.slots[uint32(cpu)*r.per+uint32(seq)&(r.per-1)] = engine.Event{Ts: r.ts, Seq: uint32(seq), Cpu: uint16(cpu), Type: typ, A: a, B: b}
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

// TestTrackedTaskLongWindowWhole: a period far longer than the rings reach
// keeps the task's own events (KeepOwn) across its whole span when Follow
// reads the rings before they wrap: not truncated, sparse (only
// the task's events) until the rings' reach, full context after.
func TestTrackedTaskLongWindowWhole(t *testing.T) {
	src := newRingSource(2, 64)
	sn, err := Take(src)
	if err != nil {
		t.Fatal(err)
	}
	sn.KeepOwn(7)
	start := src.period(7)
	sn = src.busy(t, 500, sn) // 8 rings' worth on each CPU
	src.putEv(0, evWakeup, 7, 0)
	end := src.ts
	src.putEv(0, evSwitch, 50, 7)
	if sn, err = TakeInto(src, sn); err != nil {
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

// TestMaxEventsKeepsTheTasksEvents: a window with more events than
// MaxEvents keeps the task's own across it and the others' nearest its
// end: not truncated, sparse until the last one left out.
func TestMaxEventsKeepsTheTasksEvents(t *testing.T) {
	src := newRingSource(1, 1024)
	start := src.period(7)
	src.busy(t, 300, nil)
	src.putEv(0, evWakeup, 7, 0)
	end := src.ts
	sn, err := Take(src)
	if err != nil {
		t.Fatal(err)
	}
	tr := sn.Cut(Window{Metric: "period", TID: 7, Start: start, End: end, MaxEvents: 100}, nil).Decode(nil)
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
