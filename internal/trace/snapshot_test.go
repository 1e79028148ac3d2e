package trace

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// put writes one switch to cpu's ring as BPF does (sequence number taken,
// then the slot filled), comm naming the next task.
func (r *ringSource) put(cpu int, a, b uint32, comm string) {
	seq := r.reserve(cpu)
	r.fill(cpu, seq, a, b, comm)
}

// reserve takes cpu's next sequence number without writing its slot yet
// (a program between the two).
func (r *ringSource) reserve(cpu int) uint64 {
	seq := r.heads[cpu]
	r.heads[cpu]++
	return seq
}

// fill writes the slot of seq.
func (r *ringSource) fill(cpu int, seq uint64, a, b uint32, comm string) {
	r.ts += 100
	e := engine.Event{Ts: r.ts, Seq: uint32(seq), Cpu: uint16(cpu), Type: evSwitch, A: a, B: b}
	for i := 0; i < len(comm) && i < 15; i++ {
		e.Comm[i] = int8(comm[i])
	}
	r.slots[uint32(cpu)*r.per+uint32(seq)&(r.per-1)] = e
}

func seqsOf(evs []raw) []uint64 {
	out := make([]uint64, len(evs))
	for i, r := range evs {
		out[i] = r.seq
	}
	return out
}

// TestTakeIntoIncrementalIsWhole: a snapshot kept up to date poll after
// poll holds exactly what a fresh copy of the rings holds, whatever was
// written in between: nothing, a few events, exactly a ring, more than a
// ring (wrapped between polls), and across many wraps of the backing
// array; a window spanning several polls is cut the same from both.
func TestTakeIntoIncrementalIsWhole(t *testing.T) {
	const per = 64
	src := newRingSource(2, per)
	rng := rand.New(rand.NewPCG(1, 2))
	var sn *Snapshot
	writes := []int{0, 1, 5, per - 1, per, per + 1, 3 * per, 7}
	for round := 0; round < 400; round++ {
		w := writes[round%len(writes)]
		if round >= len(writes) {
			w = rng.IntN(2 * per)
		}
		for i := 0; i < w; i++ {
			cpu := rng.IntN(2)
			src.put(cpu, uint32(1+rng.IntN(5)), uint32(1+rng.IntN(5)), "t")
		}
		var err error
		if sn, err = TakeInto(src, sn); err != nil {
			t.Fatal(err)
		}
		full, err := Take(src)
		if err != nil {
			t.Fatal(err)
		}
		for cpu := range full.cpus {
			got, want := seqsOf(sn.cpus[cpu]), seqsOf(full.cpus[cpu])
			if !slices.Equal(got, want) {
				t.Fatalf("round %d (%d written), CPU %d: incremental holds %v, a fresh copy %v", round, w, cpu, got, want)
			}
			if len(got) > per || sn.wrapped[cpu] != full.wrapped[cpu] {
				t.Fatalf("round %d CPU %d: %d events, wrapped %v (fresh: %v)", round, cpu, len(got), sn.wrapped[cpu], full.wrapped[cpu])
			}
		}
		// The last 150 events' time span: several polls apart.
		win := Window{Metric: "latency", TID: 3, Start: src.ts - 150*100, End: src.ts, CPUStart: 0, CPUEnd: 1}
		a, b := sn.Cut(win, nil), full.Cut(win, nil)
		if len(a.events) != len(b.events) || a.Truncated() != b.Truncated() {
			t.Fatalf("round %d: window of %d events (truncated %v), fresh copy %d (%v)", round, len(a.events), a.Truncated(), len(b.events), b.Truncated())
		}
		for i := range a.events {
			if a.events[i] != b.events[i] {
				t.Fatalf("round %d: window event %d differs", round, i)
			}
		}
	}
}

// TestTakeIntoReadsLateSlotsAgain: a slot whose sequence number is taken
// but not written yet when a Take runs (its program interrupted by others
// that wrote many events since) is not skipped for good: the next Take
// reads it, in order. A slot copied half-written near the head is read
// again too, so the snapshot keeps what was finally written.
func TestTakeIntoReadsLateSlotsAgain(t *testing.T) {
	const per, after = 256, 2 * reread
	src := newRingSource(1, per)
	src.put(0, 1, 2, "a")
	late := src.reserve(0) // a program between taking the number and writing
	for i := 0; i < after; i++ {
		src.put(0, 3, 4, "c")
	}
	sn, err := Take(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sn.cpus[0]); got != 1+after {
		t.Fatalf("before the late slot is written: %d events, want the %d written", got, 1+after)
	}
	src.fill(0, late, 5, 6, "b")
	torn := src.heads[0] - 1
	src.slots[torn].B = 0 // copied half-written: its next task not set yet
	if sn, err = TakeInto(src, sn); err != nil {
		t.Fatal(err)
	}
	src.slots[torn].B = 4
	src.put(0, 7, 8, "d")
	if sn, err = TakeInto(src, sn); err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, 0, after+3)
	for seq := uint64(0); seq < after+3; seq++ {
		want = append(want, seq)
	}
	if got := seqsOf(sn.cpus[0]); !slices.Equal(got, want) {
		t.Fatalf("after it is written: %v, want 0 to %d in order", got, after+2)
	}
	if b := sn.cpus[0][late].B; b != 6 {
		t.Errorf("the late slot holds next task %d, want 6", b)
	}
	if b := sn.cpus[0][torn].B; b != 4 {
		t.Errorf("the slot copied half-written kept next task %d, want 4 as finally written", b)
	}
}

// TestTakeIntoStartsAgainOnANewRecorder: heads that went back (another
// engine's rings) start a new copy rather than keep the old events.
func TestTakeIntoStartsAgainOnANewRecorder(t *testing.T) {
	src := newRingSource(1, 64)
	for i := 0; i < 40; i++ {
		src.put(0, 1, 2, "a")
	}
	sn, err := Take(src)
	if err != nil {
		t.Fatal(err)
	}
	fresh := newRingSource(1, 64)
	fresh.ts = src.ts
	for i := 0; i < 3; i++ {
		fresh.put(0, 1, 2, "b")
	}
	if sn, err = TakeInto(fresh, sn); err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(sn.cpus[0]); !slices.Equal(got, []uint64{0, 1, 2}) || engine.CommString(sn.cpus[0][0].Comm) != "b" {
		t.Errorf("after a new recorder: %v, want its 3 events", got)
	}
}

// TestLearnOnlyNewEvents: Learn sees the events copied since the last
// Learn only (a name set since, SetComm, is not overwritten by an event
// learnt already), and a rename in a new event is learnt.
func TestLearnOnlyNewEvents(t *testing.T) {
	src := newRingSource(1, 64)
	src.put(0, 1, 7, "old")
	names := NewNames(nil, nil)
	sn, err := Take(src)
	if err != nil {
		t.Fatal(err)
	}
	sn.Learn(names)
	if c := names.Comm(7); c != "old" {
		t.Fatalf("tid 7 named %q, want old", c)
	}
	names.SetComm(7, "set")
	sn.Learn(names)
	if c := names.Comm(7); c != "set" {
		t.Errorf("tid 7 named %q after learning no new event, want set", c)
	}
	src.put(0, 1, 7, "renamed")
	if sn, err = TakeInto(src, sn); err != nil {
		t.Fatal(err)
	}
	sn.Learn(names)
	if c := names.Comm(7); c != "renamed" {
		t.Errorf("tid 7 named %q after a rename, want renamed", c)
	}
}
