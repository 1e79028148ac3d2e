package engine

import (
	"testing"

	"github.com/rtscope/rtscope/internal/target"
)

// TestTrackingDeferredWhenStorageBusy: a task whose task storage cannot be
// created (the kernel's task-storage lock busy, as preemptible kernels have
// it at random; forced here for the first 4 creations) is tracked at its
// next switch-in instead of never: every task of a launched tree is
// tracked, under its own name, and none counts as lost. The launched shell
// itself fails 4 times (at the scan, then at its switch-ins) while it forks:
// children of a parent whose tracking is deferred are followed too.
func TestTrackingDeferredWhenStorageBusy(t *testing.T) {
	trackTreeDeferred(t, Config{Trace: true, FlightPerCPU: 64, TestStorageBusy: 4})
}

// TestTrackingDeferredWhenStatsRefused: the same when the statistics hash
// refuses an insertion for a passing reason (its per-CPU cache empty, as
// PREEMPT_RT kernels have it when real-time tasks starve the refill; forced
// here for the first 4): deferred, never lost, and never counted as a full
// map.
func TestTrackingDeferredWhenStatsRefused(t *testing.T) {
	trackTreeDeferred(t, Config{Trace: true, FlightPerCPU: 64, TestStatsNoMem: 4})
}

// trackTreeDeferred launches a shell with 6 children under cfg, whose
// first 4 trackings fail, and checks that all 7 are tracked.
func trackTreeDeferred(t *testing.T, cfg Config) {
	t.Helper()
	e := liveEngine(t, cfg)
	l, err := target.Launch([]string{"sh", "-c", "for i in 1 2 3 4 5 6; do sleep 0.05 & done; wait"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := uint32(l.Pid)
	if err := e.WantTID(pid, 0, FlagFollow); err != nil {
		t.Fatal(err)
	}
	if err := e.Scan(); err != nil {
		t.Fatal(err)
	}
	e.ForgetTID(pid)
	if err := l.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := l.Cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	all, err := e.AllStats()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, s := range all {
		names[CommString(s.Comm)]++
	}
	c := e.Counters()
	if names["sh"] != 1 || names["sleep"] != 6 || c[CounterTrackDeferred] != 4 || c[CounterStorageFail] != 0 || c[CounterStatsFull] != 0 {
		t.Errorf("tracked %v (want sh 1, sleep 6); deferred %d (want 4), lost %d and %d (storage, stats map full; want 0)",
			names, c[CounterTrackDeferred], c[CounterStorageFail], c[CounterStatsFull])
	}
}
