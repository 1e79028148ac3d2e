package isolation

import (
	"fmt"
	"sort"
	"strings"
)

// Causes of intrusions, in report order.
const (
	CauseIPI     = "ipi"
	CauseIRQ     = "irq"
	CauseSoftirq = "softirq"
	CauseWork    = "work"
	CauseTask    = "task"
)

// Result is a run's judgement: per watched CPU, its intrusions.
type Result struct {
	DurationNs uint64      `json:"duration_ns"`
	CPUs       []CPUResult `json:"cpus"`
	Allow      []string    `json:"allow,omitempty"`
	Missing    []string    `json:"missing,omitempty"`
	Lost       uint64      `json:"lost,omitempty"`
	// Engine, EngineNote and EngineLimits are the Snapshot's.
	Engine       string   `json:"engine,omitempty"`
	EngineNote   string   `json:"engine_note,omitempty"`
	EngineLimits []string `json:"engine_limits,omitempty"`
}

// CPUResult is one watched CPU's intrusions, largest total first.
type CPUResult struct {
	CPU      int  `json:"cpu"`
	Isolated bool `json:"isolated"`
	NohzFull bool `json:"nohz_full"`
	// Workload: the allowed tasks that ran ("comm/tid"); Guessed when no
	// --allow named them and the longest-running user task was taken.
	Workload   []string    `json:"workload,omitempty"`
	Guessed    bool        `json:"workload_guessed,omitempty"`
	Kinds      int         `json:"kinds"`    // causes with an intrusion
	TotalNs    uint64      `json:"total_ns"` // every cause but work (inside its kworker's time)
	Worst      *Intrusion  `json:"worst,omitempty"`
	StealNs    uint64      `json:"steal_ns"`
	Tick       *TickRow    `json:"tick,omitempty"`
	Intrusions []Intrusion `json:"intrusions"`
}

// Intrusion is one cause and sender's doing on a CPU.
type Intrusion struct {
	Cause  string `json:"cause"`
	What   string `json:"what"`
	Sender string `json:"sender,omitempty"`
	Time
	Remedy string `json:"remedy"`
	// inner: its time runs inside another cause's (a work item in its
	// kworker, a soft timer in its softirq): not added to the CPU's total.
	inner bool
}

// Analyze groups s's counts by CPU, cause and sender, with remedies.
func Analyze(s *Snapshot) *Result {
	r := &Result{DurationNs: s.DurationNs, Allow: s.Allow, Missing: s.Missing, Lost: s.Lost,
		Engine: s.Engine, EngineNote: s.EngineNote, EngineLimits: s.EngineLimits}
	for _, cpu := range s.CPUs {
		r.CPUs = append(r.CPUs, analyzeCPU(s, cpu))
	}
	return r
}

func analyzeCPU(s *Snapshot, cpu int) CPUResult {
	c := CPUResult{CPU: cpu, Isolated: hasCPU(s.Isolated, cpu), NohzFull: hasCPU(s.NohzFull, cpu)}
	fx := fixes{cpu: cpu, housekeeping: housekeeping(s)}
	c.Intrusions = append(c.Intrusions, ipiIntrusions(s, cpu, fx)...)
	c.Intrusions = append(c.Intrusions, irqIntrusions(s, cpu, fx)...)
	c.Intrusions = append(c.Intrusions, softirqIntrusions(s, cpu, fx)...)
	c.Intrusions = append(c.Intrusions, workIntrusions(s, cpu, fx)...)
	tasks, workload, guessed := taskIntrusions(s, cpu, fx)
	c.Intrusions = append(c.Intrusions, tasks...)
	c.Workload, c.Guessed = workload, guessed
	c.Intrusions = append(c.Intrusions, timerIntrusions(s, cpu, fx, workloadComms(workload, s.Allow))...)
	sort.SliceStable(c.Intrusions, func(i, j int) bool { return c.Intrusions[i].Ns > c.Intrusions[j].Ns })
	kinds := map[string]bool{}
	for i := range c.Intrusions {
		in := &c.Intrusions[i]
		kinds[in.Cause] = true
		if in.Cause == CauseWork || in.inner {
			continue
		}
		c.TotalNs += in.Ns
		if c.Worst == nil || in.MaxNs > c.Worst.MaxNs {
			c.Worst = in
		}
	}
	c.Kinds = len(kinds)
	for _, st := range s.Steal {
		if st.CPU == cpu {
			c.StealNs = st.Ns
		}
	}
	for i := range s.Ticks {
		if s.Ticks[i].CPU == cpu {
			c.Tick = &s.Ticks[i]
		}
	}
	return c
}

// workloadComms is the set of the workload's comms: those of the tasks
// that ran ("comm/tid" entries) and the --allow ones.
func workloadComms(workload, allow []string) map[string]bool {
	m := map[string]bool{}
	for _, a := range allow {
		m[a] = true
	}
	for _, w := range workload {
		if i := strings.LastIndexByte(w, '/'); i >= 0 {
			m[w[:i]] = true
		}
	}
	return m
}

