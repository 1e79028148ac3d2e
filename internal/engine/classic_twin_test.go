package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/metric"
)

// classicTwin runs the classic engine's own hooks (classic_test.bpf.c
// includes classic.bpf.c) on synthetic tracepoint records laid out as in
// the captured 6.18 formats.
type classicTwin struct {
	t    *testing.T
	objs classictwinObjects
	offs map[string]uint32
}

// Hook selectors of twin_record.
const (
	twinSwitch = iota
	twinWaking
	twinNewtask
	twinExit
	twinTimerEntry
	twinTimerExit
	twinSoftirqEntry
	twinSoftirqExit
	twinRename
	twinIRQEntry
	twinIRQExit
	twinHrtimerStart
	twinCsdQueue
	twinIPISend
	twinCallSingleEntry
	twinCallSingleExit
	twinReschedEntry
	twinReschedExit
	twinIPIReasonEntry // ipi:ipi_entry, ctx[11] the reason's number (classic_test.bpf.c)
	twinIPIReasonExit
	twinNMIHandler
)

// twinCPU is the CPU the twin's test runs run on (its per-CPU state).
const twinCPU = 0

// onTwinCPU keeps the test on this thread, run on twinCPU, until it ends
// (the classic programs take the current task from the running thread);
// the thread's affinity is given back before it is unlocked, so that no
// pinned thread is left to the tests after (a child forked from one
// inherits the pin).
func onTwinCPU(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	var was, on unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	on.Set(twinCPU)
	if err := unix.SchedSetaffinity(0, &on); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.SchedSetaffinity(0, &was) // best effort: the thread is unlocked after
		runtime.UnlockOSThread()
	})
}

func newClassicTwin(t *testing.T) *classicTwin {
	t.Helper()
	return newClassicTwinWith(t, nil, nil)
}

// newClassicTwinWith is newClassicTwin with these load-time settings, and
// a spec edited before the load (edit may be nil).
func newClassicTwinWith(t *testing.T, vars map[string]any, edit func(*ebpf.CollectionSpec, map[string]uint32)) *classicTwin {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF (CI runs as root)")
	}
	spec, err := loadClassictwinVariant()
	if err != nil {
		t.Fatal(err)
	}
	offs, err := classicOffsets(readCaptured(nil))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(spec, offs)
	}
	for name, v := range offs {
		if err := spec.Variables[name].Set(v); err != nil {
			t.Fatal(err)
		}
	}
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	tw := &classicTwin{t: t, offs: offs}
	if err := spec.LoadAndAssign(&tw.objs, nil); err != nil {
		t.Fatalf("loading the classic twin: %v", err)
	}
	t.Cleanup(func() { tw.objs.Close() })
	return tw
}

// field is one value of a record at its tracefs offset (off_* variable).
type field struct {
	off  string
	size int
	val  uint64
	comm string
}

// record runs hook on the record made of fields; it returns the hook's value.
func (tw *classicTwin) record(hook uint64, fields ...field) uint32 {
	tw.t.Helper()
	var rec [80]byte
	for _, f := range fields {
		o, ok := tw.offs[f.off]
		if !ok || int(o)+f.size > len(rec) {
			tw.t.Fatalf("field %s at %d does not fit", f.off, o)
		}
		switch {
		case f.comm != "":
			copy(rec[o:o+16], f.comm)
		case f.size == 4:
			binary.LittleEndian.PutUint32(rec[o:], uint32(f.val))
		default:
			binary.LittleEndian.PutUint64(rec[o:], f.val)
		}
	}
	var args []uint64
	for i := 0; i < len(rec); i += 8 {
		args = append(args, binary.LittleEndian.Uint64(rec[i:]))
	}
	args = append(args, hook, 0) // ctx[11]: the IPI reason's number, read by one hook (so always passed: the kernel wants the whole context read)
	ret, err := tw.objs.TwinRecord.Run(&ebpf.RunOptions{Context: args, CPU: twinCPU, Flags: unix.BPF_F_TEST_RUN_ON_CPU})
	if err != nil {
		tw.t.Fatalf("test run: %v", err)
	}
	return ret
}

