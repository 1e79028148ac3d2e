package scenario

import (
	"fmt"
	"time"

	"github.com/rtscope/rtscope/internal/inject"
	"github.com/rtscope/rtscope/internal/workload"
)

const (
	us = int64(time.Microsecond)
	ms = int64(time.Millisecond)
	// lead: a disturbance (burst, injected spin) starts this long before
	// the victim's deadline, so the victim's wakeup lands inside it and
	// its latency is about the disturbance's length.
	lead = 100 * time.Microsecond
)

func prio(name, who string, def int64) Param {
	return Param{Name: name, Help: "SCHED_FIFO priority of " + who, Kind: Int, Default: def, Min: 1, Max: 99}
}

func dur(name, help string, def, min, max int64) Param {
	return Param{Name: name, Help: help, Kind: Duration, Default: def, Min: min, Max: max}
}

func fits(workName, periodName string) func(Values) error {
	return func(v Values) error {
		if v[workName] >= v[periodName] {
			return fmt.Errorf("--%s %s must be shorter than --%s %s", workName, Us(v[workName]), periodName, Us(v[periodName]))
		}
		return nil
	}
}

func checks(fs ...func(Values) error) func(Values) error {
	return func(v Values) error {
		for _, f := range fs {
			if err := f(v); err != nil {
				return err
			}
		}
		return nil
	}
}

// victimParams are the periodic victim of the interference scenarios. It
// is a real-time load of its own: a higher priority, a shorter period or
// more work than the defaults needs --force, and its duty cycle stays
// within MaxDuty (victimFits).
func victimParams() []Param {
	p := prio("victim-prio", "the victim", 80)
	p.Guard = GuardAbove
	period := dur("victim-period", "period of the victim's loop", 1*ms, 100*us, 100*ms)
	period.Guard = GuardBelow
	work := dur("victim-work", "work per victim cycle", 100*us, 1*us, 50*ms)
	work.Guard = GuardAbove
	return []Param{p, period, work}
}

// victimFits bounds the victim's duty cycle, even with --force: a FIFO
// victim busy 99% of its CPU starves everything below it.
func victimFits(v Values) error {
	if d := float64(v["victim-work"]) / float64(v["victim-period"]); d > MaxDuty {
		return fmt.Errorf("--victim-work %s every --victim-period %s is a %.0f%% duty cycle, above the %.0f%% maximum",
			Us(v["victim-work"]), Us(v["victim-period"]), d*100, MaxDuty*100)
	}
	return nil
}

// injection checks the disturbance size against its interval: bounded duty
// cycle, and phased on the victim's deadlines.
func injection(size, every string) func(Values) error {
	return func(v Values) error {
		if d := float64(v[size]) / float64(v[every]); d > MaxDuty {
			return fmt.Errorf("--%s %s every --%s %s is a %.0f%% duty cycle, above the %.0f%% maximum", size, Us(v[size]), every, Us(v[every]), d*100, MaxDuty*100)
		}
		if v[every]%v["victim-period"] != 0 {
			return fmt.Errorf("--%s %s must be a multiple of --victim-period %s, so that every disturbance hits a victim wakeup", every, Us(v[every]), Us(v["victim-period"]))
		}
		return nil
	}
}

func (e *env) victim() error {
	work := e.v.D("victim-work")
	return e.loop(e.fifo("victim", e.v.I("victim-prio")), e.v.D("victim-period"), 0, func(t *workload.Thread) { t.Work(work) })
}

