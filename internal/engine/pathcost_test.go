package engine

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/rtscope/rtscope/internal/metric"
)

// pathParts names test_path_cost's variants (rtscope_test.bpf.c).
var pathParts = [8]string{"empty", "clock", "stats", "flight", "wakeup", "sleep", "switch", "noise"}

// trackedPathCost runs test_path_cost through steps of a ping-pong of two
// tracked tasks on CPU 0 (a wakeup, a sleep, a switch, 10 us apart), in 9
// rounds of `steps`; each part's median over the rounds, ns a run, the
// empty part's (two clock reads and the accumulation) not taken off.
func trackedPathCost(tb testing.TB, steps int) [8]float64 {
	spec, err := loadTwinVariant()
	if err != nil {
		tb.Fatal(err)
	}
	var bounds [metric.Count]uint64
	for name, v := range map[string]any{"slo_default": bounds, "trace_enabled": true} {
		if err := spec.Variables[name].Set(v); err != nil {
			tb.Fatal(err)
		}
	}
	var objs twinObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		tb.Fatalf("loading twins: %v", err)
	}
	defer objs.Close()
	run := func(p *ebpf.Program, args ...uint64) {
		if ret, err := p.Run(&ebpf.RunOptions{Context: args, CPU: 0, Flags: 1 /* BPF_F_TEST_RUN_ON_CPU */}); err != nil || ret != 0 {
			tb.Fatalf("test run: %d, %v", int32(ret), err)
		}
	}
	run(objs.TestTrack, 100, 100, 0, 0) // a, running
	run(objs.TestTrack, 101, 100, 1, 0) // b, sleeping
	a, b, now := uint64(100), uint64(101), uint64(1_000_000_000)
	rounds := make([][]float64, 8)
	for range 9 {
		var zero [8]uint64
		if err := objs.TestPathNs.Set(zero); err != nil {
			tb.Fatal(err)
		}
		for range steps {
			now += 10_000
			for _, v := range []uint64{0, 1, 2, 3, 4, 5, 6, 7} {
				run(objs.TestPathCost, v, a, b, now)
			}
			a, b = b, a
		}
		var ns [8]uint64
		if err := objs.TestPathNs.Get(&ns); err != nil {
			tb.Fatal(err)
		}
		for v := range ns {
			rounds[v] = append(rounds[v], float64(ns[v])/float64(steps))
		}
	}
	var out [8]float64
	for v := range out {
		out[v] = median(rounds[v])
	}
	return out
}

// BenchmarkTrackedPathCost reports what each part of a tracked task's
// switch and wakeup costs (test_path_cost, BPF_PROG_TEST_RUN on the twins:
// tasks in a hash, not task storage), above the empty part: `go test -run X
// -bench TrackedPathCost -benchtime 2000x ./internal/engine/`.
func BenchmarkTrackedPathCost(b *testing.B) {
	c := trackedPathCost(b, max(b.N, 200))
	for v := 1; v < len(c); v++ {
		b.ReportMetric(c[v]-c[0], "ns/"+pathParts[v])
	}
	b.Logf("empty %.0f ns; above it: clock %.0f, stats %.0f, flight %.0f, wakeup %.0f, sleep %.0f, switch %.0f, noise %.0f",
		c[0], c[1]-c[0], c[2]-c[0], c[3]-c[0], c[4]-c[0], c[5]-c[0], c[6]-c[0], c[7]-c[0])
}

// TestTrackedPathCostRuns checks that the ping-pong the benchmark times
// works: every part runs and takes time, the switch's task logic more than
// the statistics lookup it includes.
func TestTrackedPathCostRuns(t *testing.T) {
	c := trackedPathCost(t, 50)
	for v, ns := range c {
		if ns <= 0 {
			t.Errorf("%s: %.1f ns a run", pathParts[v], ns)
		}
	}
	if c[6] <= c[2] {
		t.Errorf("switch %.1f ns, not above the stats lookup's %.1f", c[6], c[2])
	}
}
