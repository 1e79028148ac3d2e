package isolation

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
)

// CauseTimer is the timers expired on a watched CPU, with the tasks that
// armed them (docs/isolation.md).
const CauseTimer = "timer"

// timerKinds are enum iso_timer_kind's nouns.
var timerKinds = [...]string{"hrtimer", "soft hrtimer", "timer"}

func timerKind(k uint16) string {
	if int(k) < len(timerKinds) {
		return timerKinds[k]
	}
	return fmt.Sprintf("kind %d", k)
}

// readTimers reads the timers expired on watched CPUs (iso_timer_exps).
func readTimers(coll *ebpf.Collection, s *Snapshot, watched map[int]bool, syms *ksym.Table) error {
	byKey := map[isoIsoTimerKey]*TimerRow{}
	err := perCPU(coll.Maps["iso_timer_exps"], watched, noTime, func(cpu int, k isoIsoTimerKey, t *isoIsoTime) {
		k.Cpu = uint16(cpu)
		r := byKey[k]
		if r == nil {
			r = &TimerRow{CPU: cpu, Func: syms.Func(k.Fn), Kind: timerKind(k.Kind), BaseCPU: int(k.FromCpu)}
			byKey[k] = r
		}
		r.add(Time{Count: t.Count, Ns: t.Ns, MaxNs: t.MaxNs})
	})
	for _, r := range byKey {
		s.Timers = append(s.Timers, *r)
	}
	return err
}

// readTimerArms reads the timers armed for watched CPUs: counted on the
// arming CPU, every CPU's values are summed.
func readTimerArms(coll *ebpf.Collection, s *Snapshot, watched map[int]bool, syms *ksym.Table) error {
	all := map[int]bool{}
	for _, c := range s.Online {
		all[c] = true
	}
	byKey := map[isoIsoTimerKey]*TimerArmRow{}
	err := perCPU(coll.Maps["iso_timer_arms"], all, func(a *isoIsoTimerArmed) bool { return a.Count == 0 },
		func(_ int, k isoIsoTimerKey, a *isoIsoTimerArmed) {
			if !watched[int(k.Cpu)] || a.Tgid == s.self {
				return
			}
			r := byKey[k]
			if r == nil {
				r = &TimerArmRow{CPU: int(k.Cpu), Func: syms.Func(k.Fn), Kind: timerKind(k.Kind), TID: k.Tid, PID: a.Tgid,
					Comm: engine.CommString(a.Comm), FromCPU: int(k.FromCpu)}
				byKey[k] = r
			}
			r.Count += a.Count
		})
	for _, r := range byKey {
		s.TimerArms = append(s.TimerArms, *r)
	}
	return err
}

// timerRemedies are the sentences of the timer cause, by case; by
// function where the function says more.
var (
	timerRemedies = map[string]string{
		// Armed from another CPU: the timer was placed on this CPU's base.
		"remote": "{sender} arms {what} on CPU {cpu} from CPU {from}: stop it during the real-time phase, or keep timers off CPU {cpu}: " +
			"nohz_full={cpu} (or isolcpus=nohz,{cpu}) takes it out of the CPUs timers are placed on; kernel.timer_migration=0 keeps an idle CPU's timers on it",
		// Armed on this CPU by a task other than the workload.
		"local": "{sender} runs on CPU {cpu} and arms its timers there: move it (taskset -a -p -c {hk} {pid})",
		// Expired here for another CPU's base.
		"migrated": "timer migration expired CPU {base}'s timers here while CPU {base} was idle: kernel.timer_migration=0, " +
			"or nohz_full={cpu}, which keeps CPU {cpu} out of the migration hierarchy",
		// Armed inside interrupts on the CPU: no task to name.
		"irq": "armed inside interrupts on CPU {cpu} (a kernel timer re-armed in its own callback, or by a handler or softirq): " +
			"nohz_full={cpu} keeps most kernel timers off the CPU",
		// No arming seen.
		"": "no arming seen: armed before the run, or re-armed in its own callback (periodic timers emit no hrtimer_start); " +
			"nohz_full={cpu} keeps most kernel timers off the CPU",
	}
	// The kernel's own timers, whoever was running when they were armed.
	kernelTimerRemedies = map[string]string{
		"watchdog_timer_fn":     "the soft-lockup watchdog's timer: nohz_full={cpu} (or kernel.watchdog_cpumask={hk}) keeps it off",
		"delayed_work_timer_fn": "delayed work queued onto CPU {cpu} (see the work rows): nohz_full={cpu} queues its timers on {hkcpus}",
		"sched_rt_period_timer": "RT throttling's period timer, armed while RT tasks run: kernel.sched_rt_runtime_us=-1 stops it (and the throttling)",
	}
	// Sleepers' timers, when no task armed them during the run.
	sleeperRemedies = map[string]string{
		"hrtimer_wakeup":  "a task sleeping on CPU {cpu} (nanosleep, a poll or futex timeout) wakes: expected for the workload's sleeps; else move the sleeper",
		"process_timeout": "a task sleeping with a timeout (schedule_timeout) wakes on CPU {cpu}: move the sleeper",
	}
)

