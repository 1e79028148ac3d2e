package main

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// floorHooks are the tracepoints rtscope's engine attaches to on a kernel
// that refuses fentry/fexit (as this one does): the floor attaches an empty
// program to each, so it pays exactly the dispatch and statistics cost of a
// BPF program on the same events, and nothing else.
var floorHooks = []string{
	"sched_switch", "sched_waking", "sched_migrate_task", "sched_process_fork",
	"sched_process_exec", "sched_process_exit", "task_rename", "hrtimer_start",
	"hrtimer_expire_entry", "hrtimer_expire_exit", "irq_handler_entry", "irq_handler_exit",
	"softirq_entry", "softirq_exit", "rseq_update",
}

// clockFloorName names the clock floor's configuration in every phase.
const clockFloorName = "clock floor (empty programs reading the clock once, same hooks)"

// isFloor says whether a configuration is one of the floors (no rtscope).
func isFloor(name string) bool {
	return strings.HasPrefix(name, "floor") || strings.HasPrefix(name, "clock floor")
}

// Floor is a set of attached empty tp_btf programs ("return 0"), or with
// clock, programs that read CLOCK_MONOTONIC once and return.
type Floor struct {
	progs []*ebpf.Program
	links []link.Link
	IDs   map[uint32]bool
}

// NewFloor loads and attaches the empty programs (built with the asm
// package: two instructions, no C, no maps). With clock, each first calls
// bpf_ktime_get_ns: the clock floor, what any monitor that timestamps
// every event with CLOCK_MONOTONIC (rtscope's flight recorder, whose
// events are set against timer expiries) pays on each hook before its
// work. On this VM the read is 36-63 ns, as much as the dispatch
// (bench/results/2026-11-27-2cpu-amd-epyc-hotpath-breakdown.md).
func NewFloor(clock bool) (*Floor, error) {
	f := &Floor{IDs: map[uint32]bool{}}
	name, insns := "floor_", asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	if clock {
		name, insns = "clock_", append(asm.Instructions{asm.FnKtimeGetNs.Call()}, insns...)
	}
	for _, h := range floorHooks {
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:         name + trunc(h, 9),
			Type:         ebpf.Tracing,
			AttachType:   ebpf.AttachTraceRawTp,
			AttachTo:     h,
			Instructions: insns,
			License:      "GPL",
		})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("floor program on %s: %w", h, err)
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			p.Close()
			f.Close()
			return nil, fmt.Errorf("attaching the floor program on %s: %w", h, err)
		}
		f.progs = append(f.progs, p)
		f.links = append(f.links, l)
		if info, err := p.Info(); err == nil {
			if id, ok := info.ID(); ok {
				f.IDs[uint32(id)] = true
			}
		}
	}
	return f, nil
}

func (f *Floor) Close() {
	for _, l := range f.links {
		l.Close()
	}
	for _, p := range f.progs {
		p.Close()
	}
	f.links, f.progs = nil, nil
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