// builtins is the catalogue of the scheduling scenarios, in the order
// `scenario list` shows them; the memory and I/O ones follow
// (builtin_io.go). An entry is data: its run and checks are named functions.
var builtins = []*Scenario{
	{
		Name:    "healthy-loop",
		Summary: "a SCHED_FIFO control loop, absolute-time periodic: the baseline",
		Description: "A control loop ('control', SCHED_FIFO 80) wakes on an absolute-time periodic timer every 2 ms " +
			"and does 0.5 ms of work (CPU time). Nothing disturbs it: its latency, response and cycle times are the " +
			"machine's baseline to compare the other scenarios with.",
		threads: []string{"control"},
		Params: []Param{
			dur("period", "control loop period", 2*ms, 100*us, 1000*ms),
			dur("work", "work per cycle", 500*us, 1*us, 900*ms),
			prio("prio", "the control loop", 80),
		},
		check: fits("work", "period"),
		run:   runHealthyLoop,
	},
	{
		Name:    "misconfigured-priority",
		Summary: "a control loop below a background task wrongly given a higher RT priority",
		Description: "The control loop ('control', SCHED_FIFO 80, 2 ms period, 0.5 ms work) shares its CPU with a " +
			"background task ('background', 10 ms period, 2 ms busy) wrongly set to SCHED_FIFO 90. Each burst " +
			"starts just before a control deadline, so the control loop's wakeup waits for the whole burst: a " +
			"wakeup latency of about 2 ms, with the FIFO 90 task running in the window (origin paper, case 6.1).",
		threads: []string{"control", "background"},
		Params: []Param{
			dur("period", "control loop period", 2*ms, 100*us, 1000*ms),
			dur("work", "control loop work per cycle", 500*us, 1*us, 900*ms),
			prio("prio", "the control loop", 80),
			dur("bg-period", "background task period", 10*ms, 1*ms, 10000*ms),
			dur("bg-work", "background burst per period", 2*ms, 1*us, 100*ms),
			prio("bg-prio", "the background task", 90),
		},
		check: checks(fits("work", "period"), fits("bg-work", "bg-period"), cpuShareFits),
		run:   runMisconfiguredPriority,
	},
	{
		Name:    "hidden-blocking",
		Summary: "a control loop that blocks on a semaphore inside its cycle",
		Description: "A control loop ('control', SCHED_FIFO 80, 5 ms period) does 1 ms of work, then waits on a " +
			"semaphore that a notifier thread ('notifier', SCHED_FIFO 1, same CPU) posts every 7 ms, then sleeps " +
			"until its next period. Its wakeup latency stays small and its response time (wake to first sleep) is " +
			"about 1 ms, but its cycle time (wake to the next period sleep) reaches several ms: the blocking is " +
			"inside the loop, not in the scheduler (origin paper, case 6.2).",
		threads: []string{"control", "notifier"},
		Params: []Param{
			dur("period", "control loop period", 5*ms, 100*us, 1000*ms),
			dur("work", "work before the semaphore wait", 1*ms, 1*us, 900*ms),
			prio("prio", "the control loop", 80),
			dur("post-every", "interval of the notifier's posts", 7*ms, 100*us, 10000*ms),
		},
		check: fits("work", "period"),
		run:   runHiddenBlocking,
	},
	{
		Name:    "event-driven-blocking",
		Summary: "an event-driven task woken through an eventfd, with an accidental semaphore wait",
		Description: "An event-driven task ('event', SCHED_FIFO 30) waits on an eventfd that a pinger thread " +
			"('pinger', SCHED_FIFO 50, another CPU) signals at random 0.5-5.5 ms intervals, and does 1 ms of work per " +
			"event received. After each batch of events it accidentally takes and releases a semaphore that a " +
			"blocker thread ('blocker', SCHED_FIFO 50, another CPU) holds for 3 ms every 7 ms. No timer sleeps: no " +
			"cycle time. Response time is about 1 ms, and longer after a semaphore wait, when events piled up " +
			"meanwhile (origin paper, case 6.3).",
		threads: []string{"event", "pinger", "blocker"},
		Params: []Param{
			prio("prio", "the event-driven task", 30),
			dur("work", "work per event", 1*ms, 1*us, 100*ms),
			dur("min-gap", "shortest interval between events", 500*us, 10*us, 10000*ms),
			dur("max-gap", "longest interval between events", 5500*us, 10*us, 10000*ms),
			dur("block-every", "interval at which the blocker takes the semaphore", 7*ms, 100*us, 10000*ms),
			dur("hold", "how long the blocker holds the semaphore", 3*ms, 1*us, 10000*ms),
			{Name: "seed", Help: "seed of the event intervals", Kind: Int, Default: 1, Min: 0, Max: 1 << 62},
		},
		check: checks(fits("hold", "block-every"), gapsOrdered),
		run:   runEventDriven,
	},
	{
		Name:    "priority-inversion",
		Summary: "H blocked on a mutex held by L while M runs (--pi: priority inheritance)",
		Description: "Three threads on one CPU: 'task-H' (SCHED_FIFO 90, 5 ms period, 1 ms work, then takes a mutex), " +
			"'task-L' (SCHED_FIFO 10, every 100 ms holds the mutex for 2 ms of work) and 'task-M' (SCHED_FIFO 50, " +
			"10 ms busy, 1 ms sleep, never touches the mutex). With a plain futex mutex, M preempts L while L holds " +
			"the mutex, and H waits for M's whole burst: H's cycle time reaches 11 ms and more. With --pi the mutex " +
			"is a priority-inheritance futex: L runs at H's priority until it unlocks, and H's cycle time stays near " +
			"1-3 ms (origin paper, case 6.4: 11 ms vs 1.9 ms). The load stays below the kernel's RT throttling " +
			"limit (95%), whose pauses would blur the comparison.",
		threads: []string{"task-H", "task-M", "task-L"},
		Params: []Param{
			{Name: "pi", Help: "use a priority-inheritance mutex", Kind: Bool},
			dur("h-period", "period of H", 5*ms, 1*ms, 1000*ms),
			dur("h-work", "work of H before taking the mutex", 1*ms, 1*us, 900*ms),
			dur("m-work", "busy time (wall clock) of M between sleeps", 10*ms, 1*us, 100*ms),
			dur("m-sleep", "sleep of M between bursts", 1*ms, 100*us, 1000*ms),
			dur("l-work", "work of L while holding the mutex", 2*ms, 1*us, 100*ms),
			dur("l-period", "period of L", 100*ms, 1*ms, 10000*ms),
			prio("h-prio", "H", 90),
			prio("m-prio", "M", 50),
			prio("l-prio", "L", 10),
		},
		check: checks(fits("h-work", "h-period"), fits("l-work", "l-period"), prioritiesOrdered),
		run:   runPriorityInversion,
	},
	{
		Name:    "rt-hog",
		Summary: "a SCHED_FIFO CPU hog above a periodic victim, in bursts",
		Description: "A hog ('hog', SCHED_FIFO 90) burns the CPU in bursts (3 ms every 20 ms) above a periodic " +
			"victim ('victim', SCHED_FIFO 80, 1 ms period, 0.1 ms work) on the same CPU. Each burst starts just " +
			"before a victim deadline: the victim's wakeup latency reaches about the burst, with the hog running " +
			"in the window. Bursts above the defaults need --force; the duty cycle never exceeds 50%.",
		threads: []string{"hog", "victim"},
		Params: append([]Param{
			{Name: "burst", Help: "hog burst length", Kind: Duration, Default: 3 * ms, Min: 1 * us, Max: 100 * ms, Guard: GuardAbove},
			{Name: "every", Help: "interval between bursts", Kind: Duration, Default: 20 * ms, Min: 1 * ms, Max: 10000 * ms, Guard: GuardBelow},
			prio("hog-prio", "the hog", 90),
		}, victimParams()...),
		check: checks(victimFits, injection("burst", "every")),
		run:   runRTHog,
	},
	{
		Name:     "irq-noise",
		Summary:  "busy-waits in hard-IRQ context (timer interrupt) on the victim's CPU",
		Injector: "BPF on hrtimer_expire_entry: spins in the timer interrupt, IRQs off",
		Description: "An injector thread ('irq-inject', SCHED_FIFO 1) sleeps on an absolute-time timer every 100 ms, " +
			"expiring 100 us before a deadline of a periodic victim ('victim', SCHED_FIFO 80, 1 ms period) on the " +
			"same CPU. A BPF program on the hrtimer_expire_entry tracepoint recognises that thread's timer " +
			"(hrtimer_wakeup for its tid) and busy-waits 3000 us right there, in the hard-IRQ timer interrupt " +
			"with interrupts off: the victim's timer interrupt is handled about 2.9 ms late. No kernel module. " +
			"Spins above 3000 us or more often than every 100 ms need --force; never above 20 ms or a 50% duty cycle.",
		threads: []string{"irq-inject", "victim"},
		Params: append([]Param{
			{Name: "spin", Help: "busy-wait per injection", Kind: Duration, Default: 3 * ms, Min: 1 * us, Max: int64(inject.MaxSpin), Guard: GuardAbove},
			{Name: "every", Help: "interval between injections", Kind: Duration, Default: 100 * ms, Min: 1 * ms, Max: 10000 * ms, Guard: GuardBelow},
		}, victimParams()...),
		check: checks(victimFits, injection("spin", "every")),
		run:   runIRQNoise,
	},
	{
		Name:     "preempt-off",
		Summary:  "holds the victim's CPU in kernel context with preemption disabled",
		Injector: "BPF_PROG_TEST_RUN of a raw_tp program: runs between get_cpu() and put_cpu(), preemption off, IRQs on",
		Description: "An injector thread ('preempt-inject', SCHED_OTHER) wakes every 100 ms, 100 us before a deadline " +
			"of a periodic victim ('victim', SCHED_FIFO 80, 1 ms period) on the same CPU, and runs a BPF program " +
			"through BPF_PROG_TEST_RUN that busy-waits 3000 us. The kernel runs it with preemption disabled and " +
			"interrupts enabled: the victim's timer fires on time and wakes it, but the victim runs only when the " +
			"spin ends, after a SCHED_OTHER task kept the CPU from a SCHED_FIFO one. No kernel module. Spins above " +
			"3000 us or more often than every 100 ms need --force; never above 20 ms or a 50% duty cycle.",
		threads: []string{"preempt-inject", "victim"},
		Params: append([]Param{
			{Name: "spin", Help: "non-preemptible busy-wait per injection", Kind: Duration, Default: 3 * ms, Min: 1 * us, Max: int64(inject.MaxSpin), Guard: GuardAbove},
			{Name: "every", Help: "interval between injections", Kind: Duration, Default: 100 * ms, Min: 1 * ms, Max: 10000 * ms, Guard: GuardBelow},
		}, victimParams()...),
		check: checks(victimFits, injection("spin", "every")),
		run:   runPreemptOff,
	},
	{
		Name:    "overrunning-loop",
		Summary: "a control loop whose work exceeds its period in bursts, and never sleeps through them",
		Description: "A control loop ('control', SCHED_FIFO 80) on an absolute-time 2 ms period does 3 ms of work in " +
			"4 iterations in a row, every 16 iterations, and 0.2 ms in the others. It never skips a deadline: an " +
			"iteration that ran past the next deadline arms it anyway, and clock_nanosleep(TIMER_ABSTIME) returns " +
			"at once without a sleep, until the light iterations have caught up: 6 missed deadlines in 16 " +
			"iterations, with no wakeup and no context switch between them. Its work, not the scheduler, misses " +
			"the deadlines. Heavier or more frequent overruns need --force; the duty cycle never exceeds 50%.",
		threads: []string{"control"},
		Params: []Param{
			{Name: "period", Help: "control loop period", Kind: Duration, Default: 2 * ms, Min: 500 * us, Max: 1000 * ms, Guard: GuardBelow},
			{Name: "work", Help: "work of an overrunning iteration (longer than the period)", Kind: Duration, Default: 3 * ms, Min: 1 * us, Max: 100 * ms, Guard: GuardAbove},
			{Name: "overruns", Help: "overrunning iterations in a row", Kind: Int, Default: 4, Min: 1, Max: 1000, Guard: GuardAbove},
			{Name: "every", Help: "iterations from one burst of overruns to the next", Kind: Int, Default: 16, Min: 2, Max: 10000, Guard: GuardBelow},
			dur("light", "work of the other iterations", 200*us, 1*us, 100*ms),
			prio("prio", "the control loop", 80),
		},
		check: overrunDuty,
		run:   runOverrunningLoop,
	},
}

