package engine

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/metric"
)

// TestReapplySLO: on both engines, reapply_slo loads on this kernel and
// gives changed bounds (the run-time default, one tid's) to the tasks
// tracked already: here the threads of the test process, tracked by a scan
// (nothing is attached). Without bpf_for_each_map_elem (simulated) the
// engine still loads and says why in one sentence.
func TestReapplySLO(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	var def [metric.Count]uint64
	def[metric.Latency] = 100_000
	for _, kind := range []string{EngineBTF, EngineClassic} {
		e, err := Load(Config{FlightPerCPU: 64, Engine: kind, SLODefault: def})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if e.Features.SLOReapply != nil {
			e.Close()
			t.Fatalf("%s: reapply_slo does not load on this kernel: %v", kind, e.Features.SLOReapply)
		}
		if err := e.WantTGID(uint32(os.Getpid()), 0); err != nil {
			t.Fatal(err)
		}
		if err := e.Scan(); err != nil {
			t.Fatal(err)
		}
		// One thread other than the main one gets bounds of its own.
		tracked, err := e.AllStats()
		if err != nil {
			t.Fatal(err)
		}
		var self uint32
		for _, s := range tracked {
			if s.Tid != s.Pid {
				self = s.Tid
			}
		}
		if self == 0 {
			t.Fatalf("%s: no thread but the main one tracked (%d tasks)", kind, len(tracked))
		}
		var nd, mine [metric.Count]uint64
		nd[metric.Latency], mine[metric.Latency] = 1_000_000, 50_000
		if err := e.SetSLODefault(nd); err != nil {
			t.Fatal(err)
		}
		if err := e.SetSLO(self, mine); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n, err := e.ReapplySLO()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		all, err := e.AllStats()
		if err != nil {
			t.Fatal(err)
		}
		if n != len(all) || n < 2 {
			t.Errorf("%s: reapply visited %d tasks, %d tracked (want the same, at least 2)", kind, n, len(all))
		}
		for _, s := range all {
			want := nd[metric.Latency]
			if s.Tid == self {
				want = mine[metric.Latency]
			}
			if got := s.M[metric.Latency].Slo; got != want {
				t.Errorf("%s: tid %d latency SLO %d, want %d", kind, s.Tid, got, want)
			}
		}
		t.Logf("%s: reapply over %d tasks took %v", kind, n, took)
		e.Close()
	}
	e, err := Load(Config{FlightPerCPU: 64, TestNoReapply: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.ReapplySLO()
	if err == nil || err != e.Features.SLOReapply || strings.Count(err.Error(), ". ") != 0 || !strings.Contains(err.Error(), "5.13") {
		t.Errorf("without bpf_for_each_map_elem: %v, want Features.SLOReapply, one sentence naming Linux 5.13", err)
	}
}
