package engine

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/cilium/ebpf"
)

// programs lists every loaded program of the engine: the task iterator,
// the core collection's hooks and the optional collections' (the one list
// MemoryBytes and ProgramStats use; Attach reads the collections too).
func (e *Engine) programs() []*ebpf.Program {
	var out []*ebpf.Program
	if e.objs.TrackExisting != nil {
		out = append(out, e.objs.TrackExisting)
	}
	if e.objs.UntrackExisting != nil {
		out = append(out, e.objs.UntrackExisting)
	}
	if e.objs.SettleHeld != nil {
		out = append(out, e.objs.SettleHeld)
	}
	for _, c := range e.collections() {
		for _, p := range c.Programs {
			out = append(out, p)
		}
	}
	if e.reapply != nil {
		out = append(out, e.reapply.Programs["reapply_slo"])
		if p := e.reapply.Programs["settle_held"]; p != nil {
			out = append(out, p)
		}
	}
	return out
}

// collections returns the core collection, then the optional ones.
func (e *Engine) collections() []*ebpf.Collection {
	if e.core == nil {
		return e.optional
	}
	return append([]*ebpf.Collection{e.core}, e.optional...)
}

// loadedMaps lists the engine's maps: those Assign took (bpfMaps, read by
// reflection so that a new map needs no edit here) and any left in the
// collections (their .rodata/.bss); shared maps appear more than once.
func (e *Engine) loadedMaps() []*ebpf.Map {
	var out []*ebpf.Map
	rv := reflect.ValueOf(&e.objs.bpfMaps).Elem()
	for i := 0; i < rv.NumField(); i++ {
		if m, ok := rv.Field(i).Interface().(*ebpf.Map); ok && m != nil {
			out = append(out, m)
		}
	}
	for _, c := range e.collections() {
		for _, m := range c.Maps {
			out = append(out, m)
		}
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