func init() {
	for _, s := range builtins {
		register(s)
	}
}

// runHealthyLoop runs the control loop alone.
func runHealthyLoop(e *env) error {
	work := e.v.D("work")
	return e.loop(e.fifo("control", e.v.I("prio")), e.v.D("period"), 0, func(t *workload.Thread) { t.Work(work) })
}

// runMisconfiguredPriority runs the control loop and, above it, the
// background task whose bursts start just before a control deadline.
func runMisconfiguredPriority(e *env) error {
	work, bgWork := e.v.D("work"), e.v.D("bg-work")
	if err := e.loop(e.fifo("control", e.v.I("prio")), e.v.D("period"), 0, func(t *workload.Thread) { t.Work(work) }); err != nil {
		return err
	}
	bg := e.v.D("bg-period")
	return e.loop(e.fifo("background", e.v.I("bg-prio")), bg, bg-lead, func(t *workload.Thread) { t.Work(bgWork) })
}

// cpuShareFits keeps the control loop and the background task together
// below 90% of their CPU.
func cpuShareFits(v Values) error {
	if u := float64(v["work"])/float64(v["period"]) + float64(v["bg-work"])/float64(v["bg-period"]); u > 0.9 {
		return fmt.Errorf("--work %s every --period %s and --bg-work %s every --bg-period %s would use %.0f%% of the CPU, above 90%%",
			Us(v["work"]), Us(v["period"]), Us(v["bg-work"]), Us(v["bg-period"]), u*100)
	}
	return nil

}