func hasCPU(l []int, cpu int) bool {
	for _, c := range l {
		if c == cpu {
			return true
		}
	}
	return false
}

// housekeeping is the online CPUs not watched, as a list.
func housekeeping(s *Snapshot) string {
	var hk []int
	for _, c := range s.Online {
		if !hasCPU(s.CPUs, c) {
			hk = append(hk, c)
		}
	}
	return listString(hk)
}

// who names a task "comm/tid".
func who(comm string, tid uint32) string { return fmt.Sprintf("%s/%d", comm, tid) }

// ipiIntrusions are the IPIs of cpu by (kind, sender).
func ipiIntrusions(s *Snapshot, cpu int, fx fixes) []Intrusion {
	var out []Intrusion
	for _, r := range s.IPIs {
		if r.CPU != cpu {
			continue
		}
		what := r.Kind
		if r.Func != "" && r.Kind != "TLB shootdown" {
			what += " (" + r.Func + ")"
		}
		in := Intrusion{Cause: CauseIPI, What: what, Time: r.Time}
		if r.SenderTID != 0 {
			in.Sender = fmt.Sprintf("%s on CPU %d", who(r.Comm, r.SenderTID), r.SenderCPU)
		}
		in.Remedy = fx.ipi(r)
		out = append(out, in)
	}
	return out
}

func irqIntrusions(s *Snapshot, cpu int, fx fixes) []Intrusion {
	var out []Intrusion
	for _, r := range s.IRQs {
		if r.CPU == cpu {
			out = append(out, Intrusion{Cause: CauseIRQ, What: fmt.Sprintf("irq %d %s", r.IRQ, r.Name), Time: r.Time, Remedy: fx.irq(r)})
		}
	}
	return out
}

func softirqIntrusions(s *Snapshot, cpu int, fx fixes) []Intrusion {
	var out []Intrusion
	for _, r := range s.Softirqs {
		if r.CPU == cpu && r.Count > 0 {
			out = append(out, Intrusion{Cause: CauseSoftirq, What: r.Vector, Time: r.Time, Remedy: fx.softirq(r.Vector)})
		}
	}
	return out
}

// workIntrusions are the work functions run on cpu, each with the tasks
// that queued it there.
func workIntrusions(s *Snapshot, cpu int, fx fixes) []Intrusion {
	var out []Intrusion
	for _, r := range s.Works {
		if r.CPU != cpu {
			continue
		}
		var by []string
		how := ""
		for _, q := range s.Queued {
			switch {
			case q.CPU != cpu || q.Func != r.Func:
			case q.TID == 0:
				by = append(by, fmt.Sprintf("interrupts on CPU %d (%d)", q.FromCPU, q.Count))
				how = max(how, "irq") // "queued" wins: a task to stop
			default:
				by = append(by, fmt.Sprintf("%s on CPU %d (%d)", who(q.Comm, q.TID), q.FromCPU, q.Count))
				how = "queued"
			}
		}
		sort.Strings(by)
		out = append(out, Intrusion{Cause: CauseWork, What: r.Func, Sender: strings.Join(by, ", "), Time: r.Time, Remedy: fx.work(r.Func, how)})
	}
	return out
}

// taskIntrusions are the tasks that ran on cpu but its workload: the
// --allow COMMs, else the user task that ran longest.
func taskIntrusions(s *Snapshot, cpu int, fx fixes) (out []Intrusion, workload []string, guessed bool) {
	var rows []TaskRow
	for _, r := range s.Tasks {
		if r.CPU == cpu {
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].Ns > rows[j].Ns || rows[i].Ns == rows[j].Ns && rows[i].TID < rows[j].TID
	})
	allowed := map[string]bool{}
	for _, a := range s.Allow {
		allowed[a] = true
	}
	if len(allowed) == 0 {
		for _, r := range rows {
			if !r.Kthread {
				allowed[r.Comm], guessed = true, true
				break
			}
		}
	}
	procs := map[uint32]int{} // a user process's row in out
	threads := map[uint32]int{}
	for _, r := range rows {
		if allowed[r.Comm] {
			workload = append(workload, who(r.Comm, r.TID))
			continue
		}
		what := "task"
		switch {
		case r.Kthread && r.PerCPU:
			what = "per-CPU kernel thread"
		case r.Kthread:
			what = "kernel thread"
		}
		// A process's threads are one row: its remedy moves them all.
		if i, ok := procs[r.PID]; ok && !r.Kthread {
			out[i].add(r.Time)
			threads[r.PID]++
			out[i].Sender = fmt.Sprintf("%s/%d, %d threads", strings.SplitN(out[i].Sender, "/", 2)[0], r.PID, threads[r.PID])
			continue
		}
		if !r.Kthread {
			procs[r.PID], threads[r.PID] = len(out), 1
		}
		out = append(out, Intrusion{Cause: CauseTask, What: what, Sender: who(r.Comm, r.TID), Time: r.Time, Remedy: fx.task(r)})
	}
	return out, workload, guessed
}
