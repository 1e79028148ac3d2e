package isolation

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/tpformat"
)

// readCaptured reads the tracepoint formats captured on Linux 6.18
// (testdata/formats), as tpformat.ReadFormat reads tracefs; the events in
// lacking are missing.
func readCaptured(lacking ...string) func(system, event string) (*tpformat.Format, error) {
	return func(_, event string) (*tpformat.Format, error) {
		if slices.Contains(lacking, event) {
			return nil, os.ErrNotExist
		}
		b, err := os.ReadFile(filepath.Join("testdata", "formats", event+".format"))
		if err != nil {
			return nil, err
		}
		return tpformat.ParseFormat(string(b))
	}
}

// arm64Receipts are the arm64 receipt tracepoints, which the x86 capture lacks.
var arm64Receipts = map[string]bool{"ipi/ipi_entry": true, "ipi/ipi_exit": true}

// Every offset of isolation_classic.bpf.c is bound to the captured x86
// layout, but arm64's receipts'.
func TestClassicOffsets(t *testing.T) {
	offs, bad := classicOffsets(readCaptured())
	for tp := range bad {
		if !arm64Receipts[tp] {
			t.Errorf("tracepoint %s refused: %s", tp, bad[tp])
		}
	}
	want := map[string]uint32{"off_irq_entry_irq": 8, "off_queue_work_function": 16, "off_queue_work_cpu": 32,
		"off_switch_prev_comm": 8, "off_switch_prev_pid": 24, "off_tick_stop_dependency": 12, "off_csd_queue_func": 24}
	for k, v := range want {
		if offs[k] != v {
			t.Errorf("%s = %d, want %d", k, offs[k], v)
		}
	}
	for _, f := range classicFields {
		if bound := offs[f.variable] != classicNoField; bound == arm64Receipts[f.system+"/"+f.event] {
			t.Errorf("%s bound %v", f.variable, bound)
		}
	}
}

// arm64's receipt record (include/trace/events/ipi.h, ipi_handler: one
// pointer after the common fields) binds its reason.
func TestClassicOffsetsARM64(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "tpformat", "testdata", "arm64", "ipi_entry.format"))
	if err != nil {
		t.Fatal(err)
	}
	format := string(b)
	x86 := readCaptured("call_function_entry", "call_function_exit", "call_function_single_entry",
		"call_function_single_exit", "reschedule_entry", "reschedule_exit")
	read := func(system, event string) (*tpformat.Format, error) {
		if system == "ipi" && (event == "ipi_entry" || event == "ipi_exit") {
			return tpformat.ParseFormat(format)
		}
		if system == "irq_vectors" {
			return nil, os.ErrNotExist
		}
		return x86(system, event)
	}
	offs, bad := classicOffsets(read)
	if len(bad) != 0 || offs["off_ipi_entry_reason"] != 8 || offs["off_ipi_exit_reason"] != 8 {
		t.Errorf("reason at %d and %d, refused %v; want 8, none", offs["off_ipi_entry_reason"], offs["off_ipi_exit_reason"], bad)
	}
	p := &probe{}
	spec, err := classicSpec(p, read)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := spec.Programs["on_ipi_entry"]; !ok {
		t.Error("on_ipi_entry left out")
	}
	if got := withoutAlternative(p.missing); len(got) != 0 {
		t.Errorf("not watched on arm64: %v, want nothing (its receipts are ipi_entry/ipi_exit)", got)
	}
}

// A tracepoint the kernel lacks, or whose field is laid out otherwise,
// costs its program only, and is named (the report's "not watched").
func TestClassicMissing(t *testing.T) {
	read := readCaptured("tick_stop", "call_function_single_entry")
	narrow := func(system, event string) (*tpformat.Format, error) {
		f, err := read(system, event)
		if err == nil && event == "workqueue_execute_end" {
			fd := f.Fields["function"]
			fd.Size = 4
			f.Fields["function"] = fd
		}
		return f, err
	}
	p := &probe{}
	spec, err := classicSpec(p, narrow)
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{"on_iso_tick_stop", "on_iso_work_end", "on_ipi_call_function_single_entry"} {
		if _, ok := spec.Programs[prog]; ok {
			t.Errorf("%s loaded, its tracepoint missing", prog)
		}
	}
	for _, prog := range []string{"on_iso_switch", "on_iso_work_start", "on_csd_queue_cpu"} {
		if _, ok := spec.Programs[prog]; !ok {
			t.Errorf("%s left out", prog)
		}
	}
	got := strings.Join(p.missing, "; ")
	for _, w := range []string{"tick_stop", "workqueue_execute_end (field function is not 8 bytes)", "call_function_single_entry"} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q, want it to name %q", got, w)
		}
	}
}