// runHiddenBlocking runs the control loop that waits on the notifier's
// semaphore inside its cycle.
func runHiddenBlocking(e *env) error {
	var sem workload.Sem
	e.g.OnStop(sem.Close)
	work := e.v.D("work")
	if err := e.loop(e.fifo("control", e.v.I("prio")), e.v.D("period"), 0, func(t *workload.Thread) {
		t.Work(work)
		sem.Wait(t)
	}); err != nil {
		return err
	}
	// FIFO 1: below the loop, but its posts are not delayed by
	// whatever else the machine runs on that CPU.
	return e.loop(e.fifo("notifier", 1), e.v.D("post-every"), e.v.D("post-every"),
		func(t *workload.Thread) { sem.Post(t) })
}

// gapsOrdered checks that the shortest interval between events is not
// above the longest.
func gapsOrdered(v Values) error {
	if v["min-gap"] > v["max-gap"] {
		return fmt.Errorf("--min-gap %s is above --max-gap %s", Us(v["min-gap"]), Us(v["max-gap"]))
	}
	return nil

}

// prioritiesOrdered checks H > M > L: the inversion needs that order.
func prioritiesOrdered(v Values) error {
	if !(v["h-prio"] > v["m-prio"] && v["m-prio"] > v["l-prio"]) {
		return fmt.Errorf("--h-prio %d, --m-prio %d and --l-prio %d must be ordered H > M > L", v["h-prio"], v["m-prio"], v["l-prio"])
	}
	return nil

}

