package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// IPIs are the IPIs a run received (watch --ipi, docs/ipi.md): per CPU by
// kind, and by CPU, kind and sender, summed over the tasks that ran there.
type IPIs struct {
	CPUs    []IPICPU    `json:"cpus"`
	Senders []IPISender `json:"senders"` // most IPIs first
	// PairsLost: IPIs not counted by sender (the kernel's table was full);
	// the CPUs' counts have them.
	PairsLost uint64 `json:"pairs_lost,omitempty"`
}

// IPICPU is one CPU's IPIs by kind.
type IPICPU struct {
	CPU   int                         `json:"cpu"`
	Kinds map[trace.IPIKind]*IPICount `json:"kinds"`
}

// IPICount is a number of IPIs and their handler time.
type IPICount struct {
	Count uint64 `json:"count"`
	Ns    uint64 `json:"ns"`
	// Unattributed: received with no send seen (before the hooks were
	// attached, or a slot overwritten by a later sender).
	Unattributed uint64 `json:"unattributed,omitempty"`
}

// IPISender is the IPIs of one kind one task sent to one CPU.
type IPISender struct {
	CPU       int           `json:"cpu"`
	Kind      trace.IPIKind `json:"kind"`
	SenderTID uint32        `json:"sender_tid"` // 0: no send seen
	SenderPID uint32        `json:"sender_pid,omitempty"`
	Sender    string        `json:"sender,omitempty"`     // comm/tid
	SenderCPU *int          `json:"sender_cpu,omitempty"` // of its first IPI
	Function  string        `json:"function,omitempty"`   // the work: flush_tlb_func, ...
	Callsite  string        `json:"callsite,omitempty"`
	Count     uint64        `json:"count"`
	Ns        uint64        `json:"ns"`
	MaxNs     uint64        `json:"max_ns"`
}

// IPIsFrom turns the engine's IPI counts into the report's; fn names a
// kernel address.
func IPIsFrom(st engine.IPIStats, fn func(uint64) string) *IPIs {
	out := &IPIs{PairsLost: st.PairsLost, Senders: []IPISender{}}
	for _, c := range st.CPUs {
		k := map[trace.IPIKind]*IPICount{}
		for i := range engine.IPIKinds {
			if c.Count[i] > 0 {
				k[trace.IPIKindOf(uint8(i))] = &IPICount{Count: c.Count[i], Ns: c.Ns[i], Unattributed: c.Unattributed[i]}
			}
		}
		out.CPUs = append(out.CPUs, IPICPU{CPU: c.CPU, Kinds: k})
	}
	by := map[[3]uint64]*IPISender{}
	for _, p := range st.Pairs {
		key := [3]uint64{uint64(p.CPU), uint64(p.Kind), uint64(p.Sender)}
		if s := by[key]; s != nil {
			s.Count += p.Count
			s.Ns += p.Ns
			s.MaxNs = max(s.MaxNs, p.MaxNs)
			continue
		}
		by[key] = ipiSender(p, fn)
	}
	for _, s := range by {
		out.Senders = append(out.Senders, *s)
	}
	sortSenders(out.Senders)
	return out
}

// TaskIPIs are the IPIs received while task tid ran or waited on their
// CPU, by CPU, kind and sender; nil for none.
func TaskIPIs(st engine.IPIStats, tid uint32, fn func(uint64) string) []IPISender {
	var out []IPISender
	for _, p := range st.Pairs {
		if p.Receiver == tid && tid != 0 {
			out = append(out, *ipiSender(p, fn))
		}
	}
	sortSenders(out)
	return out
}

func ipiSender(p engine.IPIPair, fn func(uint64) string) *IPISender {
	s := &IPISender{CPU: p.CPU, Kind: trace.IPIKindOf(p.Kind), SenderTID: p.Sender, Count: p.Count, Ns: p.Ns, MaxNs: p.MaxNs}
	if p.Sender != 0 {
		s.SenderPID, s.Sender = p.SenderPID, fmt.Sprintf("%s/%d", p.Comm, p.Sender)
		cpu := p.SenderCPU
		s.SenderCPU = &cpu
	}
	if p.Func != 0 {
		s.Function = fn(p.Func)
	}
	if p.Callsite != 0 {
		s.Callsite = fn(p.Callsite)
	}
	return s
}

func sortSenders(s []IPISender) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Count != s[j].Count {
			return s[i].Count > s[j].Count
		}
		if s[i].CPU != s[j].CPU {
			return s[i].CPU < s[j].CPU
		}
		if s[i].Kind != s[j].Kind {
			return s[i].Kind < s[j].Kind
		}
		return s[i].SenderTID < s[j].SenderTID
	})
}

// writeTaskIPIs writes the IPIs a task received, the largest senders
// first: "IPIs received: TLB shootdown x 8536 from intruder/4446
// (flush_tlb_func) on CPU 1, 2.1 us each; ...".
func writeTaskIPIs(w io.Writer, ipis []IPISender) {
	if len(ipis) == 0 {
		return
	}
	var parts []string
	for _, s := range ipis[:min(3, len(ipis))] {
		from := s.Sender
		if from == "" {
			from = "no send seen"
		}
		what := from
		if s.Function != "" {
			what += " (" + s.Function + ")"
		}
		parts = append(parts, fmt.Sprintf("%s x %d from %s on CPU %d, %s us each", s.Kind.Noun(), s.Count, what, s.CPU,
			units.Us(s.Ns/max(s.Count, 1))))
	}
	if len(ipis) > 3 {
		parts = append(parts, fmt.Sprintf("%d more senders", len(ipis)-3))
	}
	fmt.Fprintf(w, "   IPIs received: %s\n", strings.Join(parts, "; "))
}

// describeIPI is an IPI event's line in a printed window.
func describeIPI(e trace.Event) string {
	p := e.IPI
	if p == nil {
		return e.Type.String()
	}
	switch e.Type {
	case trace.EventIPISend:
		return fmt.Sprintf("ipi send %s: %s to CPU %d", taskLabel(e.TID, e.Comm, ""), p.Kind.Noun(), deref(e.TargetCPU))
	case trace.EventIPIExit:
		return fmt.Sprintf("ipi exit %s, %s us", p.Kind.Noun(), units.Us(p.HandlerNs))
	}
	s := "ipi entry " + p.Kind.Noun()
	if from := p.Sender(); from != "" {
		s += " from " + from
		if p.SenderCPU != nil {
			s += fmt.Sprintf(" (CPU %d)", *p.SenderCPU)
		}
	}
	if p.Function != "" {
		s += ": " + p.Function
	}
	return s
}