// scan registers an existing task as Engine.Scan does.
func (tw *classicTwin) scan(tid uint32, target uint32, sleeping bool, comm string) {
	tw.t.Helper()
	var key [16]byte
	copy(key[:15], comm)
	s := uint64(0)
	if sleeping {
		s = 1
	}
	args := []uint64{uint64(tid), uint64(tid), uint64(target), 0, s, 120,
		binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])}
	if ret, err := tw.objs.ClassicScan.Run(&ebpf.RunOptions{Context: args}); err != nil || ret != 0 {
		tw.t.Fatalf("scan %d: %d %v", tid, ret, err)
	}
}

func (tw *classicTwin) waking(tid uint32) {
	tw.record(twinWaking, field{off: "off_waking_pid", size: 4, val: uint64(tid)},
		field{off: "off_waking_prio", size: 4, val: 120}, field{off: "off_waking_target_cpu", size: 4})
}

// switchIn switches tid in after the idle task.
func (tw *classicTwin) switchIn(tid uint32, comm string) {
	tw.record(twinSwitch, field{off: "off_switch_prev_pid", size: 4}, field{off: "off_switch_prev_prio", size: 4, val: 120},
		field{off: "off_switch_prev_state", size: 8}, field{off: "off_switch_next_comm", comm: comm},
		field{off: "off_switch_next_pid", size: 4, val: uint64(tid)}, field{off: "off_switch_next_prio", size: 4, val: 120})
}

// newtask: a new process tid, forked by the test's own (untracked) thread.
func (tw *classicTwin) newtask(tid uint32, comm string) {
	tw.record(twinNewtask, field{off: "off_newtask_pid", size: 4, val: uint64(tid)},
		field{off: "off_newtask_comm", comm: comm}, field{off: "off_newtask_clone_flags", size: 8})
}

// state returns tid's entry in the classic engine's hash, nil if none.
func (tw *classicTwin) state(tid uint32) *bpfRtsTaskState {
	var st bpfRtsTaskState
	if err := tw.objs.Tasks.Lookup(tid, &st); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		tw.t.Fatal(err)
	}
	return &st
}

// stats: the statistics of tracking id once every task's held samples
// are settled, as at the end of a run (settle_held).
func (tw *classicTwin) stats(id uint64) *TaskStats {
	tw.t.Helper()
	if _, err := tw.objs.SettleHeld.Run(&ebpf.RunOptions{}); err != nil {
		tw.t.Fatalf("settle_held: %v", err)
	}
	var k bpfRtsTaskStats
	if err := tw.objs.Stats.Lookup(id, &k); err != nil {
		tw.t.Fatalf("stats of id %d: %v", id, err)
	}
	s, _ := histCarries{}.join(&k) // no bucket past 65535 samples here
	return s
}

// notices drains the notices ring: type and id of each.
func (tw *classicTwin) notices() [][2]uint64 {
	r, err := ringbuf.NewReader(tw.objs.Notices)
	if err != nil {
		tw.t.Fatal(err)
	}
	defer r.Close()
	r.SetDeadline(time.Now())
	var out [][2]uint64
	for {
		rec, err := r.Read()
		if err != nil {
			return out
		}
		var n Notice
		if len(rec.RawSample) >= binary.Size(n) {
			_ = binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &n)
			out = append(out, [2]uint64{uint64(n.Type), n.Id})
		}
	}
}