// runRTHog runs the victim and, above it, the hog's bursts.
func runRTHog(e *env) error {
	if err := e.victim(); err != nil {
		return err
	}
	burst, every := e.v.D("burst"), e.v.D("every")
	return e.loop(e.fifo("hog", e.v.I("hog-prio")), every, every-lead, func(t *workload.Thread) { t.Work(burst) })
}

// runIRQNoise runs the victim and the injector thread whose timer a BPF
// program recognises and spins in.
func runIRQNoise(e *env) error {
	if err := e.victim(); err != nil {
		return err
	}
	// RT: its sleeper timer stays a hard timer, even on PREEMPT_RT.
	return e.irqInjector(1)
}

// irqInjector starts the thread (FIFO prio) whose timer, every `every`,
// the BPF injector recognises and spins in for `spin` in hard IRQ
// context; its counts become the result's Injected at the end.
func (e *env) irqInjector(prio int) error {
	every := e.v.D("every")
	if err := e.loop(e.fifo("irq-inject", prio), every, every-lead, func(*workload.Thread) {}); err != nil {
		return err
	}
	th := e.g.Threads()[len(e.g.Threads())-1]
	n, err := inject.StartIRQNoise(th.Tid, e.cpu, e.v.D("spin"))
	if err != nil {
		return err
	}
	e.closes = append(e.closes, func() {
		st := n.Stats()
		e.res.Injected = &st
		n.Close()
	})
	return nil
}

