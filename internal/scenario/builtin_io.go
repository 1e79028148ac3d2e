package scenario

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

// Scenarios of memory and I/O blocking inside a control loop (issue 15):
// what the loop waits for is in the kernel, not in the scheduler.

const pageSize = 4096

// ioBuiltins is the catalogue of the memory and I/O scenarios, listed after
// the scheduling ones (builtins).
var ioBuiltins = []*Scenario{
	{
		Name:    "page-faults",
		Summary: "a control loop that touches fresh memory every cycle, memory not locked",
		Description: "A control loop ('control', SCHED_FIFO 80, 2 ms period) gives back a 1 MiB buffer " +
			"(madvise MADV_DONTNEED) and writes one byte in each of its 256 pages every cycle, then does 0.2 ms " +
			"of work. Each touch is a minor page fault (the kernel zeroes a fresh page), about 256 a cycle, and " +
			"the process does not call mlockall (the other scenarios do): a real-time loop should lock and pre-fault its memory at start. " +
			"rtscope counts the faults of every run in the kernel and says in each window how many the loop took.",
		threads: []string{"control"},
		Params: []Param{
			dur("period", "control loop period", 2*ms, 500*us, 1000*ms),
			dur("work", "work per cycle after the touches", 200*us, 1*us, 900*ms),
			{Name: "pages", Help: "fresh pages touched per cycle", Kind: Int, Default: 256, Min: 1, Max: 16384},
			prio("prio", "the control loop", 80),
		},
		check:          fits("work", "period"),
		run:            runPageFaults,
		unlockedMemory: true,
	},
	{
		Name:    "pipe-write",
		Summary: "a control loop blocked in a pipe write by a slow reader",
		Description: "A control loop ('writer', SCHED_FIFO 80, 2 ms period, 0.1 ms work) writes 4 KiB into a pipe " +
			"of 4 KiB every cycle. A reader thread ('reader', SCHED_FIFO 1, another CPU) empties it every 3 ms. " +
			"When the reader is late the pipe is full and the writer blocks in the kernel's pipe_write until " +
			"the reader frees space: its response time grows by the wait, and rtscope names the sleep " +
			"(a pipe write, woken by the reader) at every occurrence, not only when a stack was sampled.",
		threads: []string{"writer", "reader"},
		Params: []Param{
			dur("period", "writer period", 2*ms, 500*us, 1000*ms),
			dur("work", "writer work per cycle", 100*us, 1*us, 900*ms),
			dur("read-every", "interval of the reader's reads", 3*ms, 100*us, 10000*ms),
			prio("prio", "the writer", 80),
		},
		check: fits("work", "period"),
		run:   runPipeWrite,
	},
}

func init() {
	for _, s := range ioBuiltins {
		register(s)
	}
}

func runPageFaults(e *env) error {
	pages := int(e.v["pages"])
	buf, err := unix.Mmap(-1, 0, pages*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mapping %d pages: %w", pages, err)
	}
	e.after = append(e.after, func() { _ = unix.Munmap(buf) })
	work := e.v.D("work")
	touch := &workload.Stat{}
	e.res.Stats["fresh-page touches"] = touch // time to fault the pages in, per cycle
	return e.loop(e.fifo("control", e.v.I("prio")), e.v.D("period"), 0, func(t *workload.Thread) {
		start := workload.Now()
		// The pages go back to the kernel: the next touch of each faults.
		_ = unix.Madvise(buf, unix.MADV_DONTNEED)
		for i := 0; i < len(buf); i += pageSize {
			buf[i] = 1
		}
		touch.Add(workload.Now() - start)
		t.Work(work)
	})
}

func runPipeWrite(e *env) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("creating the pipe: %w", err)
	}
	r, w := p[0], p[1]
	e.after = append(e.after, func() { _ = unix.Close(r); _ = unix.Close(w) })
	// The smallest pipe, one page: one cycle's write fills it.
	if _, err := unix.FcntlInt(uintptr(w), unix.F_SETPIPE_SZ, pageSize); err != nil {
		return fmt.Errorf("sizing the pipe: %w", err)
	}
	// The reader never blocks (it polls every read-every): it keeps reading
	// until the writer returned, so no write is left blocked at the end.
	if err := unix.SetNonblock(r, true); err != nil {
		return fmt.Errorf("pipe read end: %w", err)
	}
	var done atomic.Bool
	every := e.v.D("read-every")
	rbuf := make([]byte, pageSize)
	if _, err := e.g.Go(workload.Spec{Name: "reader", CPU: e.other, Policy: workload.FIFO, Priority: 1}, func(t *workload.Thread) {
		for !done.Load() {
			t.Sleep(every)
			_, _ = unix.Read(r, rbuf)
		}
	}); err != nil {
		return err
	}
	work, period := e.v.D("work"), e.v.D("period")
	wbuf := make([]byte, pageSize)
	blocked := &workload.Stat{}
	e.res.Stats["pipe write"] = blocked
	pd := workload.NewPeriodic(e.base, period)
	e.res.Loops["writer"] = &pd.Stats
	if _, err := e.g.Go(e.fifo("writer", e.v.I("prio")), func(t *workload.Thread) {
		defer done.Store(true)
		for {
			pd.Wait(t)
			if t.Stopping() {
				return
			}
			t.Work(work)
			start := workload.Now()
			_, _ = unix.Write(w, wbuf)
			blocked.Add(workload.Now() - start)
		}
	}); err != nil {
		done.Store(true)
		return err
	}
	return nil
}