// A new task at a tracked tid whose exit was missed (sched_process_exit
// lost, or the tid reused at once) is a new task: the stale entry gets its
// final report (exited, TASK_EXIT notice) and is removed, and the new task
// starts afresh under a new id, so that the old task's pending wakeup
// gives the new one no latency sample. Control: the same wakeup and
// switch-in without the new task give one. And a reused tid nobody wants is
// left untracked.
func TestClassicTwinPIDReuse(t *testing.T) {
	tw := newClassicTwin(t)
	const reused, control = 4242, 4343
	for _, tid := range []uint32{reused, control} {
		if err := tw.objs.WantTid.Put(tid, bpfRtsTarget{Index: 7}); err != nil {
			t.Fatal(err)
		}
		tw.scan(tid, 7, true, "old")
		tw.waking(tid)
		if st := tw.state(tid); st == nil || st.WakeTs == 0 {
			t.Fatalf("tid %d: no pending wakeup after sched_waking: %+v", tid, st)
		}
	}
	oldID := tw.state(reused).Id
	tw.notices() // the TASK_START notices of the scan

	tw.newtask(reused, "new")
	st := tw.state(reused)
	if st == nil || st.Id == oldID {
		t.Fatalf("the new task at tid %d kept id %d: %+v", reused, oldID, st)
	}
	if st.WakeTs != 0 || st.State != 0 {
		t.Errorf("the new task inherited the old one's state: wake_ts %d, state %d", st.WakeTs, st.State)
	}
	if old := tw.stats(oldID); old.Exited != 1 {
		t.Errorf("the stale task was not reported as exited: exited %d", old.Exited)
	}
	if got, want := tw.notices(), [][2]uint64{{uint64(NoticeTaskExit), oldID}, {uint64(NoticeTaskStart), st.Id}}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("notices %v, want %v (exit of the old task, start of the new)", got, want)
	}
	if c := CommString(tw.stats(st.Id).Comm); c != "new" {
		t.Errorf("new task's comm %q", c)
	}

	tw.switchIn(reused, "new")
	tw.switchIn(control, "old")
	if n := tw.stats(st.Id).M[metric.Latency].Count; n != 0 {
		t.Errorf("the new task got %d latency samples from the old task's wakeup", n)
	}
	if n := tw.stats(tw.state(control).Id).M[metric.Latency].Count; n != 1 {
		t.Errorf("control: %d latency samples from a wakeup and a switch-in, want 1", n)
	}

	// The tid reused again by a task that is not wanted: the stale entry
	// goes, nothing replaces it.
	if err := tw.objs.WantTid.Delete(uint32(reused)); err != nil {
		t.Fatal(err)
	}
	newID := st.Id
	tw.newtask(reused, "other")
	if st := tw.state(reused); st != nil {
		t.Errorf("an unwanted task at the reused tid is tracked: %+v", st)
	}
	if s := tw.stats(newID); s.Exited != 1 {
		t.Errorf("the replaced task was not reported as exited")
	}
}

// callbacks returns the soft and hard hrtimer callbacks in progress on twinCPU.
func (tw *classicTwin) callbacks() (soft, hard uint64) {
	tw.t.Helper()
	var per []bpfRtsCpuState
	if err := tw.objs.Cpus.Lookup(uint32(0), &per); err != nil {
		tw.t.Fatal(err)
	}
	return per[twinCPU].CbFunction[0], per[twinCPU].CbFunction[1]
}