// runPreemptOff runs the victim and the SCHED_OTHER injector that spins
// with preemption off through BPF_PROG_TEST_RUN.
func runPreemptOff(e *env) error {
	p, err := inject.LoadPreemptOff(e.cpu)
	if err != nil {
		return err
	}
	e.closes = append(e.closes, func() {
		st := p.Stats()
		e.res.Injected = &st
		p.Close()
	})
	if err := e.victim(); err != nil {
		return err
	}
	every, spin := e.v.D("every"), e.v.D("spin")
	// Timer slack 1 ns: a SCHED_OTHER sleeper would otherwise wake up
	// to 50 us late and miss the victim's deadline.
	spec := workload.Spec{Name: "preempt-inject", CPU: e.cpu, Policy: workload.Other, TimerSlack: 1}
	failed := &workload.Stat{}
	e.res.Stats["inject-errors"] = failed
	return e.loop(spec, every, every-lead, func(t *workload.Thread) {
		if failed.Count == 0 && p.Spin(spin) != nil {
			failed.Add(0)
		}
	})
}

// runOverrunningLoop runs the control loop whose heavy iterations exceed
// its period, catching up without sleeping.
func runOverrunningLoop(e *env) error {
	work, light := e.v.D("work"), e.v.D("light")
	over, every := e.v.I("overruns"), e.v.I("every")
	p := workload.NewPeriodic(e.base, e.v.D("period"))
	p.CatchUp = true
	e.res.Loops["control"] = &p.Stats
	_, err := e.g.Go(e.fifo("control", e.v.I("prio")), func(t *workload.Thread) {
		for i := 0; ; i = (i + 1) % every {
			p.Wait(t)
			if t.Stopping() {
				return
			}
			if i < over {
				t.Work(work)
			} else {
				t.Work(light)
			}
		}
	})
	return err
}

// overrunDuty checks the overrunning loop's parameters: its heavy work
// exceeds the period (or there is no overrun), and its duty cycle over one
// group of iterations stays within MaxDuty, even with --force.
func overrunDuty(v Values) error {
	if v["work"] <= v["period"] {
		return fmt.Errorf("--work %s must be longer than --period %s, or the loop never overruns", Us(v["work"]), Us(v["period"]))
	}
	if v["overruns"] >= v["every"] {
		return fmt.Errorf("--overruns %d must be below --every %d, or the loop never catches up", v["overruns"], v["every"])
	}
	if v["light"] >= v["period"] {
		return fmt.Errorf("--light %s must be shorter than --period %s, or the loop never catches up", Us(v["light"]), Us(v["period"]))
	}
	busy := v["overruns"]*v["work"] + (v["every"]-v["overruns"])*v["light"]
	if d := float64(busy) / float64(v["every"]*v["period"]); d > MaxDuty {
		return fmt.Errorf("--overruns %d of --work %s and --light %s every --every %d periods of --period %s is a %.0f%% duty cycle, above the %.0f%% maximum",
			v["overruns"], Us(v["work"]), Us(v["light"]), v["every"], Us(v["period"]), d*100, MaxDuty*100)
	}
	return nil
}

