package isolation

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// tickState is what the kernel says of each CPU's tick besides the
// tick_stop events, read at the run's start and end: whether the tick is
// stopped (/proc/timer_list) and how many local timer interrupts the CPU
// has taken (/proc/interrupts). A tick that stopped before the run and
// stayed stopped makes no tick_stop event at all: in the isolated QEMU
// guest, a busy loop alone on its nohz_full CPU for 8 s gave none, and 0
// local timer interrupts (vmtest/guest/tests/37-nohz.sh).
type tickState struct {
	stopped map[int]bool   // by CPU; nil when /proc/timer_list is unreadable
	timer   map[int]uint64 // by CPU; nil when no row counts the local timer
}

// readTickState reads the tick's state of every CPU; what cannot be read
// is left unknown.
func readTickState() tickState {
	var st tickState
	if b, err := os.ReadFile("/proc/timer_list"); err == nil {
		st.stopped = parseTimerList(b)
	}
	if b, err := os.ReadFile("/proc/interrupts"); err == nil {
		st.timer = parseTimerIRQs(b)
	}
	return st
}

// parseTimerList reads each CPU's ".tick_stopped" from /proc/timer_list,
// where it follows the CPU's "cpu: N" line.
func parseTimerList(b []byte) map[int]bool {
	out := map[int]bool{}
	cpu := -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "cpu:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				cpu = n
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if ok && cpu >= 0 && strings.TrimSpace(k) == ".tick_stopped" {
			out[cpu] = strings.TrimSpace(v) == "1"
		}
	}
	if len(out) == 0 {
		return nil // a kernel without NO_HZ_COMMON prints no tick_stopped
	}
	return out
}

// parseTimerIRQs reads each CPU's local timer interrupts from
// /proc/interrupts: the x86 "LOC:" row, or the row of the arm64
// architected timer ("arch_timer"). The header names the columns' CPUs
// (offline CPUs have none).
func parseTimerIRQs(b []byte) map[int]uint64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var cols []int
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if cols == nil {
			for _, h := range f {
				if n, err := strconv.Atoi(strings.TrimPrefix(h, "CPU")); err == nil {
					cols = append(cols, n)
				}
			}
			if cols == nil {
				return nil
			}
			continue
		}
		if len(f) < len(cols)+1 || (f[0] != "LOC:" && f[len(f)-1] != "arch_timer") {
			continue
		}
		out := map[int]uint64{}
		for i, cpu := range cols {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return nil
			}
			out[cpu] = n
		}
		return out
	}
	return nil
}

// addTickState gives each watched nohz_full CPU its tick's state at the
// start and end and its local timer interrupts in between, making its
// tick row when no tick_stop event came.
func addTickState(s *Snapshot, before, after tickState) {
	for _, cpu := range s.CPUs {
		if !hasCPU(s.NohzFull, cpu) {
			continue
		}
		t := tickRow(s, cpu)
		if v, ok := before.stopped[cpu]; ok {
			t.StoppedAtStart = &v
		}
		if v, ok := after.stopped[cpu]; ok {
			t.StoppedAtEnd = &v
		}
		b, ok1 := before.timer[cpu]
		a, ok2 := after.timer[cpu]
		if ok1 && ok2 && a >= b {
			n := a - b
			t.TimerIRQs = &n
		}
	}
}

// tickRow is cpu's tick row in s, added when missing.
func tickRow(s *Snapshot, cpu int) *TickRow {
	for i := range s.Ticks {
		if s.Ticks[i].CPU == cpu {
			return &s.Ticks[i]
		}
	}
	s.Ticks = append(s.Ticks, TickRow{CPU: cpu})
	return &s.Ticks[len(s.Ticks)-1]
}

// tickSummary is the tick's line of a CPU's report: the tick_stop
// outcomes, the state at the start and end, and the local timer
// interrupts with their rate over durationNs.
func tickSummary(t *TickRow, durationNs uint64) string {
	start, end := t.StoppedAtStart, t.StoppedAtEnd
	var s string
	if t.Stopped+t.Kept == 0 && start != nil && end != nil && *start && *end {
		s = "stopped throughout (stopped at the start and at the end, no tick_stop event)"
	} else {
		s = fmt.Sprintf("stopped %s, kept running %s", times(t.Stopped), times(t.Kept))
		if start != nil && end != nil {
			s += fmt.Sprintf("; %s at the start, %s at the end", stopWord(*start), stopWord(*end))
		}
	}
	if t.TimerIRQs != nil && durationNs > 0 {
		s += fmt.Sprintf("; %d local timer interrupts (%.1f/s; a running tick makes CONFIG_HZ a second)",
			*t.TimerIRQs, float64(*t.TimerIRQs)/(float64(durationNs)/1e9))
	}
	return s
}

func stopWord(stopped bool) string {
	if stopped {
		return "stopped"
	}
	return "running"
}

// schedTasks names, for the SCHED dependency, the tasks that ran on the
// CPU: the workload first, then the foreign tasks, most time first (the
// intrusions' order), four at most.
func schedTasks(c *CPUResult, dep string) string {
	if dep != "SCHED" {
		return ""
	}
	names := append([]string(nil), c.Workload...)
	for _, in := range c.Intrusions {
		if in.Cause == CauseTask && in.Sender != "" {
			names = append(names, in.Sender)
		}
	}
	if len(names) == 0 {
		return ""
	}
	more := ""
	if len(names) > 4 {
		more = fmt.Sprintf(" and %d more", len(names)-4)
		names = names[:4]
	}
	return " (tasks that ran there: " + strings.Join(names, ", ") + more + ")"
}
