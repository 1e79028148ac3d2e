package engine

// BPF logic tests of the IPI and NMI noise causes (ipi.bpf.h's receipts,
// noise.bpf.h's rts_noise_nmi) through the twins on CPU 0.

import (
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// x86 vectors as ipi.bpf.h's stubs pass them (the noise part's who).
const (
	vecCallFunctionSingle = 0xfb
	vecReschedule         = 0xfd
)

// ipiPart: an IPI of class slot (vector vec) received on CPU 0 from entry
// to exit while tracked task running runs there, through the receipt bodies.
func (nt *noiseTwin) ipiPart(entry, exit uint64, slot, running, vec uint64) {
	onCPU0(nt.t, nt.objs.TestIpiEntry, slot, running, entry, vec)
	onCPU0(nt.t, nt.objs.TestIpiExit, exit)
}

// nmi: an NMI handler that took ns ends at now on CPU 0.
func (nt *noiseTwin) nmi(now, ns uint64, handled bool) {
	onCPU0(nt.t, nt.objs.TestNoiseNmi, now, ns, b2u(handled))
}

// An IPI received while a tracked task runs is a part of its own (who:
// the vector), and the softirq its exit runs joins it by the IRQ-tail
// rule; an NMI inside an IRQ part is taken out of that IRQ's own time; an
// NMI with nothing in progress is an interval of its own, ending at the
// handler's end, and a handler that did not claim the NMI adds its time
// but no part. Without --ipi (ipi_asked false) no IPI is counted as such,
// and the flight recorder has its entry and exit with no sender.
func TestTwinNoiseIPIAndNMI(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	irq := func(now, leave, busy uint64, c uint8, who uint32, since uint64) {
		onCPU0(t, nt.objs.TestNoiseIrq, now, leave, busy, uint64(c), uint64(who), since, 0)
	}
	nt.switchTo(1_000, 0, 100, false, 120, 50, 0)
	nt.ipiPart(10_000, 14_000, 0, 100, vecCallFunctionSingle) // 4 us
	irq(40_000, 0, 2, 0, 0, 0)                                // a softirq 26 us later: the IPI's exit runs it
	irq(43_000, 1, 0, NoiseSoftirq, 3, 40_000)                // 3 us
	irq(100_000, 0, 0, 0, 0, 0)                               // an IRQ
	nt.nmi(104_000, 2_000, true)                              // an NMI inside it, 2 us
	irq(110_000, 1, 0, NoiseIRQ, 9, 100_000)                  // 10 us, 8 of its own
	nt.nmi(300_000, 3_000, true)                              // an NMI alone: [297, 300] us
	nt.nmi(300_500, 500, false)                               // the next handler of the chain, not its NMI
	nt.ipiPart(500_000, 501_000, 1, 100, vecReschedule)       // 1 us
	nt.switchTo(1_000_000, 100, 0, false, 50, 120, 0)         // sleeps
	evs := nt.events()
	if len(evs) != 4 {
		for _, e := range evs {
			t.Logf("[%d, %d] causes %#x", EventX(&e), EventY(&e), NoiseMask(&e))
		}
		t.Fatalf("%d noise events, want 4", len(evs))
	}
	checkNoise(t, evs[0], 100, 10_000, 43_000, bit(NoiseIPI)|bit(NoiseSoftirq), NoiseIPI, vecCallFunctionSingle)
	checkNoise(t, evs[1], 100, 100_000, 110_000, bit(NoiseIRQ)|bit(NoiseNMI), NoiseIRQ, 9)
	checkNoise(t, evs[2], 100, 297_000, 300_500, bit(NoiseNMI), NoiseNMI, 0)
	checkNoise(t, evs[3], 100, 500_000, 501_000, bit(NoiseIPI), NoiseIPI, vecReschedule)
	ns, parts := nt.byCause(100)
	want := map[uint8]struct {
		parts uint32
		ns    uint64
	}{
		NoiseIPI: {2, 5_000}, NoiseSoftirq: {1, 3_000}, NoiseIRQ: {1, 8_000}, NoiseNMI: {2, 5_500},
	}
	for c := uint8(1); c < uint8(NoiseCauseCount); c++ {
		w := want[c]
		if parts[c-1] != w.parts || ns[c-1] != w.ns {
			t.Errorf("cause %d: %d parts, %d ns; want %d, %d", c, parts[c-1], ns[c-1], w.parts, w.ns)
		}
	}
	if m := nt.noise(100); m.Count != 4 {
		t.Errorf("noise: %d samples, want 4", m.Count)
	}
	ic := ipiCPU0(t, nt.objs.IpiCpus)
	for k := range IPIKinds {
		if ic.Count[k] != 0 {
			t.Errorf("IPI counts %v without --ipi; want none (the receipts are noise only)", ic.Count)
			break
		}
	}
	// In the flight recorder for the windows, with no sender.
	entries := flightEvents(t, nt.objs, noiseSlots, EventIPIEntry)
	exits := flightEvents(t, nt.objs, noiseSlots, EventIPIExit)
	if len(entries) != 2 || len(exits) != 2 || entries[0].A != 0 || entries[0].Flags != IPICall || entries[1].Flags != IPIResched ||
		exits[0].A != 0 || EventX(&exits[0]) != 4_000 || EventX(&exits[1]) != 1_000 {
		t.Errorf("IPI events without --ipi: entries %+v, exits %+v; want a call and a reschedule, 4 and 1 us, no sender", entries, exits)
	}
}

// An IPI while no tracked task is current, or an NMI then, is nobody's
// noise; a tracked task's IPI with --ipi is counted and is noise both.
func TestTwinNoiseIPIUntrackedAndAsked(t *testing.T) {
	nt := &noiseTwin{t: t, objs: twinFlight(t, noiseSlots, map[string]any{"ipi_asked": true})}
	if ret := onCPU0(t, nt.objs.TestTrack, 100, 100, 0, 0); ret != 0 {
		t.Fatalf("track: %d", int32(ret))
	}
	nt.switchTo(1_000, 0, 300, false, 120, 120, 0) // 300: not tracked
	nt.ipiPart(10_000, 12_000, 0, 0, vecCallFunctionSingle)
	nt.nmi(20_000, 1_000, true)
	nt.switchTo(50_000, 300, 100, false, 120, 50, 0)
	nt.ipiPart(60_000, 63_000, 1, 100, vecReschedule)
	nt.switchTo(200_000, 100, 0, false, 50, 120, 0)
	evs := nt.events()
	if len(evs) != 1 {
		t.Fatalf("%d noise events, want 1", len(evs))
	}
	checkNoise(t, evs[0], 100, 60_000, 63_000, bit(NoiseIPI), NoiseIPI, vecReschedule)
	ns, parts := nt.byCause(100)
	if parts[NoiseIPI-1] != 1 || ns[NoiseIPI-1] != 3_000 || parts[NoiseNMI-1] != 0 || ns[NoiseNMI-1] != 0 {
		t.Errorf("IPI %d parts %d ns, NMI %d parts %d ns; want 1 of 3000, none", parts[NoiseIPI-1], ns[NoiseIPI-1],
			parts[NoiseNMI-1], ns[NoiseNMI-1])
	}
	ic := ipiCPU0(t, nt.objs.IpiCpus)
	if ic.Count[IPICall] != 1 || ic.Count[IPIResched] != 1 {
		t.Errorf("IPI counts %v with --ipi; want a call and a reschedule", ic.Count)
	}
}

// A tracked task current with no switch-in seen (tracked while it ran) is
// taken at the tick: its IPIs from then are its noise, before then nobody's;
// an untracked current task is not taken.
func TestTwinNoiseAdoptAtTick(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	onCPU0(t, nt.objs.TestNoiseAdopt, 500, 300) // 300: not tracked
	nt.ipiPart(1_000, 2_000, 0, 100, vecCallFunctionSingle)
	onCPU0(t, nt.objs.TestNoiseAdopt, 5_000, 100)
	nt.ipiPart(10_000, 12_000, 0, 100, vecCallFunctionSingle)
	onCPU0(t, nt.objs.TestNoiseAdopt, 20_000, 100) // taken already: nothing changes
	nt.switchTo(50_000, 100, 0, false, 50, 120, 0)
	evs := nt.events()
	if len(evs) != 1 {
		t.Fatalf("%d noise events, want 1", len(evs))
	}
	checkNoise(t, evs[0], 100, 10_000, 12_000, bit(NoiseIPI), NoiseIPI, vecCallFunctionSingle)
	if ns, parts := nt.byCause(100); parts[NoiseIPI-1] != 1 || ns[NoiseIPI-1] != 2_000 {
		t.Errorf("IPI: %d parts, %d ns; want 1, 2000", parts[NoiseIPI-1], ns[NoiseIPI-1])
	}
}

// The classic stubs: nmi:nmi_handler's delta_ns and handled read at their
// offsets in the record (this kernel's format, captured), and an IPI
// vector's entry and exit, into the same bodies: parts of the tracked
// task current on the CPU.
func TestClassicTwinNoiseIPIAndNMI(t *testing.T) {
	// The classic engine's current task is the running thread's tid: one
	// thread runs them all (unlocked, another thread ran some: not tracked).
	onTwinCPU(t)
	tid := uint32(unix.Gettid())
	tw := newClassicTwinWith(t, map[string]any{"flight_per_cpu": uint32(64)}, func(spec *ebpf.CollectionSpec, _ map[string]uint32) {
		spec.Maps["flight"].MaxEntries = 64
	})
	if err := tw.objs.WantTid.Put(tid, bpfRtsTarget{Index: 7}); err != nil {
		t.Fatal(err)
	}
	tw.scan(tid, 7, false, "poller")
	tw.switchIn(tid, "poller")
	tw.record(twinCallSingleEntry)
	tw.record(twinCallSingleExit)
	nmi := func(delta, handled uint64) {
		tw.record(twinNMIHandler, field{off: "off_nmi_handler", size: 8, val: 0xfeed0}, field{off: "off_nmi_delta", size: 8, val: delta},
			field{off: "off_nmi_handled", size: 4, val: handled})
	}
	nmi(5_000, 1)
	nmi(300, 0)
	tw.sleep(tid)
	st := tw.state(tid)
	if st == nil {
		t.Fatal("not tracked")
	}
	s := tw.stats(st.Id)
	if s.NoiseParts[NoiseNMI-1] != 1 || s.NoiseNs[NoiseNMI-1] != 5_300 {
		t.Errorf("NMI: %d parts, %d ns; want 1, 5300", s.NoiseParts[NoiseNMI-1], s.NoiseNs[NoiseNMI-1])
	}
	if s.NoiseParts[NoiseIPI-1] != 1 || s.NoiseNs[NoiseIPI-1] == 0 {
		t.Errorf("IPI: %d parts, %d ns; want 1 of some ns", s.NoiseParts[NoiseIPI-1], s.NoiseNs[NoiseIPI-1])
	}
	var mask uint16
	for _, e := range tw.flight(EventNoise) {
		mask |= NoiseMask(&e)
	}
	if mask != bit(NoiseIPI)|bit(NoiseNMI) {
		t.Errorf("noise events' causes %#x; want IPI and NMI", mask)
	}
	nmis := tw.flight(EventNMI)
	if len(nmis) != 2 || EventX(&nmis[0]) != 0xfeed0 || nmis[0].Flags != 1 || nmis[1].Flags != 0 ||
		nmis[0].Ts-EventY(&nmis[0]) != 5_000 || nmis[1].Ts-EventY(&nmis[1]) != 300 {
		t.Errorf("NMI events %+v; want the handler's two runs, 5000 and 300 ns, the first claimed", nmis)
	}
}
