package analysis

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rtscope/rtscope/internal/trace"
)

// IPIs in a window (watch --ipi): each IPI handler on a CPU the task ran
// or waited on is an item of its own kind (KindIPI), keyed by its kind
// and sender, so that its time goes to the task that sent it, not to
// "hard-IRQ noise". The engine attributes each receipt to the last task
// that queued work for that CPU before it (bpf/ipi.bpf.h), so a window of
// the receiving CPU names the sender even when the sender's CPU is not in
// the window.

// IPISource is the IPIs of one kind that one sender caused on one CPU in a
// window, while the task ran or waited there.
type IPISource struct {
	Kind      trace.IPIKind `json:"kind"`
	Sender    string        `json:"sender,omitempty"` // comm/tid, "" when no send was seen
	SenderTID uint32        `json:"sender_tid,omitempty"`
	Function  string        `json:"function,omitempty"`
	CPU       int           `json:"cpu"`
	Count     int           `json:"count"` // IPIs (separate handler runs)
	Ns        uint64        `json:"ns"`    // their handler time
}

// ipiKey groups a CPU's IPIs by kind and sender.
func ipiKey(p *trace.IPI) string {
	if p == nil {
		return "ipi"
	}
	return fmt.Sprint("ipi:", p.Kind, ":", p.SenderTID)
}

// ipiLabel is "TLB shootdown from intruder/1234 (flush_tlb_func)".
func ipiLabel(p *trace.IPI) string {
	if p == nil {
		return "IPI"
	}
	s := p.Kind.Noun()
	if from := p.Sender(); from != "" {
		s += " from " + from
	}
	if p.Function != "" {
		s += " (" + p.Function + ")"
	}
	return s + " IPI"
}

// ipiCtx accounts an IPI handler on cpu to its sender.
func (a *accountant) ipiCtx(phase Phase, cpu int, from, to int64, c *cpuCtx) {
	a.add(Item{Phase: phase, Kind: KindIPI, CPU: cpu, HardIRQ: true, IPI: c.ipi,
		key: fmt.Sprint(ipiKey(c.ipi), ":", cpu), Label: ipiLabel(c.ipi)}, from, to)
}

// ipiSources are the window's IPI items as sources, the most time first;
// the items of one source in two phases (while the task waited, while it
// ran) are one: "function call x 52, function call x 1" named it twice.
func ipiSources(res *Result) []IPISource {
	var out []IPISource
	at := map[IPISource]int{}
	for _, it := range res.Breakdown {
		if it.Kind != KindIPI || it.IPI == nil {
			continue
		}
		key := IPISource{Kind: it.IPI.Kind, Sender: it.IPI.Sender(), SenderTID: it.IPI.SenderTID, Function: it.IPI.Function, CPU: it.CPU}
		if i, ok := at[key]; ok {
			out[i].Count += it.Spans
			out[i].Ns += it.Ns
			continue
		}
		at[key] = len(out)
		src := key
		src.Count, src.Ns = it.Spans, it.Ns
		out = append(out, src)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ns > out[j].Ns })
	return out
}

// say is "TLB shootdown from intruder/1234 (flush_tlb_func), 3.1 us x 412";
// unseen: why sends were not recorded ("": they were, and none was seen
// for these); cpu: name the CPU (the same IPIs on two CPUs).
func (s IPISource) say(unseen string, cpu bool) string {
	var b strings.Builder
	b.WriteString(s.Kind.Noun())
	switch {
	case s.Sender != "":
		b.WriteString(" from " + s.Sender)
	case unseen != "":
		b.WriteString(" (sender not recorded)")
	default:
		b.WriteString(" (no send seen)")
	}
	if s.Function != "" {
		fmt.Fprintf(&b, " (%s)", s.Function)
	}
	if cpu {
		fmt.Fprintf(&b, " on CPU %d", s.CPU)
	}
	fmt.Fprintf(&b, ", %s x %d", us(s.Ns/uint64(max(s.Count, 1))), s.Count)
	return b.String()
}

// ipiNote fills res.IPIs and, unless the verdict is about them already,
// adds the largest two sources to it (unseen: as IPISource.say).
func ipiNote(res *Result, unseen string) {
	res.IPIs = ipiSources(res)
	if len(res.IPIs) == 0 || res.Cause == CauseIPI {
		return
	}
	var parts []string
	top := res.IPIs[:min(2, len(res.IPIs))]
	twoCPUs := len(top) == 2 && top[0].Kind == top[1].Kind && top[0].Sender == top[1].Sender
	for _, s := range top {
		parts = append(parts, s.say(unseen, twoCPUs))
	}
	res.Verdict += "; IPIs: " + strings.Join(parts, ", ")
	if res.IPIs[0].Sender == "" && unseen != "" {
		res.Verdict += " (" + unseen + ")"
	}
}

// ipiVerdict explains a window whose largest part is IPI handlers: who
// sent them, what they ran, and what removes them (unseen: as
// IPISource.say).
func ipiVerdict(res *Result, top *Item, share string, unseen string) {
	res.Cause = CauseIPI
	p := top.IPI
	if p == nil {
		p = &trace.IPI{Kind: trace.IPICall}
	}
	src := IPISource{Kind: p.Kind, Sender: p.Sender(), Function: p.Function, CPU: top.CPU, Count: top.Spans, Ns: top.Ns}
	res.Culprit = src.Sender
	if res.Culprit == "" {
		res.Culprit = top.Label
	}
	res.Verdict = fmt.Sprintf("IPIs: CPU %d ran IPI handlers for %s, mostly %s: %s", top.CPU, share, src.say(unseen, false), ipiRemedy(p, top.CPU, unseen))
}

// ipiRemedy says what removes an IPI of p's kind from cpu (unseen: why
// its sender may not be known, as IPISource.say).
func ipiRemedy(p *trace.IPI, cpu int, unseen string) string {
	who := "its sender"
	if s := p.Sender(); s != "" {
		who = "`" + p.SenderComm + "`"
	}
	switch p.Kind {
	case trace.IPITLB:
		return fmt.Sprintf("%s changes the memory mappings (mmap, munmap, mprotect, madvise) of a process with a thread on CPU %d, "+
			"and each change flushes that CPU's TLB: move that work out of the process, or map, fault in and lock (mlockall) "+
			"the memory before the real-time loop starts", who, cpu)
	case trace.IPIResched, trace.IPIWakeup:
		return fmt.Sprintf("%s wakes or preempts tasks on CPU %d: keep the tasks it wakes off this CPU (affinity, isolcpus)", who, cpu)
	case trace.IPIIRQWork:
		return fmt.Sprintf("the CPU's own deferred work (irq_work: perf, printk, RCU): quiet it on CPU %d (nohz_full, rcu_nocbs)", cpu)
	}
	if p.SenderTID == 0 && unseen != "" {
		return "its sender was not recorded (" + unseen + "); without it, isolate the CPU (isolcpus, nohz_full)"
	}
	if p.SenderTID == 0 {
		return "no send was seen for it (sent before rtscope attached, or the send tracepoints are missing): isolate the CPU (isolcpus, nohz_full)"
	}
	return fmt.Sprintf("%s runs functions on CPU %d (smp_call_function): move it, or keep the CPU out of the CPUs it targets", who, cpu)
}