// The engine is chosen as watch's: forced, or BTF when the kernel has it.
func TestChooseEngine(t *testing.T) {
	if k, why, err := chooseEngine(engine.EngineClassic); k != engine.EngineClassic || why == "" || err != nil {
		t.Errorf("classic: %q %q %v", k, why, err)
	}
	if k, _, err := chooseEngine(engine.EngineBTF); k != engine.EngineBTF || err != nil {
		t.Errorf("btf: %q %v", k, err)
	}
	k, _, err := chooseEngine(engine.EngineAuto)
	if wantBTF := engine.KernelBTF() == nil; err != nil || (k == engine.EngineBTF) != wantBTF {
		t.Errorf("auto: %q %v, kernel BTF %v", k, err, wantBTF)
	}
	if _, _, err := chooseEngine("fast"); err == nil {
		t.Error("engine fast accepted")
	}
}

// classicTwin runs isolation_classic.bpf.c's stubs (included whole in
// isolation_classic_test.bpf.c) on synthetic records laid out as the
// captured formats, CPU 1 watched.
type classicTwin struct {
	t    *testing.T
	objs isoclassictwinObjects
	offs map[string]uint32
}

// Hook selectors of twin_record.
const (
	ctIRQEntry = iota
	ctIRQExit
	ctSoftirqEntry
	ctSoftirqExit
	ctSoftirqRaise
	ctQueueWork
	ctWorkStart
	ctWorkEnd
	ctSwitch
	ctTickStop
	ctCsdQueue
	ctIPISend
	ctCallSingleEntry
	ctCallSingleExit
	ctReschedEntry
	ctReschedExit
	ctTimerStart
	ctTimerEntry
	ctTimerExit
	ctHrtimerEntry
	ctHrtimerExit
)

// twinTLB is the twin's flush_tlb_func (ipi_fn_tlb).
const twinTLB = 0xffffffff81001230

