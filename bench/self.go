package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
)

// selfRow is the on-CPU runs of the monitor's own threads in one loaded
// configuration, as a second rtscope engine's flight recorder saw them.
type selfRow struct {
	Name      string
	Runs      []uint64 // ns, every complete run (switch-in to switch-out) of a monitor thread
	Preempted int      // runs that ended preempted (still runnable)
	Longest   monRun
	Threads   int    // monitor threads seen
	Lost      uint64 // flight-recorder events overwritten before they were read
	Seconds   float64
	CPUPct    float64 // the monitor process, % of one CPU
	// With a real-time probe (cyclictest) on the monitor's CPU: the
	// probe's waits from its wakeup to its switch-in on that CPU, when a
	// monitor thread was what it switched in from (HeldByMonitor) or
	// another task (HeldByOthers), ns, sorted.
	Probe                       bool
	HeldByMonitor, HeldByOthers []uint64
	StopErr                     string // the monitor did not stop on SIGINT (killed)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// monRun is one on-CPU run of a monitor thread.
type monRun struct {
	TID       uint32
	Comm      string
	Ns        uint64
	CPU       int
	Preempted bool   // switched out preempted (runnable), not blocked
	State     uint32 // prev_state at its switch-out (0: runnable)
}

// monRuns turns the context switches of a flight recorder into the
// on-CPU runs of a set of threads (the monitor's). Not safe for
// concurrent use.
type monRuns struct {
	mon   map[uint32]bool
	on    []uint32 // per CPU: the monitor thread switched in, 0: none or unknown
	since []uint64 // per CPU: when it was
	runs  []monRun
	// probe: the threads of a real-time probe; woken: when and where each
	// was woken, until its switch-in; heldMon/heldOther: its waits.
	probe              map[uint32]bool
	woken              map[uint32]probeWake
	heldMon, heldOther []uint64
}

// probeWake is a wakeup of a probe thread not yet followed by its switch-in.
type probeWake struct {
	ts  uint64
	cpu int
}

func newMonRuns(ncpu int) *monRuns {
	return &monRuns{mon: map[uint32]bool{}, on: make([]uint32, ncpu), since: make([]uint64, ncpu),
		probe: map[uint32]bool{}, woken: map[uint32]probeWake{}}
}

// feed takes the next event of cpu's ring, oldest first. A probe's wait
// is matched on one CPU's ring only (rings are read one after the other):
// its timer wakes it where it runs.
func (m *monRuns) feed(cpu int, e *engine.Event) {
	if cpu < 0 || cpu >= len(m.on) {
		return
	}
	if e.Type == engine.EventWakeup && m.probe[e.A] {
		m.woken[e.A] = probeWake{ts: e.Ts, cpu: cpu}
		return
	}
	if e.Type != engine.EventSwitch {
		return
	}
	if w, ok := m.woken[e.B]; ok && m.probe[e.B] {
		delete(m.woken, e.B)
		if w.cpu == cpu && e.Ts >= w.ts {
			if m.mon[e.A] {
				m.heldMon = append(m.heldMon, e.Ts-w.ts)
			} else {
				m.heldOther = append(m.heldOther, e.Ts-w.ts)
			}
		}
	}
	if t := m.on[cpu]; t != 0 && e.A == t && e.Ts >= m.since[cpu] {
		m.runs = append(m.runs, monRun{TID: t, Ns: e.Ts - m.since[cpu], CPU: cpu,
			Preempted: e.Flags != 0 || e.C == 0, State: uint32(e.C)})
	}
	m.on[cpu] = 0
	if m.mon[e.B] {
		m.on[cpu], m.since[cpu] = e.B, e.Ts
	}
}

// gap: events of cpu were lost; the run in progress there, and the
// wakeups not yet followed by a switch-in, are unknown.
func (m *monRuns) gap(cpu int) {
	m.on[cpu] = 0
	for t, w := range m.woken {
		if w.cpu == cpu {
			delete(m.woken, t)
		}
	}
}

// rings is what flightReader needs of an engine (*engine.Engine).
type rings interface {
	Heads() ([]uint64, error)
	FlightPerCPU() uint32
	FlightEvent(cpu int, i uint32) engine.Event
}

// engineRings gives an engine's mapped rings (Engine.FlightRing) the
// slot-by-slot reads of rings.
type engineRings struct{ *engine.Engine }

// FlightEvent returns a copy of slot i of cpu's ring.
func (r engineRings) FlightEvent(cpu int, i uint32) engine.Event {
	ring := r.FlightRing(cpu)
	return ring[i&uint32(len(ring)-1)]
}

// flightReader reads an engine's flight recorder rings as they fill.
type flightReader struct {
	e    rings
	next []uint64 // per CPU: the next sequence number to read
	lost uint64
}

func newFlightReader(e rings) (*flightReader, error) {
	h, err := e.Heads()
	if err != nil {
		return nil, err
	}
	return &flightReader{e: e, next: h}, nil
}

// poll feeds every event written since the last poll to m. Events the
// writers lapped before they were read are counted in r.lost (a slot
// whose sequence number is not the one expected was overwritten), and
// leave the run in progress on that CPU unknown.
func (r *flightReader) poll(m *monRuns) error {
	heads, err := r.e.Heads()
	if err != nil {
		return err
	}
	depth := uint64(r.e.FlightPerCPU())
	for cpu, head := range heads {
		if cpu >= len(r.next) {
			break
		}
		from := r.next[cpu]
		// Lapped: what is older than an eighth of the ring short of a
		// full lap is skipped (the writers may be overwriting it) and
		// counted.
		if keep := depth - depth/8; head-from > keep {
			r.lost += head - keep - from
			from = head - keep
			m.gap(cpu)
		}
		// The newest slots may be reserved and still being written (a
		// program nested in an interrupt): they wait for the next poll.
		h := head - min(head, 4)
		if h <= from {
			continue
		}
		for seq := from; seq < h; seq++ {
			e := r.e.FlightEvent(cpu, uint32(seq))
			if e.Seq != uint32(seq) {
				if e.Seq == uint32(seq-depth) { // reserved, not written yet: next poll
					h = seq
					break
				}
				r.lost++
				m.gap(cpu)
				continue
			}
			m.feed(cpu, &e)
		}
		r.next[cpu] = h
	}
	return nil
}

// threadsOf lists the threads of process pid.
func threadsOf(pid int) []uint32 {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil
	}
	var out []uint32
	for _, d := range ents {
		if t, err := strconv.ParseUint(d.Name(), 10, 32); err == nil {
			out = append(out, uint32(t))
		}
	}
	return out
}

