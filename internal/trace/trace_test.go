package trace

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// fakeRings is a flight recorder in memory: per CPU, events in sequence order.
type fakeRings struct {
	per uint32
	evs [][]engine.Event // all events ever written, per CPU
}

func (f *fakeRings) NumCPU() int          { return len(f.evs) }
func (f *fakeRings) FlightPerCPU() uint32 { return f.per }
func (f *fakeRings) Heads() ([]uint64, error) {
	h := make([]uint64, len(f.evs))
	for i, e := range f.evs {
		h[i] = uint64(len(e))
	}
	return h, nil
}

// FlightRing returns what the ring slots hold now: the latest event
// written to each.
func (f *fakeRings) FlightRing(cpu int) []engine.Event {
	ring := make([]engine.Event, f.per)
	for seq, e := range f.evs[cpu] {
		ring[uint32(seq)&(f.per-1)] = e
	}
	return ring
}

func (f *fakeRings) add(cpu int, ts uint64, typ uint8, a, b uint32, comm string) {
	for len(f.evs) <= cpu {
		f.evs = append(f.evs, nil)
	}
	e := engine.Event{Ts: ts, Seq: uint32(len(f.evs[cpu])), Cpu: uint16(cpu), Type: typ, A: a, B: b}
	for i := 0; i < len(comm) && i < 15; i++ {
		e.Comm[i] = int8(comm[i])
	}
	f.evs[cpu] = append(f.evs[cpu], e)
}

