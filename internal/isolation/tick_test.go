package isolation

import (
	"strings"
	"testing"
)

// The layout of /proc/timer_list (6.1 and 6.18 print the same lines),
// cut to what the parser reads and what might mislead it.
const timerList = `Timer List Version: v0.9
HRTIMER_MAX_CLOCK_BASES: 8
now at 26973339000 nsecs

cpu: 0
 clock 0:
  .base:               0
  .index:      0
active timers:
 #0: <0000000000000000>, tick_sched_timer, S:01
  .nohz_mode      : 2
  .tick_stopped   : 0
  .idle_jiffies   : 4294892296

cpu: 1
 clock 0:
  .index:      0
  .nohz_mode      : 2
  .tick_stopped   : 1

Tick Device: mode:     1
Per CPU device: 0
`

// Each CPU's tick_stopped follows its own "cpu: N" line.
func TestParseTimerList(t *testing.T) {
	got := parseTimerList([]byte(timerList))
	if len(got) != 2 || got[0] || !got[1] {
		t.Errorf("tick_stopped = %v, want map[0:false 1:true]", got)
	}
	if got := parseTimerList([]byte("cpu: 0\n .clock: 1\n")); got != nil {
		t.Errorf("a kernel without tick_stopped: %v, want nil (unknown)", got)
	}
}

// The local timer's row: x86's LOC, arm64's arch_timer; the header's CPU
// numbers name the columns (CPU 1 offline here).
func TestParseTimerIRQs(t *testing.T) {
	x86 := `           CPU0       CPU2
  0:         44          0   IO-APIC   2-edge      timer
LOC:      36289      25041   Local timer interrupts
CAL:         12          3   Function call interrupts
`
	got := parseTimerIRQs([]byte(x86))
	if len(got) != 2 || got[0] != 36289 || got[2] != 25041 {
		t.Errorf("x86: %v, want map[0:36289 2:25041] (the IO-APIC timer is not the local timer)", got)
	}
	arm := `           CPU0       CPU1
 11:       5052       4844     GICv3  27 Level     arch_timer
 IPI0:       10         20       Rescheduling interrupts
`
	got = parseTimerIRQs([]byte(arm))
	if len(got) != 2 || got[0] != 5052 || got[1] != 4844 {
		t.Errorf("arm64: %v, want map[0:5052 1:4844]", got)
	}
	if got := parseTimerIRQs([]byte("           CPU0\n  1:  9  IO-APIC 1-edge i8042\n")); got != nil {
		t.Errorf("no local timer row: %v, want nil (unknown)", got)
	}
}

// A nohz_full CPU gets its state and timer interrupts, a row made when no
// tick_stop event came; another CPU is left as it was.
func TestAddTickState(t *testing.T) {
	s := &Snapshot{CPUs: []int{1, 2, 3}, NohzFull: []int{1, 2},
		Ticks: []TickRow{{CPU: 2, Kept: 40, Deps: map[string]uint64{"SCHED": 40}}}}
	before := tickState{stopped: map[int]bool{1: true, 2: false, 3: true}, timer: map[int]uint64{1: 100, 2: 100, 3: 5}}
	after := tickState{stopped: map[int]bool{1: true, 2: false, 3: true}, timer: map[int]uint64{1: 100, 2: 1100, 3: 9}}
	addTickState(s, before, after)
	if len(s.Ticks) != 2 {
		t.Fatalf("ticks %+v: want CPU 2's row and a new one for CPU 1, none for CPU 3 (not nohz_full)", s.Ticks)
	}
	two, one := s.Ticks[0], s.Ticks[1]
	if two.CPU != 2 || two.Kept != 40 || *two.TimerIRQs != 1000 || *two.StoppedAtStart || *two.StoppedAtEnd {
		t.Errorf("CPU 2: %+v, want kept 40, 1000 timer interrupts, running at both ends", two)
	}
	if one.CPU != 1 || one.Stopped+one.Kept != 0 || *one.TimerIRQs != 0 || !*one.StoppedAtStart || !*one.StoppedAtEnd {
		t.Errorf("CPU 1: %+v, want no event, 0 timer interrupts, stopped at both ends", one)
	}
	// Unknown state (no timer_list, no timer row) stays unknown.
	s = &Snapshot{CPUs: []int{1}, NohzFull: []int{1}}
	addTickState(s, tickState{}, tickState{})
	if r := s.Ticks[0]; r.StoppedAtStart != nil || r.StoppedAtEnd != nil || r.TimerIRQs != nil {
		t.Errorf("unknown state: %+v, want nil fields", r)
	}
}

// The tick's line says "stopped throughout" only when the kernel said so
// at both ends and no event came; otherwise the counts, the states and
// the interrupts' rate.
func TestTickSummary(t *testing.T) {
	yes, no := true, false
	zero, many := uint64(0), uint64(1347)
	cases := []struct {
		row  TickRow
		want string
	}{
		{TickRow{StoppedAtStart: &yes, StoppedAtEnd: &yes, TimerIRQs: &zero},
			"stopped throughout (stopped at the start and at the end, no tick_stop event); 0 local timer interrupts (0.0/s;"},
		{TickRow{Stopped: 7, Kept: 1349, StoppedAtStart: &yes, StoppedAtEnd: &no, TimerIRQs: &many},
			"stopped 7 times, kept running 1349 times; stopped at the start, running at the end; 1347 local timer interrupts (96.2/s;"},
		{TickRow{Stopped: 1, StoppedAtStart: &no, StoppedAtEnd: &yes},
			"stopped once, kept running 0 times; running at the start, stopped at the end"},
		{TickRow{Kept: 2}, "stopped 0 times, kept running 2 times"},
		{TickRow{StoppedAtStart: &yes}, "stopped 0 times, kept running 0 times"},
	}
	for _, c := range cases {
		got := tickSummary(&c.row, 14e9)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("tickSummary(%+v) = %q, want it to begin %q", c.row, got, c.want)
		}
	}
	if got := tickSummary(&TickRow{Kept: 2}, 14e9); strings.Contains(got, "timer interrupts") {
		t.Errorf("%q: no interrupt count when unknown", got)
	}
}

// The SCHED dependency names the tasks that shared the CPU: the workload,
// then the foreign tasks by time; no other dependency does.
func TestSchedTasks(t *testing.T) {
	c := &CPUResult{Workload: []string{"sh/323", "sh/325"}, Intrusions: []Intrusion{
		{Cause: CauseTask, What: "user task", Sender: "exe/313"},
		{Cause: CauseIRQ, What: "irq 4", Sender: "ttyS0"},
		{Cause: CauseTask, What: "per-CPU kernel thread", Sender: "ktimers/1/30"},
		{Cause: CauseTask, What: "kernel thread", Sender: "kworker/1:0/32"},
	}}
	if got, want := schedTasks(c, "SCHED"), " (tasks that ran there: sh/323, sh/325, exe/313, ktimers/1/30 and 1 more)"; got != want {
		t.Errorf("schedTasks = %q, want %q", got, want)
	}
	if got := schedTasks(c, "RCU"); got != "" {
		t.Errorf("RCU: %q, want nothing", got)
	}
	if got := schedTasks(&CPUResult{}, "SCHED"); got != "" {
		t.Errorf("no task seen: %q, want nothing", got)
	}
}
