package scenario

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

// Scenarios of inter-processor interrupts (issue 38 item 5): work another
// CPU sends to a real-time loop's CPU.

// ipiBuiltins is the catalogue of the IPI scenarios.
var ipiBuiltins = []*Scenario{
	{
		Name:    "ipi-storm",
		Summary: "TLB shootdowns sent to a real-time loop by another thread of its process",
		Description: "A control loop ('control', SCHED_FIFO 80, 1 ms period, 0.8 ms of work reading a shared page) runs on the " +
			"scenario's CPU. Another thread of the same process ('intruder', SCHED_FIFO 1, another CPU) write-protects and " +
			"unprotects that page in a loop (mprotect). Each protection change must flush the page from every CPU that runs " +
			"the process's memory map: while the loop runs, its CPU receives a TLB-shootdown IPI for each one, thousands a " +
			"second (/proc/interrupts TLB). With --ipi, rtscope attributes each IPI to the intruder, with its kind and work " +
			"(flush_tlb_func), in the windows, the verdicts and the counts per CPU and task.",
		threads: []string{"control", "intruder"},
		Params: []Param{
			dur("period", "control loop period", 1*ms, 200*us, 1000*ms),
			dur("work", "control loop work per cycle (the CPU runs the process's memory map only while it works)", 800*us, 1*us, 900*ms),
			dur("gap", "intruder's pause between two protection changes", 20*us, 0, 100*ms),
			prio("prio", "the control loop", 80),
			// FIFO, if only 1: a SCHED_OTHER intruder on a loaded machine
			// made a tenth of its changes (1118 shootdowns in 3 s, against
			// 9866 on a quieter one).
			prio("intruder-prio", "the intruder", 1),
		},
		check: fits("work", "period"),
		run:   runIPIStorm,
	},
}

func init() {
	for _, s := range ipiBuiltins {
		register(s)
	}
}

func runIPIStorm(e *env) error {
	page, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mapping the shared page: %w", err)
	}
	page[0] = 1 // present: a protection change has a PTE to flush
	e.after = append(e.after, func() { _ = unix.Munmap(page) })
	work, gap := e.v.D("work"), e.v.D("gap")
	changes := &workload.Stat{}
	e.res.Stats["protection change pair"] = changes
	if _, err := e.g.Go(workload.Spec{Name: "intruder", CPU: e.other, Policy: workload.FIFO, Priority: e.v.I("intruder-prio")}, func(t *workload.Thread) {
		for !t.Stopping() {
			start := workload.Now()
			_ = unix.Mprotect(page, unix.PROT_READ)
			_ = unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE)
			changes.Add(workload.Now() - start)
			if gap > 0 {
				t.Sleep(gap)
			}
		}
	}); err != nil {
		return err
	}
	var sink byte
	return e.loop(e.fifo("control", e.v.I("prio")), e.v.D("period"), 0, func(t *workload.Thread) {
		sink += page[0] // its CPU has the page in its TLB
		t.Work(work)
	})
}