// timerIntrusions are the timer functions expired on cpu, each with the
// tasks that armed it there. A timer armed on cpu only by the workload
// (its own sleeps and timeouts) is not an intrusion and is left out; so
// is the tick's own hrtimer (the tick line). A hard hrtimer's time is
// the timer interrupt's, counted here only; soft hrtimers and wheel
// timers run inside the HRTIMER and TIMER softirqs, whose rows hold their
// time already: theirs is not added to the CPU's total again.
func timerIntrusions(s *Snapshot, cpu int, fx fixes, workload map[string]bool) []Intrusion {
	var out []Intrusion
	for _, r := range s.Timers {
		if r.CPU != cpu {
			continue
		}
		var remote, local, inIRQ []TimerArmRow
		for _, a := range s.TimerArms {
			switch {
			case a.CPU != cpu || a.Func != r.Func || a.Kind != r.Kind:
			case a.FromCPU != cpu:
				remote = append(remote, a)
			case a.TID == 0:
				inIRQ = append(inIRQ, a)
			case !workload[a.Comm]:
				local = append(local, a)
			}
		}
		if len(remote)+len(local)+len(inIRQ) == 0 && r.BaseCPU == cpu && armedByWorkload(s, r, workload) {
			continue
		}
		what := r.Kind + " " + r.Func
		if r.BaseCPU != cpu {
			what += fmt.Sprintf(" (CPU %d's)", r.BaseCPU)
		}
		in := Intrusion{Cause: CauseTimer, What: what, Sender: armers(remote, local, inIRQ), Time: r.Time,
			Remedy: fx.timer(r, remote, local, inIRQ), inner: r.Kind != "hrtimer"}
		out = append(out, in)
	}
	return out
}

// armedByWorkload: r's function was armed on its CPU by the workload only.
func armedByWorkload(s *Snapshot, r TimerRow, workload map[string]bool) bool {
	for _, a := range s.TimerArms {
		if a.CPU == r.CPU && a.Func == r.Func && a.Kind == r.Kind && workload[a.Comm] {
			return true
		}
	}
	return false
}

// maxArmers is how many arming tasks a timer row names: a busy CPU's
// hrtimer_wakeup had 60 (every sleeper of a build).
const maxArmers = 4

// armers names the arming tasks, the remote ones first, then the local
// ones, then the armings in interrupts (no task), each by count.
func armers(remote, local, inIRQ []TimerArmRow) string {
	var by []string
	for _, rows := range [][]TimerArmRow{remote, local, inIRQ} {
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Count > rows[j].Count })
		for _, a := range rows {
			if a.TID == 0 {
				by = append(by, fmt.Sprintf("interrupts on CPU %d (%d)", a.FromCPU, a.Count))
				continue
			}
			by = append(by, fmt.Sprintf("%s on CPU %d (%d)", who(a.Comm, a.TID), a.FromCPU, a.Count))
		}
	}
	if len(by) > maxArmers {
		by = append(by[:maxArmers], fmt.Sprintf("%d more", len(by)-maxArmers))
	}
	return strings.Join(by, ", ")
}

func armings(rows []TimerArmRow) (n uint64) {
	for _, a := range rows {
		n += a.Count
	}
	return n
}

// timer: remote armers first, then the kernel's own timers, then whoever
// armed most on the CPU (a task, or interrupts).
func (f fixes) timer(r TimerRow, remote, local, inIRQ []TimerArmRow) string {
	what := r.Kind + " " + r.Func
	kernel, isKernel := kernelTimerRemedies[r.Func]
	switch {
	case len(remote) > 0:
		a := remote[0]
		sender := who(a.Comm, a.TID)
		if a.TID == 0 {
			sender = fmt.Sprintf("an interrupt on CPU %d", a.FromCPU)
		}
		return f.fill(timerRemedies["remote"], "{sender}", sender, "{what}", what, "{from}", fmt.Sprint(a.FromCPU))
	case isKernel:
		return f.fill(kernel)
	case len(local) > 0 && armings(local) >= armings(inIRQ):
		a := local[0]
		return f.fill(timerRemedies["local"], "{sender}", who(a.Comm, a.TID), "{pid}", fmt.Sprint(a.PID))
	case len(inIRQ) > 0:
		return f.fill(timerRemedies["irq"])
	case r.BaseCPU != f.cpu:
		return f.fill(timerRemedies["migrated"], "{base}", fmt.Sprint(r.BaseCPU))
	}
	if t, ok := sleeperRemedies[r.Func]; ok {
		return f.fill(t)
	}
	return f.fill(timerRemedies[""])
}