func TestCutKeepsWindowContextAndInvolvedCPUs(t *testing.T) {
	f := &fakeRings{per: 64}
	f.add(0, 100, evSwitch, 0, 50, "other") // before the context switch: dropped
	f.add(0, 900, evSwitch, 50, 60, "hog")  // last switch before the window: context
	f.add(0, 1000, evWakeup, 7, 60, "hog")  // the tracked task 7 is woken by hog
	f.add(0, 1500, evIRQEntry, 33, 0, "")
	f.add(0, 1600, evIRQExit, 33, 0, "")
	f.add(0, 3000, evSwitch, 60, 7, "control") // window end
	f.add(0, 5000, evSwitch, 7, 0, "idle")     // after: dropped
	f.add(1, 1200, evSwitch, 80, 81, "far")    // CPU 1 not involved: dropped
	f.add(1, 1300, evMigrate, 7, 1, "")        // names task 7: kept
	tr, err := Cut(f, Window{Metric: "latency", TID: 7, Value: 2000, Start: 1000, End: 3000, CPUStart: 0, CPUEnd: 0}, NewNames(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Events {
		got = append(got, e.Type.String()+"@"+itoa(int(e.T)))
	}
	want := "switch@-100 wakeup@0 migrate@300 irq_entry@500 irq_exit@600 switch@2000"
	if strings.Join(got, " ") != want {
		t.Errorf("events %v, want %s", got, want)
	}
	if tr.Truncated || len(tr.CPUs) != 1 || tr.CPUs[0] != 0 {
		t.Errorf("truncated %v cpus %v", tr.Truncated, tr.CPUs)
	}
	// Names come from the events: prev of the last switch was named by an earlier next.
	last := tr.Events[len(tr.Events)-1]
	if last.PrevComm != "hog" || last.NextComm != "control" {
		t.Errorf("names %q -> %q", last.PrevComm, last.NextComm)
	}
	if w := tr.Events[1].Waker; w == nil || w.Kind != "task" || w.TID != 60 || w.Comm != "hog" {
		t.Errorf("waker %+v", w)
	}
}

func TestCutDetectsOverwrittenStart(t *testing.T) {
	f := &fakeRings{per: 8}
	for i := 0; i < 40; i++ { // 40 events in an 8-slot ring: only the last 8 remain
		f.add(0, uint64(1000+i*10), evSwitch, 1, 2, "x")
	}
	tr, err := Cut(f, Window{Metric: "cycle", TID: 2, Start: 1000, End: 1400, CPUStart: 0, CPUEnd: 0}, NewNames(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Truncated || !strings.Contains(tr.Note, "CPU 0") {
		t.Errorf("overwritten window not reported: truncated=%v note=%q", tr.Truncated, tr.Note)
	}
	if len(tr.Events) != 8 || !strings.Contains(tr.Note, "its first events are missing") {
		t.Errorf("%d events kept, want the 8 that remain; note %q", len(tr.Events), tr.Note)
	}
	if len(tr.Overwritten) != 1 || tr.Overwritten[0] != 0 {
		t.Errorf("overwritten CPUs %v, want [0]: the analysis marks what CPU 0 ran before its first event unknown", tr.Overwritten)
	}
	// Read after the ring lapped past the window's end: nothing is left,
	// and the note says so instead of "its first events".
	tr, err = Cut(f, Window{Metric: "cycle", TID: 2, Start: 1000, End: 1200, CPUStart: 0, CPUEnd: 0}, NewNames(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Truncated || len(tr.Events) != 0 || !strings.Contains(tr.Note, "CPU 0 was overwritten before the window could be read: none of its events there are left") {
		t.Errorf("a window read too late: truncated=%v, %d events, note=%q", tr.Truncated, len(tr.Events), tr.Note)
	}
}

func TestSleepReasonAndInterruptedFrames(t *testing.T) {
	cases := []struct {
		stack []string
		armed bool
		state uint32
		want  Reason
	}{
		{[]string{"__schedule", "schedule", "futex_wait_queue", "futex_wait"}, false, 1, "futex wait"},
		{[]string{"schedule", "rt_mutex_slowlock_block", "futex_lock_pi"}, false, 2, "PI futex lock"},
		{[]string{"schedule", "do_nanosleep", "hrtimer_nanosleep"}, true, 1, "timer sleep (nanosleep)"},
		{[]string{"schedule", "rtlock_slowlock_locked"}, false, 0x1000, "rtlock wait (PREEMPT_RT sleeping spinlock)"},
		{nil, true, 1, "timer sleep"},
		{[]string{"schedule", "mystery_wait"}, false, 1, "other wait (schedule)"},
	}
	for _, c := range cases {
		if got := SleepReason(c.stack, c.armed, c.state); got != c.want {
			t.Errorf("%v: %q, want %q", c.stack, got, c.want)
		}
	}
	frames := []string{"bpf_trace_run2", "hrtimer_interrupt", "__sysvec_apic_timer_interrupt",
		"asm_sysvec_apic_timer_interrupt", "bpf_prog_test_run_raw_tp", "__sys_bpf"}
	if got := InterruptedFrames(frames); strings.Join(got, ",") != "bpf_prog_test_run_raw_tp,__sys_bpf" {
		t.Errorf("interrupted frames %v", got)
	}
	if got := InterruptedFrames(frames[:4]); len(got) != 0 {
		t.Errorf("user space interrupted: %v", got)
	}
}

func TestCutBoundsLongWindows(t *testing.T) {
	f := &fakeRings{per: 1024}
	for i := 0; i < 500; i++ {
		f.add(0, uint64(1000+i*10), evSwitch, 1, 2, "x")
	}
	sn, err := Take(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := sn.Cut(Window{Metric: "period", TID: 2, Start: 1000, End: 6000, MaxEvents: 100}, NewNames(nil, nil)).Decode(nil)
	if len(tr.Events) != 100 || !tr.Truncated || !strings.Contains(tr.Note, "window too long: 500 events") {
		t.Errorf("%d events, truncated %v, note %q", len(tr.Events), tr.Truncated, tr.Note)
	}
	if last := tr.Events[len(tr.Events)-1]; last.T != 4990 {
		t.Errorf("the events nearest the end must be kept, last at %d", last.T)
	}
}

// A timer-irq window ends at the late interrupt's entry; the stack of the
// task it stopped is sampled in the callback that wakes the task, just
// after: it is kept (and a stack sampled for another task is not). So is
// the steal read at the CPU's next switch, which covers time inside it.
func TestCutKeepsTheStackOfTheLateInterrupt(t *testing.T) {
	f := &fakeRings{per: 64}
	f.add(0, 900, evSwitch, 7, 60, "hog") // task 7 sleeps, hog runs
	f.add(0, 3000, evTimerEntry, 0, 0, "")
	f.add(0, 3004, evWakeup, 7, 60, "hog")
	f.add(0, 3005, evStack, 60, 7, "hog") // waiting: 7
	f.evs[0][len(f.evs[0])-1].C = 0xffff  // no stack id
	f.add(0, 3100, evStack, 60, 9, "hog")
	f.evs[0][len(f.evs[0])-1].C = 0xffff
	f.add(0, 3200, evSteal, 0, 0, "")
	f.add(0, 3200, evSwitch, 60, 7, "control")
	f.add(0, 3300, evSteal, 0, 0, "") // after the next switch: not kept
	tr, err := Cut(f, Window{Metric: "timer-irq", TID: 7, Value: 2000, Start: 1000, End: 3000, CPUStart: 0, CPUEnd: 0}, NewNames(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Events {
		got = append(got, e.Type.String()+"@"+itoa(int(e.T)))
	}
	if want := "switch@-100 timer_entry@2000 stack@2005 steal@2200"; strings.Join(got, " ") != want {
		t.Errorf("events %v, want %s", got, want)
	}
}