// phaseSelf: rtscope's longest on-CPU stretch. The monitor watches a loaded
// machine while a second copy of rtscope's engine, loaded in this process
// with a deep flight recorder and no targets, records every context switch;
// the monitor's threads' runs (switch-in to switch-out) come from those
// events. On a kernel without full preemption (preempt=none) a run that
// stays in the kernel cannot be cut short by a real-time task's wakeup:
// the longest run bounds what rtscope's user space can add to another
// task's latency on a shared CPU.
func (b *bench) phaseSelf() error {
	h, err := b.startHelper(1000, 100*time.Millisecond)
	if err != nil {
		return err
	}
	defer h.stop()
	st, err := b.startStress(2)
	if err != nil {
		return err
	}
	defer st.stop(syscall.SIGKILL) //nolint:errcheck // best effort: the process may be gone
	win := 10 * time.Second
	if b.quick {
		win = 5 * time.Second
	}
	b.res.SelfWindow = win
	cfgs := []struct {
		monitor
		probe bool
	}{
		{monitor{name: "the load's tasks tracked (stress-ng --switch 2)", kind: "rtscope", args: []string{"--comm", "stress-ng-switc"}}, false},
		{monitor{name: "the load's tasks + 1000 periodic threads tracked", kind: "rtscope",
			args: []string{"--comm", "stress-ng-switc", "--tid", joinTids(h.tids)}, expect: 1000}, false},
		// A real-time task on rtscope's own CPU: on a kernel without full
		// preemption its wakeup ends a user-space run of rtscope at once,
		// and waits for a kernel one to reach a preemption point.
		{monitor{name: "the same, cyclictest (FIFO 80, 1 ms) on rtscope's CPU (-H 0)", kind: "rtscope",
			args: []string{"--comm", "stress-ng-switc", "--tid", joinTids(h.tids), "-H", "0"}, expect: 1000}, true},
	}
	for _, c := range cfgs {
		row, err := b.selfRun(c.monitor, c.probe, win)
		if err != nil {
			return err
		}
		b.res.Self = append(b.res.Self, row)
		b.logf("self %-50s: %d runs, longest %s (%s), lost %d events", c.name, len(row.Runs),
			us(float64(row.Longest.Ns)), row.Longest.Comm, row.Lost)
	}
	return nil
}