// An hrtimer callback is hard or soft by the CPU's context, not by the
// record's common header, which the kernel overwrites with a pt_regs
// pointer for BPF programs: hard outside the HRTIMER softirq (the injected
// hard-IRQ spins of irq-noise were all taken for soft before), soft in it,
// and hard again when it interrupts a soft callback there; each exit ends
// the callback it belongs to. The records' headers here have the hard-IRQ
// flag clear.
func TestClassicTwinTimerContext(t *testing.T) {
	tw := newClassicTwin(t)
	entry := func(fn uint64) {
		tw.record(twinTimerEntry, field{off: "off_hrentry_function", size: 8, val: fn},
			field{off: "off_hrentry_hrtimer", size: 8, val: fn + 1}, field{off: "off_hrentry_now", size: 8, val: 1})
	}
	exit := func() { tw.record(twinTimerExit, field{off: "off_hrexit_hrtimer", size: 8}) }
	softirq := func(vec uint64) { tw.record(twinSoftirqEntry, field{off: "off_softirq_vec", size: 4, val: vec}) }
	softirqEnd := func() { tw.record(twinSoftirqExit, field{off: "off_softirq_vec", size: 4}) }
	check := func(what string, soft, hard uint64) {
		t.Helper()
		if s, h := tw.callbacks(); s != soft || h != hard {
			t.Errorf("%s: soft %#x hard %#x in progress, want %#x %#x", what, s, h, soft, hard)
		}
	}
	const hrtimerSoftirq, timerSoftirq = 8, 1
	entry(0xa000)
	check("timer interrupt", 0, 0xa000)
	exit()
	check("after it", 0, 0)

	softirq(hrtimerSoftirq)
	entry(0xb000)
	check("HRTIMER softirq", 0xb000, 0)
	entry(0xc000)
	check("timer interrupt during a soft callback", 0xb000, 0xc000)
	exit()
	check("its end", 0xb000, 0)
	exit()
	check("the soft callback's end", 0, 0)
	softirqEnd()

	softirq(timerSoftirq)
	entry(0xd000)
	check("timer interrupt in another softirq", 0, 0xd000)
	exit()
	softirqEnd()
}

// cpuState returns the engine's state of twinCPU.
func (tw *classicTwin) cpuState() bpfRtsCpuState {
	tw.t.Helper()
	var per []bpfRtsCpuState
	if err := tw.objs.Cpus.Lookup(uint32(0), &per); err != nil {
		tw.t.Fatal(err)
	}
	return per[twinCPU]
}

// Hard IRQs through the classic stubs and the shared bodies
// (handlers.bpf.h): nested handlers count their depth, the time in them is
// summed when the outermost ends, and a sched_switch ends any left open (a
// classic program does not run while another runs on its CPU, so an exit
// can be lost; the switch body does it under its classic flag only).
func TestClassicTwinIRQ(t *testing.T) {
	tw := newClassicTwin(t)
	entry := func(irq uint64) { tw.record(twinIRQEntry, field{off: "off_irq_entry_irq", size: 4, val: irq}) }
	exit := func(irq uint64) {
		tw.record(twinIRQExit, field{off: "off_irq_exit_irq", size: 4, val: irq}, field{off: "off_irq_exit_ret", size: 4, val: 1})
	}
	entry(11)
	entry(12)
	if cs := tw.cpuState(); cs.IrqDepth != 2 || cs.IrqNr != 12 {
		t.Fatalf("two nested handlers: depth %d, last IRQ %d; want 2, 12", cs.IrqDepth, cs.IrqNr)
	}
	exit(12)
	if cs := tw.cpuState(); cs.IrqDepth != 1 || cs.IrqNs != 0 {
		t.Errorf("the inner handler's end: depth %d, IRQ time %d; want 1, 0 (counted at the outer end)", cs.IrqDepth, cs.IrqNs)
	}
	exit(11)
	cs := tw.cpuState()
	if cs.IrqDepth != 0 || cs.IrqNs == 0 {
		t.Errorf("the outer handler's end: depth %d, IRQ time %d; want 0, > 0", cs.IrqDepth, cs.IrqNs)
	}
	irqNs := cs.IrqNs
	exit(11) // an exit without its entry (the entry was skipped)
	if cs := tw.cpuState(); cs.IrqDepth != 0 || cs.IrqNs != irqNs {
		t.Errorf("an unmatched exit: depth %d, IRQ time %d; want 0, %d", cs.IrqDepth, cs.IrqNs, irqNs)
	}

	entry(13) // its exit is lost
	tw.switchIn(1, "next")
	if cs := tw.cpuState(); cs.IrqDepth != 0 {
		t.Errorf("a switch after a lost irq_handler_exit: depth %d, want 0", cs.IrqDepth)
	}
}

