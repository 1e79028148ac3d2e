package scenario

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

// Scenarios of work sent to an isolated CPU (issue 40 item 3).

// membarrier(2) commands (include/uapi/linux/membarrier.h).
const (
	membarrierPrivateExpedited         = 1 << 3
	membarrierRegisterPrivateExpedited = 1 << 4
)

// remoteBuiltins is the catalogue of the remote-work scenarios.
var remoteBuiltins = []*Scenario{
	{
		Name:    "remote-work",
		Summary: "function calls and per-CPU work sent to a real-time loop's CPU by another thread of its process",
		Description: "A control loop ('control', SCHED_FIFO 80, 1 ms period, 0.8 ms of work) runs on the scenario's CPU. " +
			"Another thread of the same process ('intruder', SCHED_FIFO 1, another CPU) calls " +
			"membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) in a loop: the kernel runs a function (ipi_mb) on every CPU " +
			"that runs the process's memory map, by a function-call IPI (/proc/interrupts CAL), thousands a second " +
			"while the loop runs. A third thread ('refresher', SCHED_OTHER, another CPU) writes /proc/sys/vm/stat_refresh " +
			"every --refresh, which queues a work item (refresh_vm_stats) onto every online CPU and waits for them: " +
			"the loop's CPU runs a kworker in its idle time. rtscope isolation -c CPU names the intruder and the " +
			"refresher as the senders, with the function.",
		threads: []string{"control", "intruder", "refresher"},
		Params: []Param{
			dur("period", "control loop period", 1*ms, 200*us, 1000*ms),
			dur("work", "control loop work per cycle (the CPU runs the process's memory map only while it works)", 800*us, 1*us, 900*ms),
			dur("gap", "intruder's pause between two membarrier calls", 20*us, 0, 100*ms),
			dur("refresh", "refresher's pause between two writes to /proc/sys/vm/stat_refresh (0: none)", 10*ms, 0, 1000*ms),
			prio("prio", "the control loop", 80),
			prio("intruder-prio", "the intruder", 1),
		},
		check: fits("work", "period"),
		run:   runRemoteWork,
	},
}

func init() {
	for _, s := range remoteBuiltins {
		register(s)
	}
}

// membarrier is the system call (x/sys/unix has no wrapper).
func membarrier(cmd int) error {
	if _, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, uintptr(cmd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

func runRemoteWork(e *env) error {
	// Private expedited membarrier needs the process registered first (4.14+).
	if err := membarrier(membarrierRegisterPrivateExpedited); err != nil {
		return fmt.Errorf("membarrier register (CONFIG_MEMBARRIER): %w", err)
	}
	gap, refresh := e.v.D("gap"), e.v.D("refresh")
	calls, refreshes := &workload.Stat{}, &workload.Stat{}
	e.res.Stats["membarrier call"] = calls
	e.res.Stats["stat_refresh write"] = refreshes
	if _, err := e.g.Go(workload.Spec{Name: "intruder", CPU: e.other, Policy: workload.FIFO, Priority: e.v.I("intruder-prio")}, func(t *workload.Thread) {
		for !t.Stopping() {
			start := workload.Now()
			_ = membarrier(membarrierPrivateExpedited)
			calls.Add(workload.Now() - start)
			if gap > 0 {
				t.Sleep(gap)
			}
		}
	}); err != nil {
		return err
	}
	// A thread of its own: a write waits for a kworker on every CPU (130
	// ms a write on a loaded machine), which would slow the calls down.
	if refresh > 0 {
		if _, err := e.g.Go(workload.Spec{Name: "refresher", CPU: e.other}, func(t *workload.Thread) {
			for !t.Stopping() {
				start := workload.Now()
				if err := os.WriteFile("/proc/sys/vm/stat_refresh", []byte("1"), 0); err != nil {
					return // not root: no queued work, the IPIs go on
				}
				refreshes.Add(workload.Now() - start)
				t.Sleep(refresh)
			}
		}); err != nil {
			return err
		}
	}
	return e.loop(e.fifo("control", e.v.I("prio")), e.v.D("period"), 0, func(t *workload.Thread) { t.Work(e.v.D("work")) })
}
