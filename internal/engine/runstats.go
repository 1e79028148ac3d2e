package engine

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
)

// programs lists every loaded program of the engine, the optional
// collections' included: the one list MemoryBytes and ProgramStats use.
func (e *Engine) programs() []*ebpf.Program {
	var out []*ebpf.Program
	for _, p := range []*ebpf.Program{e.switchProg, e.objs.OnSchedWaking, e.objs.OnSchedMigrate, e.objs.OnSchedFork,
		e.objs.OnSchedExec, e.objs.OnSchedExit, e.objs.OnTaskRename, e.objs.OnHrtimerStart, e.objs.OnHrtimerExpireEntry,
		e.objs.OnHrtimerExpireExit, e.objs.OnIrqEntry, e.objs.OnIrqExit, e.objs.OnSoftirqEntry, e.objs.OnSoftirqExit,
		e.objs.TrackExisting} {
		if p != nil {
			out = append(out, p)
		}
	}
	for _, c := range e.optional {
		for _, p := range c.Programs {
			out = append(out, p)
		}
	}
	if e.reapply != nil {
		out = append(out, e.reapply.Programs["reapply_slo"])
	}
	return out
}

// RunStats is the kernel's accounting of the engine's programs, summed.
type RunStats struct {
	Runtime time.Duration // total run time
	Runs    uint64        // program runs
	// Misses: runs skipped because a BPF program already ran on the CPU
	// (recursion): those events were not seen.
	Misses uint64
}

// ProgramStats sums the run statistics of every engine program. The kernel
// counts run time and runs only while kernel.bpf_stats_enabled is 1 (it
// costs two clock reads per run), so enabled says whether Runtime and Runs
// mean anything; Misses are always counted.
func (e *Engine) ProgramStats() (st RunStats, enabled bool, err error) {
	for _, p := range e.programs() {
		ps, err := p.Stats()
		if err != nil {
			return st, false, fmt.Errorf("program stats: %w", err)
		}
		st.Runtime += ps.Runtime
		st.Runs += ps.RunCount
		st.Misses += ps.RecursionMisses
	}
	b, err := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled")
	return st, err == nil && strings.TrimSpace(string(b)) == "1", nil
}