// rename runs task_rename for tid with newcomm as the record holds it: all
// 16 bytes, whatever follows the name's NUL.
func (tw *classicTwin) rename(tid uint32, newcomm string) {
	tw.t.Helper()
	if len(newcomm) != 16 {
		tw.t.Fatalf("newcomm %q: %d bytes, want 16", newcomm, len(newcomm))
	}
	tw.record(twinRename, field{off: "off_rename_pid", size: 4, val: uint64(tid)},
		field{off: "off_rename_newcomm", comm: newcomm})
}

// sleep switches tid out asleep (prev_state S) for the idle task.
func (tw *classicTwin) sleep(tid uint32) {
	tw.record(twinSwitch, field{off: "off_switch_prev_pid", size: 4, val: uint64(tid)},
		field{off: "off_switch_prev_prio", size: 4, val: 120}, field{off: "off_switch_prev_state", size: 8, val: 1},
		field{off: "off_switch_next_pid", size: 4}, field{off: "off_switch_next_prio", size: 4, val: 120})
}

// exit runs sched_process_exit for tid.
func (tw *classicTwin) exit(tid uint32) {
	tw.record(twinExit, field{off: "off_exit_pid", size: 4, val: uint64(tid)}, field{off: "off_exit_prio", size: 4, val: 120})
}

// parkedThread returns the tid of another thread of this process than its
// leader and the caller's, which waits until release is called; 0 when
// none came in 10 s.
func parkedThread() (tid uint32, release func()) {
	tids, done := make(chan uint32), make(chan struct{})
	var run func()
	run = func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			defer runtime.UnlockOSThread() // the leader, held until the other thread is released
			go run()
			<-done
			return
		}
		tids <- uint32(unix.Gettid())
		<-done
		runtime.UnlockOSThread()
	}
	go run()
	select {
	case tid = <-tids:
	case <-time.After(10 * time.Second):
	}
	return tid, func() { close(done) }
}

// onNonLeaderThread runs fn on a thread of this process that is not its
// leader, pinned to twinCPU: the twin's test runs (BPF_F_TEST_RUN_ON_CPU)
// then run in that thread's own context, so bpf_get_current_pid_tgid gives
// its tid and the test's pid, as for a thread that renames itself. The
// thread is discarded afterwards (left locked: it exits with fn's goroutine).
func onNonLeaderThread(fn func(tid, pid uint32)) error {
	var err error
	var run func(done chan<- struct{})
	run = func(done chan<- struct{}) {
		defer close(done)
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The leader: held here, so that the goroutine below gets another thread.
			defer runtime.UnlockOSThread()
			inner := make(chan struct{})
			go run(inner)
			<-inner
			return
		}
		var set unix.CPUSet
		set.Set(twinCPU)
		if err = unix.SchedSetaffinity(0, &set); err == nil {
			fn(uint32(unix.Gettid()), uint32(unix.Getpid()))
		}
	}
	done := make(chan struct{})
	go run(done)
	<-done
	return err
}

