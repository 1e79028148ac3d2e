package engine

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/rtscope/rtscope/internal/ksym"
)

// IPI kinds (enum rts_ipi_kind): the flags of the IPI events and the
// index of the counts by kind.
const (
	IPICall    = uint8(bpfRtsIpiKindRTS_IPI_CALL)
	IPITLB     = uint8(bpfRtsIpiKindRTS_IPI_TLB)
	IPIResched = uint8(bpfRtsIpiKindRTS_IPI_RESCHED)
	IPIIRQWork = uint8(bpfRtsIpiKindRTS_IPI_IRQ_WORK)
	IPIWakeup  = uint8(bpfRtsIpiKindRTS_IPI_WAKEUP)
	// IPIKinds is the number of kinds.
	IPIKinds = int(bpfRtsIpiKindRTS_IPI_KINDS)
)

// IPI event types of the flight recorder (ipi.bpf.h).
const (
	EventIPISend  = uint8(bpfRtsEventTypeRTS_EV_IPI_SEND)
	EventIPIEntry = uint8(bpfRtsEventTypeRTS_EV_IPI_ENTRY)
	EventIPIExit  = uint8(bpfRtsEventTypeRTS_EV_IPI_EXIT)
)

// ipiSlotsPerCPU is RTS_IPI_SLOTS: a slot per vector class and CPU.
const ipiSlotsPerCPU = 3

// ipiMaps sizes the IPI maps of spec for ncpu CPUs; without --ipi
// (nothing writes them) to one entry each: ipi_pairs is preallocated
// (290 KiB at RTS_IPI_PAIRS entries).
func ipiMaps(spec *ebpf.CollectionSpec, ncpu int, on bool) {
	if !on {
		spec.Maps["ipi_slots"].MaxEntries = 1
		spec.Maps["ipi_pairs"].MaxEntries = 1
		return
	}
	spec.Maps["ipi_slots"].MaxEntries = uint32(ncpu * ipiSlotsPerCPU)
}

// ipiVars are the kernel functions that tell an IPI's kind (0 when
// kallsyms hides them: every csd is then a function call).
func ipiVars(syms *ksym.Table, vars map[string]any) {
	vars["ipi_fn_tlb"] = syms.Addr("flush_tlb_func")
	vars["ipi_fn_ttwu"] = syms.Addr("sched_ttwu_pending")
	vars["ipi_fn_generic"] = syms.Addr("generic_smp_call_function_single_interrupt")
}

// IPICPU is one CPU's IPIs received, by kind (IPICall...).
type IPICPU struct {
	CPU   int
	Count [IPIKinds]uint64
	Ns    [IPIKinds]uint64 // handler time
	// Unattributed: received with no send seen (sent before the hooks
	// were attached, or a sender's slot overwritten by a later one).
	Unattributed [IPIKinds]uint64
}

// IPIPair is the IPIs one sender caused on one CPU, of one kind, while
// Receiver (a tracked tid, 0: none) ran or waited there.
type IPIPair struct {
	Receiver  uint32
	Sender    uint32 // tid, 0: unknown
	SenderPID uint32
	SenderCPU int // of its first IPI
	Comm      string
	CPU       int
	Kind      uint8
	Count     uint64
	Ns        uint64
	MaxNs     uint64
	Func      uint64 // the function it ran (flush_tlb_func, ...), or the callback
	Callsite  uint64
}

// IPIStats are the IPI counts of a run (Engine.IPIs).
type IPIStats struct {
	CPUs  []IPICPU
	Pairs []IPIPair
	// PairsLost: receipts not counted by pair (ipi_pairs full); the
	// per-CPU counts have them.
	PairsLost uint64
}

// IPIAsked tells whether --ipi asked for the IPI hooks (Config.IPI): the
// senders, and the counts of the receipts (attached without it too, as
// noise).
func (f *Features) IPIAsked() bool {
	return f.Probed(FeatureIPISend) && !errors.Is(f.Missing(FeatureIPISend), errIPINotAsked)
}

// IPISendersUnseen says why IPI sends are not recorded, "" when they are:
// without it, an IPI received with no send in a window would read as sent
// by nobody (trace.Window.IPISendersUnseen).
func (f *Features) IPISendersUnseen() string {
	switch {
	case f.Has(FeatureIPISend):
		return ""
	case errors.Is(f.Missing(FeatureIPISend), errIPINotAsked):
		return "watch --ipi names it"
	}
	return "this kernel has no csd:csd_queue_cpu/ipi:ipi_send_cpu tracepoints, Linux 6.3 or later"
}

// ErrNoIPI is IPIs' error when the IPI hooks are not attached.
var ErrNoIPI = errors.New("the IPI hooks are not attached (--ipi)")

// IPIs reads the IPI counts: per CPU and by pair.
func (e *Engine) IPIs() (IPIStats, error) {
	var out IPIStats
	if !e.Features.IPIReceipts() || !e.Features.IPIAsked() {
		return out, ErrNoIPI
	}
	var per []bpfRtsIpiCpu
	if err := e.objs.IpiCpus.Lookup(uint32(0), &per); err != nil {
		return out, fmt.Errorf("reading ipi_cpus: %w", err)
	}
	for cpu, c := range per {
		out.CPUs = append(out.CPUs, IPICPU{CPU: cpu, Count: c.Count, Ns: c.Ns, Unattributed: c.Unattributed})
		out.PairsLost += c.PairsLost
	}
	var k bpfRtsIpiKey
	var v bpfRtsIpiPair
	it := e.objs.IpiPairs.Iterate()
	for it.Next(&k, &v) {
		out.Pairs = append(out.Pairs, IPIPair{Receiver: k.Receiver, Sender: k.Sender, SenderPID: v.Tgid,
			SenderCPU: int(v.SenderCpu), Comm: CommString(v.Comm), CPU: int(k.Cpu), Kind: k.Kind,
			Count: v.Count, Ns: v.Ns, MaxNs: v.MaxNs, Func: v.Fn, Callsite: v.Callsite})
	}
	if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return out, fmt.Errorf("reading ipi_pairs: %w", err)
	}
	return out, nil
}
