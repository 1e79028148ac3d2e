package engine

import (
	"testing"
)

// loadWithStats loads the engine of cfg (not attached) with n tasks'
// statistics written from user space, each with its own placement.
func loadWithStats(tb testing.TB, cfg Config, n int) *Engine {
	tb.Helper()
	e := loadedEngine(tb, cfg)
	for id := uint64(1); id <= uint64(n); id++ {
		k := bpfRtsTaskStats{Id: id, Tid: uint32(1000 + id), Policy: uint32(id % 3), LastCpu: uint32(id % 4),
			CpusMask: id, NrCpusAllowed: uint32(id % 65), Exited: uint32(id % 2)}
		if err := e.objs.Stats.Put(id, &k); err != nil {
			tb.Fatal(err)
		}
	}
	return e
}

// Placements reads, in batches, what AllStats says of every task's
// placement: more tasks than one batch, so the cursor is followed.
func TestPlacementsMatchAllStats(t *testing.T) {
	const n = 3*statsBatch + 7
	e := loadWithStats(t, Config{}, n)
	ps, err := e.Placements()
	if err != nil {
		t.Fatal(err)
	}
	all, err := e.AllStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != n || len(all) != n {
		t.Fatalf("%d placements, %d statistics, want %d", len(ps), len(all), n)
	}
	byID := map[uint64]Placement{}
	for _, p := range ps {
		byID[p.Id] = p
	}
	for _, s := range all {
		want := Placement{Id: s.Id, Policy: s.Policy, LastCPU: int(s.LastCpu), CpusMask: s.CpusMask,
			NrCpusAllowed: uint64(s.NrCpusAllowed), Exited: s.Exited != 0}
		if got := byID[s.Id]; got != want {
			t.Errorf("task %d: placement %+v, want %+v", s.Id, got, want)
		}
	}
}

// BenchmarkPlacements: the housekeeping choice's read at 1000 tracked
// tasks, against AllStats.
func BenchmarkPlacements(b *testing.B) {
	e := loadWithStats(b, Config{}, 1000)
	b.Run("Placements", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ps, err := e.Placements(); err != nil || len(ps) != 1000 {
				b.Fatal(len(ps), err)
			}
		}
	})
	b.Run("AllStats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if all, err := e.AllStats(); err != nil || len(all) != 1000 {
				b.Fatal(len(all), err)
			}
		}
	})
}
