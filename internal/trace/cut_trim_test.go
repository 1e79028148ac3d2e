package trace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// TestCutTrimsAsTheWholeWindow: Cut leaves most events older than a CPU's
// last MaxEvents out before its copy and sort. What it returns is what
// trimming the whole window gives (the window cut with no limit, then the
// task's own events kept and the others' nearest the end, or the last
// MaxEvents when the task's own are more): the same events, the same
// sparse start, the same counts in the note. Random rings of three CPUs
// (a third with one CPU busy), windows and limits, and one window where
// only the events left out early are trimmed.
func TestCutTrimsAsTheWholeWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	types := []uint8{evSwitch, evSwitch, evWakeup, evSleep, evTimerArm, evMigrate, evSteal}
	const tid = 3
	for round := range 301 {
		src := newRingSource(3, 4096) // no ring wraps: the window is whole before its trim
		fixed := round == 300
		if fixed {
			// Only the events left out before the copy are trimmed (the
			// task has none in the window, its CPU is kept): they alone
			// say where the window is sparse.
			for range 60 {
				src.put(0, 1, 2, "other")
			}
		}
		skew := round%3 == 0 // one CPU busy, the others nearly idle
		for range (200 + rng.IntN(2500)) * bool2int(!fixed) {
			cpu := rng.IntN(3)
			if skew && rng.IntN(30) != 0 {
				cpu = 0
			}
			seq := src.reserve(cpu)
			src.ts += 1 + uint64(rng.IntN(50))
			e := engine.Event{Ts: src.ts, Seq: uint32(seq), Cpu: uint16(cpu), Type: types[rng.IntN(len(types))],
				A: uint32(1 + rng.IntN(8)), B: uint32(1 + rng.IntN(8))}
			if rng.IntN(10) == 0 {
				e.A = tid // the task's own a tenth of the time, beside the switches naming it
			}
			src.slots[uint32(cpu)*src.per+uint32(seq)&(src.per-1)] = e
		}
		sn, err := Take(src)
		if err != nil {
			t.Fatal(err)
		}
		start := uint64(rng.IntN(int(src.ts)))
		w := Window{Metric: "period", TID: tid, Start: start, End: start + uint64(rng.IntN(int(src.ts-start)+1)),
			CPUStart: rng.IntN(3), CPUEnd: rng.IntN(3)}
		if fixed {
			w = Window{Metric: "period", TID: tid, Start: 250, End: src.ts}
		}
		whole := w
		whole.MaxEvents = 0
		full := sn.Cut(whole, NewNames(nil, nil))
		w.MaxEvents = 1 + rng.IntN(300)
		if fixed {
			w.MaxEvents = 10
		}
		got := sn.Cut(w, NewNames(nil, nil))

		want, sparse, long := trimWhole(full.events, w)
		ctx := fmt.Sprintf("round %d: %d events in the window, MaxEvents %d", round, len(full.events), w.MaxEvents)
		if !slices.Equal(got.events, want) {
			t.Fatalf("%s: %d events, want %d", ctx, len(got.events), len(want))
		}
		if got.meta.Truncated != (full.meta.Truncated || long) {
			t.Errorf("%s: truncated %v, want %v", ctx, got.meta.Truncated, full.meta.Truncated || long)
		}
		switch {
		case long && !full.meta.Truncated:
			if note := fmt.Sprintf("window too long: %d events; the first %d ", len(full.events), len(full.events)-w.MaxEvents); !strings.HasPrefix(got.meta.Note, note) {
				t.Errorf("%s: note %q, want it to start %q", ctx, got.meta.Note, note)
			}
		case fixed && (sparse <= w.Start || got.meta.Truncated):
			t.Fatalf("%s: the fixed window is not sparse", ctx)
		case !got.meta.Truncated && sparse > w.Start:
			if got.meta.SparseUntil == nil || *got.meta.SparseUntil != int64(sparse-w.Start) {
				t.Errorf("%s: sparse until %v, want %d", ctx, got.meta.SparseUntil, sparse-w.Start)
			}
		case !got.meta.Truncated && got.meta.SparseUntil != nil:
			t.Errorf("%s: sparse until %d, want whole", ctx, *got.meta.SparseUntil)
		}
	}
}

// trimWhole trims a whole window's events as Cut documents it: the
// others' oldest left out first (sparse: the newest of them + 1), but for
// steal when it fits beside the task's own, then, when the task's own are
// more than MaxEvents, all but the last (long).
func trimWhole(evs []engine.Event, w Window) (out []engine.Event, sparse uint64, long bool) {
	own := func(e *engine.Event) bool { return e.Type != evSteal && mentions(*e, w.TID) }
	nOwn, nSteal := 0, 0
	for i := range evs {
		if own(&evs[i]) {
			nOwn++
		}
		if evs[i].Type == evSteal {
			nSteal++
		}
	}
	keep := func(e *engine.Event) bool { return own(e) || (e.Type == evSteal && nOwn+nSteal <= w.MaxEvents) }
	out = evs
	if len(out) > w.MaxEvents && nOwn < w.MaxEvents {
		drop := len(out) - w.MaxEvents
		out = nil
		for i := range evs {
			if drop > 0 && !keep(&evs[i]) {
				drop--
				sparse = max(sparse, evs[i].Ts+1)
				continue
			}
			out = append(out, evs[i])
		}
	}
	if len(out) > w.MaxEvents {
		return out[len(out)-w.MaxEvents:], sparse, true
	}
	return out, sparse, false
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCutKeepsStealInTheSparsePart: a window trimmed to MaxEvents keeps
// the hypervisor's steal inside its sparse part beside the task's own
// events, as the analysis charges the wait to it (a 1 s period window
// that lost an 83 ms steal blamed the task current on the stalled CPU);
// when the task's own and the steal do not fit, steal is trimmed as
// before.
func TestCutKeepsStealInTheSparsePart(t *testing.T) {
	for _, c := range []struct {
		max  int
		kept bool
	}{{50, true}, {8, true}, {7, false}} { // 6 of the task's own, 2 steals
		src := newRingSource(1, 1024)
		start := src.period(7) // 5 of the task's own
		src.busy(t, 100, nil)
		src.putEv(0, evSteal, 0, 0)
		stealAt := src.ts
		src.busy(t, 100, nil)
		src.putEv(0, evSteal, 0, 0)
		src.busy(t, 300, nil)
		tr := cutPeriod(t, src, start, c.max)
		found := false
		for _, e := range tr.Events {
			found = found || (e.Type == EventSteal && e.T == int64(stealAt-start))
		}
		if tr.SparseUntil == nil || *tr.SparseUntil <= int64(stealAt-start) {
			t.Fatalf("max %d: the steal is not in the sparse part (sparse until %v)", c.max, tr.SparseUntil)
		}
		if found != c.kept {
			t.Errorf("max %d: steal kept %v, want %v", c.max, found, c.kept)
		}
	}
}
