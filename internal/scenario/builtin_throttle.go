package scenario

import (
	"time"

	"github.com/rtscope/rtscope/internal/workload"
)

// Scenarios of RT throttling (issue 38): real-time tasks that take a CPU
// for more than 95% of a second lose it to SCHED_OTHER tasks, by the fair
// server (Linux 6.12+) or rt_rq throttling (sched_rt_runtime_us).

// throttleBuiltins is the catalogue of the throttling scenarios.
var throttleBuiltins = []*Scenario{
	{
		Name:    "rt-throttling",
		Summary: "a FIFO hog and a control loop take a CPU; throttling gives a SCHED_OTHER task 50 ms a second",
		Description: "A control loop ('control', SCHED_FIFO 80, 1 ms period, 0.1 ms work) and a hog ('hog', " +
			"SCHED_FIFO 70) that never sleeps share a CPU with a SCHED_OTHER thread ('starved') that wants it " +
			"too. Together the real-time tasks would run 100% of the CPU: the kernel throttles them, the fair " +
			"server (6.12+, 50 ms of every 1000 ms by default) or rt_rq throttling (sched_rt_runtime_us " +
			"950000 of 1000000) gives 'starved' the CPU for about 50 ms each second, and every wakeup of the " +
			"control loop that falls into it waits until it ends. rtscope names each such wait RT throttling, " +
			"and counts the hog's throttled intervals. Run it for a few seconds: throttling comes once a second.",
		threads: []string{"control", "hog", "starved"},
		Params: []Param{
			dur("period", "control loop period", 1*ms, 200*us, 100*ms),
			dur("work", "control loop work per cycle", 100*us, 1*us, 50*ms),
			prio("prio", "the control loop", 80),
			prio("hog-prio", "the hog", 70),
		},
		check: fits("work", "period"),
		run:   runRTThrottling,
	},
}

func init() {
	for _, s := range throttleBuiltins {
		register(s)
	}
}

// throttleSpin is how long the hog and the starved thread spin between
// checks of the stop: short enough to stop promptly.
const throttleSpin = 10 * time.Millisecond

func runRTThrottling(e *env) error {
	work := e.v.D("work")
	if err := e.loop(e.fifo("control", e.v.I("prio")), e.v.D("period"), 0, func(t *workload.Thread) { t.Work(work) }); err != nil {
		return err
	}
	spin := func(t *workload.Thread) {
		for !t.Stopping() {
			t.Spin(throttleSpin)
		}
	}
	// The starved thread first, so that it is queued when the hog starts.
	if _, err := e.g.Go(workload.Spec{Name: "starved", CPU: e.cpu, Policy: workload.Other}, spin); err != nil {
		return err
	}
	_, err := e.g.Go(e.fifo("hog", e.v.I("hog-prio")), spin)
	return err
}
