package analysis

import (
	"fmt"
	"strings"

	"github.com/rtscope/rtscope/internal/trace"
)

// The noise metric's windows: one interruption of a task that was running
// (noise.bpf.h). The task runs at its start, so no wakeup is looked for;
// the verdict names what the window held that took the CPU, the largest
// part first, and throttling by its rule.

// noisePart is one interruption seen in a noise window.
type noisePart struct {
	label string
	ns    int64
}

// noiseParts lists the window's interruptions of task tid, up to w:
// hard IRQs, hard-IRQ timer callbacks and softirqs on the CPU it ran on,
// its time off the CPU while runnable (offCPU) and steal; longest first.
func noiseParts(evs []trace.Event, tid uint32, w int64) []noisePart {
	var parts []noisePart
	open := map[string]noisePart{} // by partKey: its label (the entry's: an IPI's names its sender) and start
	var off offCPU
	for _, e := range evs {
		if e.T < 0 || e.T > w {
			continue
		}
		switch {
		case e.Type == trace.EventSwitch && e.PrevTID == tid && strings.HasPrefix(e.PrevState, "R"):
			off.begin(&e)
		case e.Type == trace.EventSwitch && e.NextTID == tid:
			parts = off.end(parts, e.T)
		case e.Type == trace.EventSwitch:
			parts = off.other(parts, &e)
		case e.Type == trace.EventSteal:
			parts = append(parts, noisePart{"hypervisor steal", int64(e.StealNs)})
		case e.Type == trace.EventNMI && e.SinceT != nil:
			parts = append(parts, noisePart{"NMI (" + e.Function + ")", e.T - *e.SinceT})
		case e.Type.Entry():
			open[partKey(&e)] = noisePart{partLabel(&e), e.T}
		case e.Type.Exit():
			if p, ok := open[partKey(&e)]; ok {
				parts = append(parts, noisePart{p.label, e.T - p.ns})
				delete(open, partKey(&e))
			}
		}
	}
	parts = off.end(parts, w)
	sortParts(parts)
	return parts
}

// offCPU follows a runnable task off its CPU: one part per holder, a
// preemption by a task of its class, or throttling while a lower class
// runs. A preemption during which the class was throttled is split there:
// pi_stress's FIFO 1 thread, preempted by its FIFO 3 one that then slept,
// stayed off its CPU 53.8 ms while it idled and ran SCHED_OTHER tasks, and
// the whole was called a preemption beside a throttling verdict.
type offCPU struct {
	on    bool
	at    int64 // the part's start
	cpu   int   // the CPU it left
	kprio int   // its kernel priority
	label string
}

// begin: the task was switched out at e, runnable.
func (o *offCPU) begin(e *trace.Event) {
	o.on, o.at, o.cpu, o.kprio = true, e.T, e.CPU, e.PrevKPrio
	o.label = holderLabel(e, o.kprio)
}

// other: a switch of another task; on the CPU it left, a change between
// its class and a lower one starts a new part.
func (o *offCPU) other(parts []noisePart, e *trace.Event) []noisePart {
	if !o.on || e.CPU != o.cpu {
		return parts
	}
	label := holderLabel(e, o.kprio)
	if strings.HasPrefix(label, "RT throttling") == strings.HasPrefix(o.label, "RT throttling") {
		return parts
	}
	parts = o.end(parts, e.T)
	o.on, o.at, o.label = true, e.T, label
	return parts
}

// end: the part open since o.at ends at t.
func (o *offCPU) end(parts []noisePart, t int64) []noisePart {
	if !o.on {
		return parts
	}
	o.on = false
	return append(parts, noisePart{o.label, t - o.at})
}

// holderLabel names who holds the CPU after switch e, for a task of
// kernel priority kprio kept off it.
func holderLabel(e *trace.Event, kprio int) string {
	who := fmt.Sprintf("%s/%d", e.NextComm, e.NextTID)
	if lowerClass(e, kprio) && e.NextTID == 0 {
		return "RT throttling (the CPU went idle)"
	}
	if lowerClass(e, kprio) {
		return "RT throttling (" + who + " of lower priority ran)"
	}
	return "preemption by " + who
}

func partKey(e *trace.Event) string {
	return fmt.Sprintf("%d/%s", e.CPU, strings.TrimSuffix(strings.TrimSuffix(string(e.Type), "_entry"), "_exit"))
}

func partLabel(e *trace.Event) string {
	switch {
	case e.Type == trace.EventIPIEntry || e.Type == trace.EventIPIExit:
		return ipiLabel(e.IPI) // its sender, when watch --ipi saw the send
	case e.IRQ != nil:
		return fmt.Sprintf("hard IRQ %d (%s)", *e.IRQ, e.IRQName)
	case e.Vec != nil:
		return "softirq " + e.VecName
	case e.HardIRQ:
		return "timer interrupt (" + e.Function + ")"
	}
	return "timer callback (" + e.Function + ")"
}

func sortParts(p []noisePart) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].ns > p[j-1].ns; j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

// noiseVerdict says a noise window's interruption and its parts, the
// largest first; a throttled task's window is throttling whatever the
// generic accounting found.
func noiseVerdict(res *Result, tr *trace.Trace, s Subject) {
	w := int64(res.WindowNs)
	parts := noiseParts(tr.Events, s.TID, w)
	if len(parts) == 0 && tr.Truncated {
		// Nothing kept is no sign of an SMI: the ipi-storm fixture's
		// 3374.1 us interval on a lapped CPU read "unexplained: an SMI".
		res.Verdict = fmt.Sprintf("interrupted for %s; the window's events were overwritten before it was read; %s", usI(w), res.Verdict)
		return
	}
	if len(parts) == 0 {
		res.Verdict = fmt.Sprintf("interrupted for %s, by nothing the window recorded (unexplained: an SMI, an NMI or a stall the steal clock did not see); %s", usI(w), res.Verdict)
		return
	}
	top := parts[0]
	var named []string
	for i, p := range parts {
		if i == 4 {
			named = append(named, fmt.Sprintf("%d more", len(parts)-i))
			break
		}
		named = append(named, fmt.Sprintf("%s %s", p.label, usI(p.ns)))
	}
	// Throttling in parts (a stop task's preemption splits it: oslat's
	// 40.1 ms interval held 29.4 and 10.7 ms) is said as its sum.
	var throttledNs int64
	for _, p := range parts {
		if strings.HasPrefix(p.label, "RT throttling") {
			throttledNs += p.ns
		}
	}
	if strings.HasPrefix(top.label, "RT throttling") && throttledNs*2 >= w {
		res.Cause, res.Culprit = CauseThrottling, "RT throttling"
		res.Verdict = fmt.Sprintf("RT throttling: the task was taken off its CPU, runnable, for %s (sched_rt_runtime_us, or the fair server): %s",
			usI(throttledNs), strings.Join(named, ", "))
		return
	}
	res.Verdict = fmt.Sprintf("interrupted for %s; largest interruption: %s; %s", usI(w), strings.Join(named, ", "), res.Verdict)
}
