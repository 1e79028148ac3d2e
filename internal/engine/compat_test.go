package engine

import (
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// TestWithoutPercpuLookup: on a kernel without bpf_map_lookup_percpu_elem
// (before 5.19) the engine still loads, says what it cannot do, and the
// helper's calls are dead code that the verifier removes (so an older
// verifier, which never checks unreachable code, accepts the programs).
// Forced here on a kernel that has the helper: the loaded programs that mark
// waiting tasks lose their per-CPU lookups and get shorter; none grows.
func TestWithoutPercpuLookup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	sizes := func(cfg Config) (map[string]int, *Engine) {
		t.Helper()
		e, err := Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		sw := e.core.Programs["on_sched_switch"]
		if e.Features.LegacySwitch {
			sw = e.core.Programs["on_sched_switch_legacy"]
		}
		for name, p := range map[string]*ebpf.Program{"on_sched_waking": e.core.Programs["on_sched_waking"],
			"on_sched_migrate": e.core.Programs["on_sched_migrate"], "on_sched_switch": sw} {
			info, err := p.Info()
			if err != nil {
				t.Fatal(err)
			}
			insns, err := info.Instructions()
			if err != nil {
				t.Fatalf("%s: reading the loaded instructions: %v", name, err)
			}
			out[name] = len(insns)
		}
		return out, e
	}
	cfg := Config{Trace: true, SleepStacks: true, FlightPerCPU: 64}
	with, e := sizes(cfg)
	if e.Features.WaiterStacks != nil {
		t.Errorf("this kernel has bpf_map_lookup_percpu_elem, yet: %v", e.Features.WaiterStacks)
	}
	e.Close()
	cfg.TestNoPercpuLookup = true
	without, e := sizes(cfg)
	defer e.Close()
	if err := e.Features.WaiterStacks; err == nil || !strings.Contains(err.Error(), "5.19") {
		t.Errorf("features.waiter_stacks %v: want the missing helper and its kernel named", err)
	}
	if err := e.Attach(); err != nil {
		t.Fatalf("attaching without the helper: %v", err)
	}
	t.Logf("loaded instructions with the helper %v, without %v", with, without)
	shrunk := 0
	for name, n := range with {
		switch {
		case without[name] > n:
			t.Errorf("%s: %d instructions without the helper, %d with it", name, without[name], n)
		case without[name] < n:
			shrunk++
		}
	}
	if shrunk == 0 {
		t.Errorf("no program lost its per-CPU lookups: %v with the helper, %v without", with, without)
	}
}
