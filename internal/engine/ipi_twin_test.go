package engine

// BPF logic tests of the IPI hooks (ipi.bpf.h): the twins run the bodies
// as the tp_btf stubs call them, and the classic twin runs the classic
// stubs on synthetic tracepoint records.

import (
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Fake kernel addresses of the functions that tell an IPI's kind.
const (
	fakeTLB     = 0xffffffff81001000
	fakeTTWU    = 0xffffffff81002000
	fakeGeneric = 0xffffffff81003000
)

var ipiFakeVars = map[string]any{"ipi_asked": true, "ipi_fn_tlb": uint64(fakeTLB), "ipi_fn_ttwu": uint64(fakeTTWU), "ipi_fn_generic": uint64(fakeGeneric)}

// onCPU0Here pins the calling thread to CPU 0, so that the test runs on
// CPU 0 run in it: the sender the bodies see (the current task) is the
// test's own thread. It returns the thread's tid.
func onCPU0Here(t *testing.T) uint32 {
	t.Helper()
	runtime.LockOSThread()
	var set, old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	})
	return uint32(unix.Gettid())
}

func monoNow(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// ipiCPU0 is CPU 0's IPI counts.
func ipiCPU0(t *testing.T, m *ebpf.Map) bpfRtsIpiCpu {
	t.Helper()
	var per []bpfRtsIpiCpu
	if err := m.Lookup(uint32(0), &per); err != nil {
		t.Fatal(err)
	}
	return per[0]
}

// ipiPairs reads ipi_pairs.
func ipiPairs(t *testing.T, m *ebpf.Map) map[bpfRtsIpiKey]bpfRtsIpiPair {
	t.Helper()
	out := map[bpfRtsIpiKey]bpfRtsIpiPair{}
	var k bpfRtsIpiKey
	var v bpfRtsIpiPair
	it := m.Iterate()
	for it.Next(&k, &v) {
		out[k] = v
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A TLB shootdown queued by this thread for CPU 0 is attributed to it when
// CPU 0's call-function vector runs: the send event names it, the receipt
// event carries it, the function and the callsite, and the handler time
// is counted by CPU and kind and by (receiver, sender). The generic
// callback of ipi_send_cpu (the csd was seen queued) records nothing; a
// receipt with no send is counted unattributed, for the task waiting on
// the CPU; a reschedule is its own slot and kind.
func TestTwinIPIAttribution(t *testing.T) {
	const slots = 64
	me := onCPU0Here(t)
	objs := twinFlight(t, slots, ipiFakeVars)
	onCPU0(t, objs.TestCsdQueue, 0, 0x55, fakeTLB)
	onCPU0(t, objs.TestIpiSendCpu, 0, 0x56, fakeGeneric)
	sends := flightEvents(t, objs, slots, EventIPISend)
	if len(sends) != 1 || sends[0].A != me || sends[0].B != 0 || sends[0].Flags != IPITLB || CommString(sends[0].Comm) == "" {
		t.Fatalf("sends %+v; want one TLB send from tid %d to CPU 0, with its comm (the generic callback records none)", sends, me)
	}
	now := monoNow(t) + 1e9
	onCPU0(t, objs.TestIpiEntry, 0, 100, now, 0xfb)
	onCPU0(t, objs.TestIpiExit, now+3000)
	entries := flightEvents(t, objs, slots, EventIPIEntry)
	if len(entries) != 1 || entries[0].A != me || entries[0].C != 0 || entries[0].Flags != IPITLB ||
		EventX(&entries[0]) != fakeTLB || EventY(&entries[0]) != 0x55 {
		t.Fatalf("entry %+v; want sender %d on CPU 0, kind TLB, function and callsite", entries, me)
	}
	if ex := flightEvents(t, objs, slots, EventIPIExit); len(ex) != 1 || EventX(&ex[0]) != 3000 {
		t.Fatalf("exit %+v; want one, with its 3000 ns", ex)
	}
	// No send since: the next call-function IPI has no sender; task 200 waits here.
	onCPU0(t, objs.TestSetWaiting, 200)
	onCPU0(t, objs.TestIpiEntry, 0, 0, now+10000, 0xfb)
	onCPU0(t, objs.TestIpiExit, now+11000)
	onCPU0(t, objs.TestSetWaiting, 0)
	// A reschedule from this thread, received while nothing tracked runs.
	onCPU0(t, objs.TestIpiSendCpu, 0, 0x77, 0)
	onCPU0(t, objs.TestIpiEntry, 1, 0, now+20000, 0xfd)
	onCPU0(t, objs.TestIpiExit, now+20500)

	c := ipiCPU0(t, objs.IpiCpus)
	if c.Count[IPITLB] != 1 || c.Ns[IPITLB] != 3000 || c.Count[IPICall] != 1 || c.Unattributed[IPICall] != 1 ||
		c.Count[IPIResched] != 1 || c.Ns[IPIResched] != 500 || c.Unattributed[IPITLB] != 0 {
		t.Errorf("CPU 0 counts %+v / ns %+v / unattributed %+v; want TLB 1 (3000 ns), call 1 unattributed, resched 1 (500 ns)",
			c.Count, c.Ns, c.Unattributed)
	}
	pairs := ipiPairs(t, objs.IpiPairs)
	tlb := pairs[bpfRtsIpiKey{Receiver: 100, Sender: me, Cpu: 0, Kind: IPITLB}]
	if tlb.Count != 1 || tlb.Ns != 3000 || tlb.MaxNs != 3000 || tlb.Fn != fakeTLB || tlb.Callsite != 0x55 || CommString(tlb.Comm) == "" {
		t.Errorf("TLB pair %+v; want 1 of 3000 ns, its function, callsite and the sender's comm", tlb)
	}
	if p := pairs[bpfRtsIpiKey{Receiver: 200, Sender: 0, Kind: IPICall}]; p.Count != 1 {
		t.Errorf("the unattributed call for waiting task 200: %+v; want 1", p)
	}
	if p := pairs[bpfRtsIpiKey{Receiver: 0, Sender: me, Kind: IPIResched}]; p.Count != 1 || p.Callsite != 0x77 {
		t.Errorf("the reschedule pair %+v; want 1 from %d with callsite 0x77", p, me)
	}
	if len(pairs) != 3 {
		t.Errorf("%d pairs %+v; want 3", len(pairs), pairs)
	}
}

// A remote wakeup queued (sched_ttwu_pending) is its own kind, and an
// exit without its entry (a hook attached between them) counts nothing.
func TestTwinIPIWakeupAndLoneExit(t *testing.T) {
	const slots = 64
	onCPU0Here(t)
	objs := twinFlight(t, slots, ipiFakeVars)
	onCPU0(t, objs.TestIpiExit, monoNow(t))
	onCPU0(t, objs.TestCsdQueue, 0, 0x55, fakeTTWU)
	now := monoNow(t) + 1e9
	onCPU0(t, objs.TestIpiEntry, 0, 0, now, 0xfb)
	onCPU0(t, objs.TestIpiExit, now+700)
	c := ipiCPU0(t, objs.IpiCpus)
	var total uint64
	for _, n := range c.Count {
		total += n
	}
	if c.Count[IPIWakeup] != 1 || total != 1 {
		t.Errorf("counts %+v; want one remote wakeup only (the lone exit counts nothing)", c.Count)
	}
	if ex := flightEvents(t, objs, slots, EventIPIExit); len(ex) != 1 {
		t.Errorf("%d exit events; want 1", len(ex))
	}
}

// The classic stubs decode csd_queue_cpu, ipi_send_cpu and the vectors'
// records at the offsets of the captured 6.18 formats, into the same
// bodies: a TLB shootdown and a reschedule, each attributed to the thread
// that queued it.
func TestClassicTwinIPI(t *testing.T) {
	me := onCPU0Here(t)
	tw := newClassicTwinWith(t, ipiFakeVars, nil)
	tw.record(twinCsdQueue, field{off: "off_csd_queue_cpu", size: 4, val: twinCPU},
		field{off: "off_csd_queue_callsite", size: 8, val: 0x55}, field{off: "off_csd_queue_func", size: 8, val: fakeTLB})
	tw.record(twinIPISend, field{off: "off_ipi_send_cpu", size: 4, val: twinCPU},
		field{off: "off_ipi_send_callsite", size: 8, val: 0x56}, field{off: "off_ipi_send_callback", size: 8, val: fakeGeneric})
	tw.record(twinCallSingleEntry)
	tw.record(twinCallSingleExit)
	tw.record(twinIPISend, field{off: "off_ipi_send_cpu", size: 4, val: twinCPU},
		field{off: "off_ipi_send_callsite", size: 8, val: 0x57})
	tw.record(twinReschedEntry)
	tw.record(twinReschedExit)
	c := ipiCPU0(t, tw.objs.IpiCpus)
	if c.Count[IPITLB] != 1 || c.Count[IPIResched] != 1 || c.Unattributed != [IPIKinds]uint64{} {
		t.Errorf("counts %+v, unattributed %+v; want a TLB shootdown and a reschedule, both attributed", c.Count, c.Unattributed)
	}
	pairs := ipiPairs(t, tw.objs.IpiPairs)
	if p := pairs[bpfRtsIpiKey{Sender: me, Kind: IPITLB}]; p.Count != 1 || p.Fn != fakeTLB || p.Callsite != 0x55 {
		t.Errorf("TLB pair %+v; want one from %d with flush_tlb_func's address and callsite 0x55", p, me)
	}
	if p := pairs[bpfRtsIpiKey{Sender: me, Kind: IPIResched}]; p.Count != 1 || p.Callsite != 0x57 {
		t.Errorf("reschedule pair %+v; want one from %d with callsite 0x57", p, me)
	}
}

// Reasons of ipi:ipi_entry/ipi_exit, by their index in the twins'
// twin_ipi_reasons (rtscope_test.bpf.c).
const (
	reasonCall = iota
	reasonSingleCall
	reasonResched
	reasonIRQWork
	reasonTimer
	reasonStop
	reasonBacktrace
	reasonKGDB
)

// arm64's receipts: the reason string of ipi_entry/ipi_exit gives the
// vector class, then the body is x86's: a function call and a reschedule
// queued by this thread are attributed to it, a single function call and
// an irq_work with no send are counted unattributed, and the IPIs x86's
// hooks leave out (timer broadcast, CPU stop, backtrace, KGDB) count
// nothing, not even as the end of a handler they interrupt.
func TestTwinIPIReasons(t *testing.T) {
	const slots = 64
	me := onCPU0Here(t)
	objs := twinFlight(t, slots, ipiFakeVars)
	receipt := func(reason, running uint64) {
		onCPU0(t, objs.TestIpiReasonEntry, reason, running)
		onCPU0(t, objs.TestIpiReasonExit, reason)
	}
	onCPU0(t, objs.TestCsdQueue, 0, 0x55, 0x1234)
	onCPU0(t, objs.TestIpiReasonEntry, reasonCall, 100)
	receipt(reasonBacktrace, 0) // inside the handler: not its end
	onCPU0(t, objs.TestIpiReasonExit, reasonCall)
	receipt(reasonSingleCall, 100)
	onCPU0(t, objs.TestIpiSendCpu, 0, 0x77, 0)
	receipt(reasonResched, 0)
	receipt(reasonIRQWork, 0)
	for _, r := range []uint64{reasonTimer, reasonStop, reasonKGDB} {
		receipt(r, 0)
	}
	c := ipiCPU0(t, objs.IpiCpus)
	want := [IPIKinds]uint64{}
	want[IPICall], want[IPIResched], want[IPIIRQWork] = 2, 1, 1
	if c.Count != want {
		t.Errorf("counts %+v; want 2 function calls, 1 reschedule, 1 irq_work", c.Count)
	}
	if c.Unattributed[IPICall] != 1 || c.Unattributed[IPIIRQWork] != 1 || c.Unattributed[IPIResched] != 0 {
		t.Errorf("unattributed %+v; want the single call and the irq_work", c.Unattributed)
	}
	pairs := ipiPairs(t, objs.IpiPairs)
	if p := pairs[bpfRtsIpiKey{Receiver: 100, Sender: me, Kind: IPICall}]; p.Count != 1 || p.Fn != 0x1234 || p.Callsite != 0x55 {
		t.Errorf("function call pair %+v; want 1 from %d with its function and callsite", p, me)
	}
	if p := pairs[bpfRtsIpiKey{Sender: me, Kind: IPIResched}]; p.Count != 1 || p.Callsite != 0x77 {
		t.Errorf("reschedule pair %+v; want 1 from %d", p, me)
	}
	if n := len(flightEvents(t, objs, slots, EventIPIEntry)); n != 4 {
		t.Errorf("%d IPI entry events; want 4", n)
	}
	if n := len(flightEvents(t, objs, slots, EventIPIExit)); n != 4 {
		t.Errorf("%d IPI exit events; want 4", n)
	}
}

// The classic stubs of ipi_entry/ipi_exit read the reason pointer at its
// offset in the record (8 in arm64's 6.x format: after the common
// fields), into the same bodies.
func TestClassicTwinIPIReasons(t *testing.T) {
	me := onCPU0Here(t)
	tw := newClassicTwinWith(t, ipiFakeVars, func(_ *ebpf.CollectionSpec, offs map[string]uint32) {
		offs["off_ipi_entry_reason"], offs["off_ipi_exit_reason"] = 8, 8
	})
	tw.record(twinCsdQueue, field{off: "off_csd_queue_cpu", size: 4, val: twinCPU},
		field{off: "off_csd_queue_callsite", size: 8, val: 0x55}, field{off: "off_csd_queue_func", size: 8, val: 0x1234})
	tw.recordReason(twinIPIReasonEntry, 0) // "Function call interrupts"
	tw.recordReason(twinIPIReasonExit, 0)
	tw.record(twinIPISend, field{off: "off_ipi_send_cpu", size: 4, val: twinCPU},
		field{off: "off_ipi_send_callsite", size: 8, val: 0x57})
	tw.recordReason(twinIPIReasonEntry, 1) // "Rescheduling interrupts"
	tw.recordReason(twinIPIReasonExit, 1)
	tw.recordReason(twinIPIReasonEntry, 2) // "Timer broadcast interrupts": not counted
	tw.recordReason(twinIPIReasonExit, 2)
	c := ipiCPU0(t, tw.objs.IpiCpus)
	want := [IPIKinds]uint64{}
	want[IPICall], want[IPIResched] = 1, 1
	if c.Count != want || c.Unattributed != [IPIKinds]uint64{} {
		t.Errorf("counts %+v, unattributed %+v; want a function call and a reschedule, both attributed", c.Count, c.Unattributed)
	}
	pairs := ipiPairs(t, tw.objs.IpiPairs)
	if p := pairs[bpfRtsIpiKey{Sender: me, Kind: IPICall}]; p.Count != 1 || p.Fn != 0x1234 {
		t.Errorf("function call pair %+v; want one from %d", p, me)
	}
	if p := pairs[bpfRtsIpiKey{Sender: me, Kind: IPIResched}]; p.Count != 1 || p.Callsite != 0x57 {
		t.Errorf("reschedule pair %+v; want one from %d", p, me)
	}
}

// recordReason runs the ipi_entry or ipi_exit hook on an empty record
// whose reason is twin_ipi_reasons[reason] (classic_test.bpf.c).
func (tw *classicTwin) recordReason(hook, reason uint64) {
	tw.t.Helper()
	args := make([]uint64, 12)
	args[10], args[11] = hook, reason
	ret, err := tw.objs.TwinRecord.Run(&ebpf.RunOptions{Context: args, CPU: twinCPU, Flags: unix.BPF_F_TEST_RUN_ON_CPU})
	if err != nil || ret != 0 {
		tw.t.Fatalf("test run: %d, %v", ret, err)
	}
}