// A thread that a --comm target wants under the name it gets later is
// tracked from task_rename, though it existed under another name before
// the watch (no task_newtask; the scan did not want it), whether it names
// itself (prctl(PR_SET_NAME), as internal/workload/thread.go's Go thread
// does) or a sibling names it through /proc/self/task/TID/comm
// (pthread_setname_np of another thread). The kernel strscpy()s newcomm
// into the record and leaves the bytes after its NUL as earlier records
// left them in the per-CPU perf buffer: here those of a sched_switch
// record (prev_state's high word, next_comm "heal...") and the bytes
// bpftrace showed after "rtscmp-x" on 6.18. Looked up as read, the name
// missed want_comm, and the classic engine never tracked the Go thread.
func TestClassicTwinRename(t *testing.T) {
	tw := newClassicTwin(t)
	want := func(name string, index uint32) {
		var key [16]byte
		copy(key[:15], name)
		if err := tw.objs.WantComm.Put(key, bpfRtsTarget{Index: index}); err != nil {
			t.Fatal(err)
		}
	}
	want("control", 5)
	want("rtscmp-x", 6)
	const sibling, unwanted = 4194000, 4194001 // tids of no thread here
	const runnable, sleeping = 0, 2            // RTS_TS_*

	// check: tid is tracked with these; pid 0: any pid.
	check := func(what string, tid, pid, target uint32, state uint8, comm string) *bpfRtsTaskState {
		t.Helper()
		st := tw.state(tid)
		if st == nil {
			t.Errorf("%s: tid %d is not tracked after its rename to %q", what, tid, comm)
			return nil
		}
		s := tw.stats(st.Id)
		if s.Tid != tid || (pid != 0 && s.Pid != pid) || s.Target != target || st.State != state || CommString(s.Comm) != comm {
			t.Errorf("%s: tid %d pid %d target %d state %d comm %q, want %d %d %d %d %q",
				what, s.Tid, s.Pid, s.Target, st.State, CommString(s.Comm), tid, pid, target, state, comm)
		}
		return st
	}

	err := onNonLeaderThread(func(tid, pid uint32) {
		if tid == pid {
			t.Errorf("tid %d is the leader", tid)
			return
		}
		// It ran, untracked, under its first name.
		tw.switchIn(tid, "rtscope.test")
		tw.rename(tid, "control\x00\x00\x00\x00\x00heal")
		st := check("renamed by itself", tid, pid, 5, runnable, "control")
		if st != nil {
			// And it is measured: a sleep, a wakeup and a switch-in give a latency sample.
			tw.sleep(tid)
			tw.waking(tid)
			tw.switchIn(tid, "control")
			if n := tw.stats(st.Id).M[metric.Latency].Count; n != 1 {
				t.Errorf("renamed by itself: %d latency samples, want 1", n)
			}
		}

		// Through /proc by this thread, its sibling: the renamed thread is not current.
		tw.rename(sibling, "rtscmp-x\x00ks\x00\x00-f\x00")
		// Its pid is not checked: the record does not tell a sibling's
		// rename from a kthread's by its creator, so the hook takes the tid.
		check("renamed through /proc", sibling, 0, 6, sleeping, "rtscmp-x")

		// A live sibling renamed so: user space corrects its pid from
		// /proc/TID/status when it learns of it (its start notice), and
		// keeps it after its exit. A tid of no live task keeps the hook's.
		other, release := parkedThread()
		defer release()
		if other == 0 {
			t.Error("no thread parked in 10 s")
			return
		}
		tw.rename(other, "rtscmp-x\x00ks\x00\x00-f\x00")
		st = check("live sibling renamed through /proc", other, 0, 6, sleeping, "rtscmp-x")
		if st == nil {
			return
		}
		e := &Engine{back: classicBackend{}, Features: Features{Engine: EngineClassic}}
		e.objs.Stats = tw.objs.Stats
		e.classicLearn(st.Id, other)
		s := tw.stats(st.Id)
		e.classicIdentity(s)
		if s.Pid != pid || s.Tid != other {
			t.Errorf("live sibling renamed through /proc: tid %d pid %d, want %d %d", s.Tid, s.Pid, other, pid)
		}
		tw.exit(other)
		s = tw.stats(st.Id)
		e.classicIdentity(s)
		if s.Exited != 1 || s.Pid != pid {
			t.Errorf("after its exit: exited %d pid %d, want 1 %d", s.Exited, s.Pid, pid)
		}
		gone := tw.state(sibling)
		e.classicLearn(gone.Id, sibling)
		s = tw.stats(gone.Id)
		e.classicIdentity(s)
		if s.Pid != sibling {
			t.Errorf("tid %d of no task: pid %d, want the hook's %d", sibling, s.Pid, sibling)
		}
	})
	if err != nil {
		t.Fatalf("pinning a thread to CPU %d: %v", twinCPU, err)
	}

	tw.rename(unwanted, "contro\x00\x00\x00\x00\x00\x00heal")
	if st := tw.state(unwanted); st != nil {
		t.Errorf("a task renamed to an unwanted name is tracked: %+v", st)
	}
}