// selfRun measures one configuration's monitor over win; with probe, a
// cyclictest thread on CPU 0, where the monitor is then kept (-H 0).
func (b *bench) selfRun(c monitor, probe bool, win time.Duration) (*selfRow, error) {
	// 512Ki events a CPU (24 MiB): about a second of this load's events,
	// read every 50 ms.
	e, err := engine.Load(engine.Config{Trace: true, FlightPerCPU: 1 << 19, Engine: engine.EngineBTF})
	if err != nil {
		return nil, fmt.Errorf("loading the measuring engine: %w", err)
	}
	defer e.Close()
	r, err := b.startMonitor(c)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			r.stop() //nolint:errcheck // best effort: the process may be gone
		}
	}()
	pid := r.p.pid()
	var cyc *proc
	if probe {
		cyc, err = start("cyclictest", io.Discard, "cyclictest", "-m", "-p", "80", "-i", "1000", "-a", "0", "-t", "1", "-q",
			"-D", fmt.Sprintf("%ds", int(win.Seconds())+5))
		if err != nil {
			return nil, err
		}
		defer cyc.stop(syscall.SIGKILL) //nolint:errcheck // best effort: it may have ended
	}
	if err := e.Attach(); err != nil {
		return nil, fmt.Errorf("attaching the measuring engine: %w", err)
	}
	fr, err := newFlightReader(engineRings{e})
	if err != nil {
		return nil, err
	}
	m := newMonRuns(e.NumCPU())
	comms := map[uint32]string{}
	refresh := func() {
		if cyc != nil {
			for _, t := range threadsOf(cyc.pid()) {
				m.probe[t] = true
			}
		}
		for _, t := range threadsOf(pid) {
			if !m.mon[t] {
				m.mon[t] = true
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, t)); err == nil {
					comms[t] = strings.TrimSpace(string(b))
				}
			}
		}
	}
	refresh()
	c0 := cpuTime(pid)
	t0 := time.Now()
	for time.Since(t0) < win {
		time.Sleep(50 * time.Millisecond)
		refresh()
		if err := fr.poll(m); err != nil {
			return nil, err
		}
	}
	secs := time.Since(t0).Seconds()
	cpu := cpuTime(pid) - c0
	stopped = true
	// A monitor that does not stop within a minute of SIGINT is killed and
	// noted; what the window measured stands (as in the scaling phase).
	_, serr := r.stop()
	row := &selfRow{Name: c.name, Threads: len(m.mon), Lost: fr.lost, Seconds: secs, CPUPct: 100 * cpu.Seconds() / secs,
		StopErr: errText(serr),
		Probe:   probe, HeldByMonitor: m.heldMon, HeldByOthers: m.heldOther}
	for _, v := range [][]uint64{row.HeldByMonitor, row.HeldByOthers} {
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	}
	for _, x := range m.runs {
		row.Runs = append(row.Runs, x.Ns)
		if x.Preempted {
			row.Preempted++
		}
		if x.Ns > row.Longest.Ns {
			row.Longest = x
		}
	}
	row.Longest.Comm = comms[row.Longest.TID]
	sort.Slice(row.Runs, func(i, j int) bool { return row.Runs[i] < row.Runs[j] })
	return row, nil
}

// quantile of sorted values (nearest rank).
func quantile(sorted []uint64, q float64) uint64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// selfMarkdown is the section on the monitor's own on-CPU runs.
func (r *results) selfMarkdown(w *strings.Builder) {
	if len(r.Self) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("## 7. rtscope's own on-CPU runs\n\nLoad: `stress-ng --switch 2` plus a helper of 1000 threads waking every 100 ms; `rtscope watch` (defaults: flight recorder on, housekeeping CPU chosen by itself) tracks what each row says, for %v. A second copy of rtscope's engine, loaded in the bench process (no targets, a 512Ki-event flight recorder per CPU, read every 50 ms), records every context switch; a run is one stretch of a monitor thread on a CPU, from its switch-in to its switch-out. Preempted: runs that ended with the thread still runnable (a preemption point reached), the others blocked or slept. The measuring engine's programs add their own cost to every event, and its reader takes CPU time of its own, on the same machine. On this kernel's preemption model (%s), a run inside the kernel ends only at a preemption point: the longest run bounds what rtscope's user space can hold a CPU.\n\n", r.SelfWindow, r.Machine.Preempt)
	p("| configuration | monitor threads | runs | p50 | p99 | max | longest run (thread, end) | runs >= 1 ms | preempted | monitor process CPU | events not read (lapped) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Self {
		long := 0
		for _, v := range s.Runs {
			if v >= 1e6 {
				long++
			}
		}
		end := "blocked"
		if s.Longest.Preempted {
			end = "preempted"
		}
		p("| %s | %d | %d | %s | %s | %s | %s/%d on CPU %d, %s | %d | %d | %s | %d |\n", s.Name, s.Threads, len(s.Runs),
			us(float64(quantile(s.Runs, 0.5))), us(float64(quantile(s.Runs, 0.99))), us(float64(quantile(s.Runs, 1))),
			orDash(s.Longest.Comm), s.Longest.TID, s.Longest.CPU, end, long, s.Preempted, pct(s.CPUPct), s.Lost)
	}
	p("\n")
	for _, s := range r.Self {
		if s.StopErr != "" {
			p("%s: %s (killed; the window's figures stand).\n\n", s.Name, s.StopErr)
		}
	}
	for _, s := range r.Self {
		if !s.Probe {
			continue
		}
		p("With a real-time probe on rtscope's CPU (%s): each wakeup of cyclictest's thread to its switch-in on that CPU, by the task it switched in from. A wait behind an rtscope thread is the time that thread kept the CPU after the wakeup: on this kernel, until its kernel code reached a preemption point (user code is preempted at once).\n\n", s.Name)
		p("| switched in from | waits | p50 | p99 | max |\n|---|---|---|---|---|\n")
		for _, x := range []struct {
			who string
			v   []uint64
		}{{"an rtscope thread", s.HeldByMonitor}, {"another task (the load, idle, kernel threads)", s.HeldByOthers}} {
			p("| %s | %d | %s | %s | %s |\n", x.who, len(x.v), us(float64(quantile(x.v, 0.5))), us(float64(quantile(x.v, 0.99))), us(float64(quantile(x.v, 1))))
		}
		p("\n")
	}
}