func newClassicTwin(t *testing.T) *classicTwin {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF programs (CI runs as root)")
	}
	if runtime.NumCPU() < 2 {
		t.Fatal("needs CPUs 0 and 1 (CI has 2)")
	}
	spec, err := loadIsoclassictwin()
	if err != nil {
		t.Fatal(err)
	}
	offs, bad := classicOffsets(readCaptured())
	for tp := range bad {
		if !arm64Receipts[tp] {
			t.Fatal(bad)
		}
	}
	var mask [maxCPUs / 64]uint64
	mask[0] = 1 << 1
	vars := map[string]any{"iso_cpus": mask, "trace_enabled": false, "ipi_fn_tlb": uint64(twinTLB)}
	for k, v := range offs {
		vars[k] = v
	}
	for k, v := range vars {
		if err := spec.Variables[k].Set(v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	possible, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	spec.Maps["ipi_slots"].MaxEntries = uint32(possible * 3)
	tw := &classicTwin{t: t, offs: offs}
	if err := spec.LoadAndAssign(&tw.objs, nil); err != nil {
		t.Fatalf("loading the classic twin: %v", err)
	}
	t.Cleanup(func() { tw.objs.Close() })
	return tw
}

// field is one value of a record at the offset of variable off.
type field struct {
	off  string
	val  uint64
	comm string
}

// record runs hook on cpu with the record made of fields (sizes from classicFields).
func (tw *classicTwin) record(cpu int, hook uint64, fields ...field) {
	tw.t.Helper()
	var rec [80]byte
	for _, f := range fields {
		i := slices.IndexFunc(classicFields, func(c classicField) bool { return c.variable == f.off })
		if i < 0 {
			tw.t.Fatalf("no field %s", f.off)
		}
		o, size := tw.offs[f.off], classicFields[i].size
		switch size {
		case 16:
			copy(rec[o:o+16], f.comm)
		case 4:
			binary.LittleEndian.PutUint32(rec[o:], uint32(f.val))
		default:
			binary.LittleEndian.PutUint64(rec[o:], f.val)
		}
	}
	var args []uint64
	for i := 0; i < len(rec); i += 8 {
		args = append(args, binary.LittleEndian.Uint64(rec[i:]))
	}
	args = append(args, hook)
	ret, err := tw.objs.TwinRecord.Run(&ebpf.RunOptions{Context: args, CPU: uint32(cpu), Flags: unix.BPF_F_TEST_RUN_ON_CPU})
	if err != nil || ret != 0 {
		tw.t.Fatalf("test run of hook %d: %d %v", hook, ret, err)
	}
}

// cpuState is the watched CPU 1's state.
func (tw *classicTwin) cpuState() isoIsoCpu {
	tw.t.Helper()
	var per []isoIsoCpu
	if err := tw.objs.IsoCpusState.Lookup(uint32(0), &per); err != nil {
		tw.t.Fatal(err)
	}
	return per[1]
}

// The IRQ, softirq and tick stubs decode their records into the bodies'
// arguments, on the watched CPU only.
func TestClassicTwinIRQSoftirqTick(t *testing.T) {
	tw := newClassicTwin(t)
	tw.record(1, ctIRQEntry, field{off: "off_irq_entry_irq", val: 24})
	tw.record(1, ctIRQExit, field{off: "off_irq_exit_irq", val: 24})
	tw.record(0, ctIRQEntry, field{off: "off_irq_entry_irq", val: 25}) // CPU 0: not watched
	tw.record(0, ctIRQExit, field{off: "off_irq_exit_irq", val: 25})
	if got := timeOf(t, tw.objs.IsoIrqs, uint32(24)); got.Count != 1 {
		t.Errorf("irq 24: %+v, want one handler", got)
	}
	if got := timeOf(t, tw.objs.IsoIrqs, uint32(25)); got.Count != 0 {
		t.Errorf("irq 25 on CPU 0 counted: %+v", got)
	}
	tw.record(1, ctSoftirqRaise, field{off: "off_softirq_raise_vec", val: 9})
	tw.record(1, ctSoftirqEntry, field{off: "off_softirq_entry_vec", val: 9})
	tw.record(1, ctSoftirqExit, field{off: "off_softirq_exit_vec", val: 9})
	tw.record(1, ctTickStop, field{off: "off_tick_stop_success"}, field{off: "off_tick_stop_dependency", val: 1<<2 | 1<<4})
	tw.record(1, ctTickStop, field{off: "off_tick_stop_success", val: 1})
	c := tw.cpuState()
	if c.Softirqs[9].Count != 1 || c.SoftirqRaised[9] != 1 {
		t.Errorf("RCU softirq: %+v raised %d, want one run, one raise", c.Softirqs[9], c.SoftirqRaised[9])
	}
	if c.TickStopped != 1 || c.TickKept != 1 || c.TickDeps[2] != 1 || c.TickDeps[4] != 1 {
		t.Errorf("tick: stopped %d kept %d deps %v, want 1, 1, SCHED and RCU", c.TickStopped, c.TickKept, c.TickDeps)
	}
}

// Work queued onto CPU 1 is counted by function and target (from the
// record's cpu: -1, an unbound pool, is not), and work run there timed.
func TestClassicTwinWork(t *testing.T) {
	tw := newClassicTwin(t)
	tw.record(0, ctQueueWork, field{off: "off_queue_work_function", val: 0xabc}, field{off: "off_queue_work_cpu", val: 1})
	tw.record(0, ctQueueWork, field{off: "off_queue_work_function", val: 0xdef}, field{off: "off_queue_work_cpu", val: 0xffffffff})
	var k isoIsoQueueKey
	var per []isoIsoQueued
	n, it := 0, tw.objs.IsoQueue.Iterate()
	for it.Next(&k, &per) {
		n++
		if k.Fn != 0xabc || k.Cpu != 1 || per[0].Count != 1 {
			t.Errorf("queued %+v (%d on CPU 0), want 0xabc onto CPU 1 once", k, per[0].Count)
		}
	}
	if n != 1 {
		t.Errorf("%d queue entries, want 1", n)
	}
	tw.record(1, ctWorkStart, field{off: "off_work_start_function", val: 0xabc})
	tw.record(1, ctWorkEnd, field{off: "off_work_end_function", val: 0xabc})
	if got := timeOf(t, tw.objs.IsoWorks, uint64(0xabc)); got.Count != 1 {
		t.Errorf("work 0xabc: %+v, want one run", got)
	}
}

// sched_switch's stub takes prev's tid and comm from the record; its
// kthread flag and CPU count are left to user space (0).
func TestClassicTwinSwitch(t *testing.T) {
	tw := newClassicTwin(t)
	sw := func(tid uint64, comm string) {
		tw.record(1, ctSwitch, field{off: "off_switch_prev_pid", val: tid}, field{off: "off_switch_prev_comm", comm: comm})
	}
	sw(42, "control") // first seen: no start
	sw(4242, "intruder")
	sw(42, "control")
	var per []isoIsoTask
	if err := tw.objs.IsoTasks.Lookup(uint32(4242), &per); err != nil {
		t.Fatal(err)
	}
	v := per[1]
	if v.Run.Count != 1 || strings.TrimRight(string(int8sToBytes(v.Comm[:])), "\x00") != "intruder" || v.Kthread != 0 || v.NrCpus != 0 {
		t.Errorf("task 4242: %+v, want one run as intruder, kthread and CPUs unknown (0)", v)
	}
}

func int8sToBytes(s []int8) []byte {
	b := make([]byte, len(s))
	for i, c := range s {
		b[i] = byte(c)
	}
	return b
}

// A TLB shootdown queued from CPU 0 (csd_queue_cpu's record) and received
// on CPU 1 is attributed to the sending thread, with its kind.
func TestClassicTwinIPI(t *testing.T) {
	runtime.LockOSThread() // never unlocked: the pinned thread ends with the test's goroutine
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	tw := newClassicTwin(t)
	me := uint32(unix.Gettid())
	// Run on this thread's CPU 0, the send's current task is the test's thread.
	tw.record(0, ctCsdQueue, field{off: "off_csd_queue_cpu", val: 1}, field{off: "off_csd_queue_callsite", val: 0x1000},
		field{off: "off_csd_queue_func", val: twinTLB})
	tw.record(0, ctCsdQueue, field{off: "off_csd_queue_cpu", val: 0}, field{off: "off_csd_queue_func", val: twinTLB}) // to CPU 0: not watched
	tw.record(1, ctCallSingleEntry)
	tw.record(1, ctCallSingleExit)
	var k isoRtsIpiKey
	var v isoRtsIpiPair
	n, it := 0, tw.objs.IpiPairs.Iterate()
	for it.Next(&k, &v) {
		n++
		if k.Sender != me || k.Cpu != 1 || isoRtsIpiKind(k.Kind) != isoRtsIpiKindRTS_IPI_TLB || v.Count != 1 || v.Callsite != 0x1000 {
			t.Errorf("IPI %+v %+v, want one TLB shootdown from %d onto CPU 1", k, v, me)
		}
	}
	if n != 1 {
		t.Errorf("%d IPI pairs, want 1", n)
	}
	// A reschedule (ipi_send_cpu's record, no callback) onto CPU 1.
	tw.record(0, ctIPISend, field{off: "off_ipi_send_cpu", val: 1}, field{off: "off_ipi_send_callsite", val: 0x2000},
		field{off: "off_ipi_send_callback"})
	tw.record(1, ctReschedEntry)
	tw.record(1, ctReschedExit)
	resched := isoRtsIpiKey{Sender: me, Cpu: 1, Kind: uint8(isoRtsIpiKindRTS_IPI_RESCHED)}
	if err := tw.objs.IpiPairs.Lookup(resched, &v); err != nil || v.Count != 1 || v.Callsite != 0x2000 {
		t.Errorf("reschedule from %d onto CPU 1: %+v %v, want one, callsite 0x2000", me, v, err)
	}
	var slot isoRtsIpiSlot
	if err := tw.objs.IpiSlots.Lookup(uint32(0*3+0), &slot); err != nil || slot.Ts != 0 {
		t.Errorf("a send to CPU 0 (not watched) filled its slot: %+v %v", slot, err)
	}
}

// What sched_switch's record lacks is read from /proc for live tasks:
// kthreadd is a kernel thread that may move, this thread pinned to CPU 0
// a user task on one CPU, whose tgid is this process; a task gone keeps
// what the record told.
func TestClassicTaskInfo(t *testing.T) {
	runtime.LockOSThread() // never unlocked: the pinned thread ends with the test's goroutine
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	kthreadd := TaskRow{TID: 2, PID: 2}
	classicTaskInfo(&kthreadd)
	if !kthreadd.Kthread || kthreadd.PerCPU {
		t.Errorf("kthreadd: %+v, want a kernel thread that may move", kthreadd)
	}
	me := TaskRow{TID: uint32(unix.Gettid())}
	classicTaskInfo(&me)
	if me.Kthread || !me.PerCPU || me.PID != uint32(os.Getpid()) {
		t.Errorf("this thread: %+v, want a user task of pid %d on one CPU", me, os.Getpid())
	}
	gone := TaskRow{TID: 1 << 30, PID: 7}
	classicTaskInfo(&gone)
	if gone != (TaskRow{TID: 1 << 30, PID: 7}) {
		t.Errorf("a task gone changed: %+v", gone)
	}
}

// A classic run's report ends with why the classic engine ran and what
// it cannot see; a BTF run's says nothing of its engine.
func TestPrintEngine(t *testing.T) {
	var b strings.Builder
	Print(&b, &Result{Engine: engine.EngineClassic, EngineNote: "forced by --engine classic", EngineLimits: ClassicLimits})
	for _, w := range append([]string{"classic engine (forced by --engine classic); it cannot see:"}, ClassicLimits...) {
		if !strings.Contains(b.String(), w) {
			t.Errorf("report %q lacks %q", b.String(), w)
		}
	}
	b.Reset()
	Print(&b, &Result{Engine: engine.EngineBTF})
	if strings.Contains(b.String(), "engine") {
		t.Errorf("a BTF run's report names its engine: %q", b.String())
	}
}

// A wheel timer armed from CPU 0 for CPU 1 (timer_start's flags) counts as
// a remote arming; wheel and hrtimer callbacks on CPU 1 are timed, an
// hrtimer's soft when it starts inside the HRTIMER softirq.
func TestClassicTwinTimers(t *testing.T) {
	tw := newClassicTwin(t)
	tw.record(0, ctTimerStart, field{off: "off_timer_start_timer", val: 0x5000}, field{off: "off_timer_start_function", val: 0xf00},
		field{off: "off_timer_start_flags", val: 1 | 1<<20}) // CPU 1, a flag above the CPU mask
	tw.record(0, ctTimerStart, field{off: "off_timer_start_timer", val: 0x6000}, field{off: "off_timer_start_function", val: 0xf01},
		field{off: "off_timer_start_flags", val: 0}) // for CPU 0: not watched
	var k isoIsoTimerKey
	var per []isoIsoTimerArmed
	n, it := 0, tw.objs.IsoTimerArms.Iterate()
	for it.Next(&k, &per) {
		n++
		if k.Fn != 0xf00 || k.Cpu != 1 || k.FromCpu != 0 || k.Kind != 2 || per[0].Count != 1 {
			t.Errorf("armed %+v (%d on CPU 0), want 0xf00 for CPU 1 from CPU 0, a wheel timer, once", k, per[0].Count)
		}
	}
	if n != 1 {
		t.Errorf("%d armings, want 1", n)
	}
	tw.record(1, ctTimerEntry, field{off: "off_timer_entry_timer", val: 0x5000}, field{off: "off_timer_entry_function", val: 0xf00})
	tw.record(1, ctTimerExit, field{off: "off_timer_exit_timer", val: 0x5000})
	tw.record(1, ctHrtimerEntry, field{off: "off_hrtimer_entry_hrtimer", val: 0x7000}, field{off: "off_hrtimer_entry_function", val: 0xf02})
	tw.record(1, ctHrtimerExit, field{off: "off_hrtimer_exit_hrtimer", val: 0x7000})
	tw.record(1, ctSoftirqEntry, field{off: "off_softirq_entry_vec", val: 8}) // HRTIMER
	tw.record(1, ctHrtimerEntry, field{off: "off_hrtimer_entry_hrtimer", val: 0x8000}, field{off: "off_hrtimer_entry_function", val: 0xf03})
	tw.record(1, ctHrtimerExit, field{off: "off_hrtimer_exit_hrtimer", val: 0x8000})
	tw.record(1, ctSoftirqExit, field{off: "off_softirq_exit_vec", val: 8})
	want := map[uint64]uint16{0xf00: 2, 0xf02: 0, 0xf03: 1} // wheel, hard, soft
	var tk isoIsoTimerKey
	var times []isoIsoTime
	got := map[uint64]uint16{}
	it = tw.objs.IsoTimerExps.Iterate()
	for it.Next(&tk, &times) {
		if tk.Cpu != 1 || tk.FromCpu != 1 || times[1].Count != 1 {
			t.Errorf("expiry %+v: %+v, want one on CPU 1 (its own base)", tk, times[1])
		}
		got[tk.Fn] = tk.Kind
	}
	if len(got) != len(want) {
		t.Errorf("expiries %v, want %v", got, want)
	}
	for fn, kind := range want {
		if k, ok := got[fn]; !ok || k != kind {
			t.Errorf("callback %#x: kind %d (seen %v), want %d", fn, k, ok, kind)
		}
	}
}
