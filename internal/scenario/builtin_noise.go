package scenario

import (
	"fmt"

	"github.com/rtscope/rtscope/internal/inject"
	"github.com/rtscope/rtscope/internal/workload"
)

// Scenarios of a thread that never sleeps (issue 38): a busy-polling loop
// has no wakeups to measure; what it suffers is noise, every interval its
// CPU did something else.

// pollGapMin is the shortest gap of the poller's loop it counts as its own
// measure of noise (its "gaps" statistic).
const pollGapMin = 20 * us

// noiseBuiltins is the catalogue of the noise scenarios.
var noiseBuiltins = []*Scenario{
	{
		Name:     "busy-poll-noise",
		Summary:  "a pinned busy-polling thread disturbed by hard-IRQ spins and a preempting RT thread",
		Injector: "BPF on hrtimer_expire_entry: spins in the timer interrupt; and a periodic SCHED_FIFO thread",
		Description: "A polling thread ('poller', SCHED_FIFO 50) spins on its CPU reading the clock and never sleeps, " +
			"like a DPDK or oslat loop; it records each gap of its own loop over 20 us (its 'gaps' statistic). " +
			"An injector thread ('irq-inject', SCHED_FIFO 60) sleeps on an absolute-time timer every 100 ms, and a " +
			"BPF program on hrtimer_expire_entry busy-waits 3000 us in that timer's hard-IRQ interrupt, interrupts off. " +
			"A preempting thread ('preempter', SCHED_FIFO 70) wakes every 10 ms and works 200 us. rtscope's noise " +
			"metric gives the poller one interval per disturbance: about 3 ms named as the timer interrupt, and 200 us " +
			"named as preemption by the preempter. Spins above 3000 us or more often than every 100 ms need --force.",
		threads: []string{"poller", "irq-inject", "preempter"},
		Params: []Param{
			{Name: "spin", Help: "busy-wait per injection in the timer interrupt", Kind: Duration, Default: 3 * ms, Min: 1 * us, Max: int64(inject.MaxSpin), Guard: GuardAbove},
			{Name: "every", Help: "interval between injections", Kind: Duration, Default: 100 * ms, Min: 1 * ms, Max: 10000 * ms, Guard: GuardBelow},
			dur("preempt-work", "the preempter's work per activation", 200*us, 1*us, 900*ms),
			dur("preempt-every", "the preempter's period", 10*ms, 500*us, 1000*ms),
			prio("prio", "the poller", 50),
		},
		check: checks(duty("spin", "every"), fits("preempt-work", "preempt-every")),
		run:   runBusyPollNoise,
	},
}

// duty bounds a disturbance's duty cycle (injection without the victim's
// phase: the poller has no deadlines to hit).
func duty(size, every string) func(Values) error {
	return func(v Values) error {
		if d := float64(v[size]) / float64(v[every]); d > MaxDuty {
			return fmt.Errorf("--%s %s every --%s %s is a %.0f%% duty cycle, above the %.0f%% maximum", size, Us(v[size]), every, Us(v[every]), d*100, MaxDuty*100)
		}
		return nil
	}
}

func init() {
	for _, s := range noiseBuiltins {
		register(s)
	}
}

// runBusyPollNoise starts the poller, the preempter and the injector
// thread whose timer the BPF program spins in.
func runBusyPollNoise(e *env) error {
	gaps := &workload.Stat{}
	e.res.Stats["gaps"] = gaps // the poller's own measure: each gap of its loop over pollGapMin
	if _, err := e.g.Go(e.fifo("poller", e.v.I("prio")), func(t *workload.Thread) { poll(t, gaps) }); err != nil {
		return err
	}
	work := e.v.D("preempt-work")
	if err := e.loop(e.fifo("preempter", 70), e.v.D("preempt-every"), lead, func(t *workload.Thread) { t.Work(work) }); err != nil {
		return err
	}
	// Above the poller: it must run to re-arm its timer.
	return e.irqInjector(60)
}

// poll is the busy loop: it reads the clock until told to stop, and adds
// each gap between two readings over pollGapMin to gaps.
func poll(t *workload.Thread, gaps *workload.Stat) {
	prev := workload.Now()
	for i := 0; ; i++ {
		now := workload.Now()
		if d := now - prev; d > pollGapMin {
			gaps.Add(d)
		}
		prev = now
		if i&1023 == 0 && t.Stopping() {
			return
		}
	}
}