// xorshift64* : allocation-free pseudo-random numbers for the event intervals.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s ^= r.s >> 12
	r.s ^= r.s << 25
	r.s ^= r.s >> 27
	return r.s * 2685821657736338717
}

func runEventDriven(e *env) error {
	efd, err := workload.NewEventFD()
	if err != nil {
		return err
	}
	var sem workload.Sem
	sem.Post(nil) // a binary semaphore, free
	e.g.OnStop(func() { sem.Close(); efd.Close() })
	e.after = append(e.after, efd.Release) // once no thread can touch the fd
	work := e.v.D("work")
	batch := &workload.Stat{}
	e.res.Stats["event-batch"] = batch // time to handle the events of one wakeup
	blocked := &workload.Stat{}
	e.res.Stats["semaphore wait"] = blocked
	var events, batches, maxBatch int64
	e.after = append(e.after, func() {
		e.res.Counts["events"], e.res.Counts["batches"], e.res.Counts["largest batch"] = events, batches, maxBatch
	})
	if _, err := e.g.Go(e.fifo("event", e.v.I("prio")), func(t *workload.Thread) {
		for {
			n := efd.Wait(t)
			if n == 0 || t.Stopping() {
				return
			}
			start := workload.Now()
			for i := uint64(0); i < n; i++ {
				t.Work(work)
			}
			end := workload.Now()
			batch.Add(end - start)
			events += int64(n)
			batches++
			maxBatch = max(maxBatch, int64(n))
			// The accidental blocking: a semaphore another thread holds at times.
			if !sem.Wait(t) {
				return
			}
			sem.Post(t)
			blocked.Add(workload.Now() - end)
		}
	}); err != nil {
		return err
	}
	r := &rng{s: uint64(e.v["seed"])*0x9E3779B97F4A7C15 | 1}
	lo, span := e.v["min-gap"], e.v["max-gap"]-e.v["min-gap"]+1
	if _, err := e.g.Go(workload.Spec{Name: "pinger", CPU: e.other, Policy: workload.FIFO, Priority: 50}, func(t *workload.Thread) {
		next := e.base
		for !t.Stopping() {
			next += lo + int64(r.next()%uint64(span))
			t.SleepUntil(next)
			efd.Signal(t, 1)
		}
	}); err != nil {
		return err
	}
	every, hold := e.v.D("block-every"), e.v.D("hold")
	spec := workload.Spec{Name: "blocker", CPU: e.other, Policy: workload.FIFO, Priority: 50}
	return e.loop(spec, every, every, func(t *workload.Thread) {
		if sem.Wait(t) {
			t.Sleep(hold)
			sem.Post(t)
		}
	})
}

func runPriorityInversion(e *env) error {
	var m workload.Locker = &workload.Mutex{}
	if e.v.B("pi") {
		m = &workload.PIMutex{}
	}
	lWork, mWork, mSleep, hWork := e.v.D("l-work"), e.v.D("m-work"), e.v.D("m-sleep"), e.v.D("h-work")
	wait := &workload.Stat{}
	e.res.Stats["task-H lock wait"] = wait
	if err := e.loop(e.fifo("task-L", e.v.I("l-prio")), e.v.D("l-period"), 0, func(t *workload.Thread) {
		m.Lock(t)
		t.Work(lWork)
		m.Unlock(t)
	}); err != nil {
		return err
	}
	// M's burst is wall-clock time: H's runs inside it do not stretch it,
	// so M leaves the CPU idle 1 ms in 11 and the RT load stays below the
	// throttling limit.
	if _, err := e.g.Go(e.fifo("task-M", e.v.I("m-prio")), func(t *workload.Thread) {
		for !t.Stopping() {
			t.Spin(mWork)
			t.Sleep(mSleep)
		}
	}); err != nil {
		return err
	}
	return e.loop(e.fifo("task-H", e.v.I("h-prio")), e.v.D("h-period"), 0, func(t *workload.Thread) {
		t.Work(hWork)
		start := workload.Now()
		m.Lock(t)
		wait.Add(workload.Now() - start)
		m.Unlock(t)
	})
}
