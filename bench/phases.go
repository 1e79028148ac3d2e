package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/cilium/ebpf"

	"github.com/rtscope/rtscope/internal/engine"
)

// costRow is one configuration of the cost phase, over its repetitions.
type costRow struct {
	Name        string
	Progs       int
	AvgNs       []float64 // all programs: run time / invocations
	SwitchNs    []float64 // the sched_switch program alone
	PerSwitchNs []float64 // all programs' run time per context switch
	EventsPerS  []float64 // program invocations per second
	SwitchPerS  []float64
	OpsPerS     []float64 // stress-ng bogo ops per second
	CPUPct      []float64 // the monitor's user-space process, % of one CPU
	Misses      uint64
	PerProg     map[string]*ProgStat // summed over repetitions
	Lost        []lost
}

func (c *costRow) add(w window, ops float64) {
	rt, cnt, miss := Sum(w.progs)
	c.Misses += miss
	if c.PerProg == nil {
		c.PerProg = map[string]*ProgStat{}
	}
	c.Progs = len(w.progs)
	for _, p := range w.progs {
		q := c.PerProg[p.Name]
		if q == nil {
			q = &ProgStat{Name: p.Name}
			c.PerProg[p.Name] = q
		}
		q.Runtime += p.Runtime
		q.Count += p.Count
		q.Misses += p.Misses
	}
	if cnt > 0 {
		c.AvgNs = append(c.AvgNs, float64(rt)/float64(cnt))
		c.EventsPerS = append(c.EventsPerS, float64(cnt)/w.seconds)
	}
	if sw, ok := switchProg(w.progs); ok && sw.Count > 0 {
		c.SwitchNs = append(c.SwitchNs, float64(sw.Runtime)/float64(sw.Count))
		c.PerSwitchNs = append(c.PerSwitchNs, float64(rt)/float64(sw.Count))
		c.SwitchPerS = append(c.SwitchPerS, float64(sw.Count)/w.seconds)
	}
	if ops > 0 {
		c.OpsPerS = append(c.OpsPerS, ops)
	}
	c.CPUPct = append(c.CPUPct, 100*w.cpu.Seconds()/w.seconds)
}

// phaseCost: cost per event under a steady context-switch load (stress-ng
// --switch), rtscope against the floor and the peers.
func (b *bench) phaseCost() error {
	h, err := b.startHelper(1, time.Millisecond)
	if err != nil {
		return err
	}
	defer h.stop()
	load := 5 * time.Second
	if b.quick {
		load = 3 * time.Second
	}
	b.res.CostLoad = load
	cfgs := []monitor{
		{name: "no monitor", kind: "none"},
		{name: "floor (empty programs, same hooks)", kind: "floor"},
		{name: clockFloorName, kind: "clock floor"},
		{name: "rtscope, 1 periodic task tracked", kind: "rtscope", args: h.tidArgs(1), expect: 1},
		{name: "rtscope --no-trace, 1 periodic task tracked", kind: "rtscope", args: append([]string{"--no-trace"}, h.tidArgs(1)...), expect: 1},
		{name: "rtscope, the load's tasks tracked", kind: "rtscope", args: []string{"--comm", "stress-ng-switc"}, expect: 0, json: true},
		// The classic engine (no kernel BTF: classic tracepoints, a hash by
		// tid instead of task storage), forced here beside the BTF one.
		{name: "rtscope --engine classic, 1 periodic task tracked", kind: "rtscope", args: append([]string{"--engine", "classic"}, h.tidArgs(1)...), expect: 1},
		{name: "rtscope --engine classic, the load's tasks tracked", kind: "rtscope", args: []string{"--engine", "classic", "--comm", "stress-ng-switc"}, expect: 0, json: true},
		{name: "runqlat (libbpf-tools)", kind: "runqlat", expect: -1},
		{name: "bpftrace run-queue latency", kind: "bpftrace", expect: -1},
	}
	if b.alt != "" {
		cfgs = append(cfgs,
			monitor{name: "alt build, 1 periodic task tracked", kind: "rtscope", args: h.tidArgs(1), expect: 1, bin: b.alt},
			monitor{name: "alt build, the load's tasks tracked", kind: "rtscope", args: []string{"--comm", "stress-ng-switc"}, expect: 0, json: true, bin: b.alt},
			monitor{name: "alt build --engine classic, 1 periodic task tracked", kind: "rtscope", args: append([]string{"--engine", "classic"}, h.tidArgs(1)...), expect: 1, bin: b.alt},
			// Both engines with every task of the load tracked: the 3% rule
			// of issue 37 compares each engine's per-event cost there too.
			monitor{name: "alt build --engine classic, the load's tasks tracked", kind: "rtscope", args: []string{"--engine", "classic", "--comm", "stress-ng-switc"}, expect: 0, json: true, bin: b.alt})
		b.res.Alt = b.alt
	}
	cfgs = b.selected(cfgs)
	rows := make([]*costRow, len(cfgs))
	for i, c := range cfgs {
		rows[i] = &costRow{Name: c.name}
	}
	for rep := 0; rep < b.reps; rep++ {
		for _, i := range runOrder(rep, len(cfgs)) {
			c := cfgs[i]
			r, err := b.startMonitor(c)
			if err != nil {
				return err
			}
			var ops float64
			w, err := b.measure(r, 0, func() (err error) { ops, err = b.stressNG(2, load); return err })
			l, serr := r.stop()
			if err != nil {
				return err
			}
			if serr != nil {
				return serr
			}
			rows[i].add(w, ops)
			if l != nil {
				rows[i].Lost = append(rows[i].Lost, *l)
			}
			b.logf("cost %-40s rep %d: %.0f ns/invocation, %.0f ops/s", c.name, rep+1, last(rows[i].AvgNs), ops)
		}
	}
	b.res.Cost = rows
	return nil
}

func last(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[len(v)-1]
}

// scaleRow is one number of tracked threads.
type scaleRow struct {
	Tracked  int  // -1: the floor
	NoTrace  bool // rtscope --no-trace: the engine without the flight recorder and user-space trace cutting
	AvgNs    []float64
	SwitchNs []float64
	CPUPct   []float64 // the window right after every task is tracked: their first maxima
	// SteadyPct is the window after that (100 tracked or more): what an
	// always-on monitor uses once the tasks' first maxima are cut.
	SteadyPct []float64
	Memlock   []float64 // maps + programs, bytes, as the kernel reports (deduplicated by id)
	RSS       []float64
	Maps      []MapDetail
	ProgBytes int
	StorageB  int       // estimated task storage elements (not in the kernel's map figure)
	StopS     []float64 // rtscope watch: SIGINT to exit (final reports), ns
	Killed    int       // runs that did not stop within a minute of SIGINT
	Lost      []lost
}

// phaseScaling: 0, 1, 10, 100, 1000 tracked threads on the same workload.
// Always-running helpers of 1, 9, 90 and 900 threads, each waking once a
// second; only what is tracked changes between configurations.
func (b *bench) phaseScaling() error {
	var tids []string
	for _, n := range []int{1, 9, 90, 900} {
		h, err := b.startHelper(n, time.Second)
		if err != nil {
			return err
		}
		defer h.stop()
		tids = append(tids, h.tids...)
	}
	st, err := b.startStress(2)
	if err != nil {
		return err
	}
	defer st.stop(syscall.SIGKILL) //nolint:errcheck // best effort: the process may be gone
	win := 5 * time.Second
	if b.quick {
		win = 3 * time.Second
	}
	b.res.ScaleWindow = win
	type cfg struct {
		n       int
		noTrace bool
	}
	var cfgs []cfg
	for _, nt := range []bool{false, true} {
		for _, n := range []int{0, 1, 10, 100, 1000} {
			cfgs = append(cfgs, cfg{n, nt})
		}
	}
	cfgs = append([]cfg{{-1, false}}, cfgs...)
	rows := make([]*scaleRow, len(cfgs))
	for rep := 0; rep < b.reps; rep++ {
		for _, i := range runOrder(rep, len(cfgs)) {
			c := cfgs[i]
			n := c.n
			if rows[i] == nil {
				rows[i] = &scaleRow{Tracked: n, NoTrace: c.noTrace}
			}
			// Lost counters from the text summary: with traces on, the JSON
			// report of 1000 tasks takes gigabytes.
			m := monitor{name: fmt.Sprintf("rtscope, %d tracked", n), kind: "rtscope", expect: n}
			switch {
			case n < 0:
				m = monitor{name: "floor", kind: "floor"}
			case n == 0:
				m.args = []string{"--comm", "rtscope-nobody"}
			default:
				m.args = []string{"--tid", joinTids(tids[:n])}
			}
			if c.noTrace {
				m.name += " --no-trace"
				m.args = append(m.args, "--no-trace")
			}
			r, err := b.startMonitor(m)
			if err != nil {
				return err
			}
			w, _ := b.measure(r, win, nil)
			row := rows[i]
			rt, cnt, _ := Sum(w.progs)
			if cnt > 0 {
				row.AvgNs = append(row.AvgNs, float64(rt)/float64(cnt))
			}
			if sw, ok := switchProg(w.progs); ok && sw.Count > 0 {
				row.SwitchNs = append(row.SwitchNs, float64(sw.Runtime)/float64(sw.Count))
			}
			if r.p != nil {
				row.CPUPct = append(row.CPUPct, 100*w.cpu.Seconds()/w.seconds)
				if o, err := ProcObjects(r.p.pid()); err == nil {
					var total int
					for _, v := range o.Maps {
						total += v
					}
					row.ProgBytes = 0
					for _, v := range o.ProgMemlock {
						row.ProgBytes += v
					}
					row.Memlock = append(row.Memlock, float64(total+row.ProgBytes))
					row.Maps = MapDetails(o, map[string]bool{"flight": true})
					row.StorageB = n * taskStorageBytes(o)
				}
				row.RSS = append(row.RSS, float64(rssBytes(r.p.pid())))
				if n >= 100 {
					if w2, _ := b.measure(r, win, nil); w2.seconds > 0 {
						row.SteadyPct = append(row.SteadyPct, 100*w2.cpu.Seconds()/w2.seconds)
					}
				}
			}
			l, err := r.stop()
			if err != nil {
				// Not stopped within a minute of SIGINT: killed. Noted, and
				// the run goes on (what the window measured stands).
				row.Killed++
				b.logf("%s: %v", m.name, err)
			}
			if l != nil {
				row.Lost = append(row.Lost, *l)
			}
			if r.p != nil && err == nil {
				row.StopS = append(row.StopS, float64(r.stopped))
			}
			b.logf("scaling %-22s rep %d: %.0f ns/invocation", m.name, rep+1, last(row.AvgNs))
		}
	}
	b.res.Scale = rows
	return nil
}

func joinTids(t []string) string {
	s := ""
	for i, x := range t {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

// taskStorageBytes estimates the kernel memory of one tracked task's
// storage element, which the kernel charges to the task, not to the map (so
// the map's memlock figure leaves it out): the value plus the element and
// per-task storage headers (about 256 bytes together on 64-bit kernels).
func taskStorageBytes(o *Objects) int {
	for _, d := range MapDetails(o, nil) {
		if d.Name == "tasks" {
			if vs := mapValueSize(d.ID); vs > 0 {
				return vs + 256
			}
		}
	}
	return 0
}

// lossRow is one loss configuration.
type lossRow struct {
	Name       string
	SwitchPerS []float64
	EventsPerS []float64
	OpsPerS    []float64
	AvgNs      []float64 // rtscope's programs, run time per invocation
	CPUPct     []float64 // rtscope's process
	Lost       []lost
}

// phaseLoss: the highest context-switch rate stress-ng makes here, its tasks
// tracked with traces on: default settings must lose nothing, and a shrunk
// flight recorder must count what it loses.
func (b *bench) phaseLoss() error {
	load := 10 * time.Second
	if b.quick {
		load = 4 * time.Second
	}
	b.res.LossLoad = load
	cfgs := []monitor{
		{name: "no monitor", kind: "none"},
		{name: "rtscope defaults (traces on, 8192 events/CPU)", kind: "rtscope", args: []string{"--comm", "stress-ng-switc"}, json: true},
		{name: "rtscope --trace-events 64", kind: "rtscope", args: []string{"--comm", "stress-ng-switc", "--trace-events", "64"}, json: true},
	}
	rows := make([]*lossRow, len(cfgs))
	reps := 1
	if !b.quick {
		reps = 2
	}
	workers := 2 * runtime.NumCPU()
	b.res.LossWorkers = workers
	for rep := 0; rep < reps; rep++ {
		for _, i := range runOrder(rep, len(cfgs)) {
			c := cfgs[i]
			if rows[i] == nil {
				rows[i] = &lossRow{Name: c.name}
			}
			r, err := b.startMonitor(c)
			if err != nil {
				return err
			}
			var ops float64
			// Count every scheduler event of the machine with the floor's
			// sched_switch program: the same figure for every configuration.
			fl, err := NewFloor(false)
			if err != nil {
				r.stop() //nolint:errcheck // best effort: the process may be gone
				return err
			}
			ids := map[uint32]bool{}
			for id := range fl.IDs {
				ids[id] = true
			}
			for id := range r.objs.Progs {
				ids[id] = true
			}
			probe := &running{objs: &Objects{Progs: ids}, p: r.p}
			w, err := b.measure(probe, 0, func() (err error) { ops, err = b.stressNG(workers, load); return err })
			fl.Close()
			l, serr := r.stop()
			if err != nil {
				return err
			}
			if serr != nil {
				return serr
			}
			var floorPart, monPart []ProgStat
			for _, p := range w.progs {
				if fl.IDs[p.ID] {
					floorPart = append(floorPart, p)
				} else {
					monPart = append(monPart, p)
				}
			}
			row := rows[i]
			if sw, ok := switchProg(floorPart); ok {
				row.SwitchPerS = append(row.SwitchPerS, float64(sw.Count)/w.seconds)
			}
			_, cnt, _ := Sum(floorPart)
			row.EventsPerS = append(row.EventsPerS, float64(cnt)/w.seconds)
			row.OpsPerS = append(row.OpsPerS, ops)
			if rt, n, _ := Sum(monPart); n > 0 {
				row.AvgNs = append(row.AvgNs, float64(rt)/float64(n))
				row.CPUPct = append(row.CPUPct, 100*w.cpu.Seconds()/w.seconds)
			}
			if l != nil {
				row.Lost = append(row.Lost, *l)
			}
			b.logf("loss %-46s rep %d: %.0f switches/s, lost: %v", c.name, rep+1, last(row.SwitchPerS), l)
		}
	}
	b.res.Loss = rows
	return nil
}

// cycRow is one cyclictest configuration.
type cycRow struct {
	Name string
	Runs []cyclicResult
}

// phaseCyclictest: cyclictest's latency with no monitor, rtscope watching
// something else, cyclictest tracked, and 3 or 100 more tracked tasks. A
// helper with 100 periodic threads (10 ms) runs in every configuration.
func (b *bench) phaseCyclictest() error {
	h, err := b.startHelper(100, 10*time.Millisecond)
	if err != nil {
		return err
	}
	defer h.stop()
	// Short runs, many times, interleaved: on a shared machine, bursts of
	// foreign load then land on every configuration alike.
	dur := 5 * time.Second
	reps := 8
	if b.quick {
		reps = 1
	}
	if b.cycRuns > 0 {
		reps = b.cycRuns
	}
	b.res.CycDuration, b.res.CycReps = dur, reps
	cpu := runtime.NumCPU() - 1
	b.res.CycCPU = cpu
	cfgs := []monitor{
		{name: "no monitor", kind: "none"},
		// The dispatch of a BPF program on each of rtscope's hooks, doing
		// nothing: the part of the cost no program body can remove.
		{name: "floor (empty programs, same hooks)", kind: "floor"},
		{name: clockFloorName, kind: "clock floor"},
		{name: "rtscope loaded, watching an idle thread", kind: "rtscope", args: []string{"--tid", h.idle}, expect: 1},
		{name: "cyclictest tracked", kind: "rtscope", args: []string{"--comm", "cyclictest"}, expect: 0},
		{name: "cyclictest + 3 tasks tracked", kind: "rtscope", args: append([]string{"--comm", "cyclictest"}, h.tidArgs(3)...), expect: 3},
		{name: "cyclictest + 100 tasks tracked", kind: "rtscope", args: append([]string{"--comm", "cyclictest"}, h.tidArgs(100)...), expect: 100},
		// What the tracked cost is made of: the flight recorder and trace
		// cutting, and rtscope's own threads sharing cyclictest's CPU.
		{name: "cyclictest tracked, --no-trace", kind: "rtscope", args: []string{"--comm", "cyclictest", "--no-trace"}, expect: 0},
		{name: "cyclictest tracked, --engine classic", kind: "rtscope", args: []string{"--comm", "cyclictest", "--engine", "classic"}, expect: 0},
	}
	if cpu > 0 {
		cfgs = append(cfgs, monitor{name: "cyclictest tracked, rtscope's threads on CPU 0 (-H 0)", kind: "rtscope",
			args: []string{"--comm", "cyclictest", "-H", "0"}, expect: 0})
	}
	if b.alt != "" {
		cfgs = append(cfgs,
			monitor{name: "alt build, watching an idle thread", kind: "rtscope", args: []string{"--tid", h.idle}, expect: 1, bin: b.alt},
			monitor{name: "alt build, cyclictest tracked", kind: "rtscope", args: []string{"--comm", "cyclictest"}, expect: 0, bin: b.alt})
		b.res.Alt = b.alt
	}
	cfgs = b.selected(cfgs)
	rows := make([]*cycRow, len(cfgs))
	for rep := 0; rep < reps; rep++ {
		for _, i := range runOrder(rep, len(cfgs)) {
			c := cfgs[i]
			if rows[i] == nil {
				rows[i] = &cycRow{Name: c.name}
			}
			r, err := b.startMonitor(c)
			if err != nil {
				return err
			}
			js := filepath.Join(b.tmp, fmt.Sprintf("cyclictest-%d-%d.json", rep, i))
			res, err := stopThenRead(r, runCyclictest(cpu, dur, js, "-h", "2000"), js)
			if err != nil {
				return err
			}
			rows[i].Runs = append(rows[i].Runs, res)
			b.logf("cyclictest %-40s rep %d: min %.1f avg %.1f p99 %.1f max %.1f us", c.name, rep+1,
				res.Min/1e3, res.Avg/1e3, res.P99/1e3, res.Max/1e3)
		}
	}
	b.res.Cyc = rows
	return nil
}

// startRow: engine start and stop times, in-process.
type startRow struct {
	Load, Attach, Scan, Close []float64 // ns
	Tracked                   int
	MemoryBytes               uint64 // engine.MemoryBytes()
	Dedup                     uint64 // the same objects, each counted once (fdinfo)
}

// phaseStartStop: how long the engine takes to load, attach, register 1000
// existing threads, and detach, measured in this process.
func (b *bench) phaseStartStop() error {
	h, err := b.startHelper(1000, time.Second)
	if err != nil {
		return err
	}
	defer h.stop()
	reps := 5
	if b.quick {
		reps = 2
	}
	row := &startRow{}
	for i := 0; i < reps; i++ {
		t0 := time.Now()
		e, err := engine.Load(engine.Config{Trace: true, SleepStacks: true})
		if err != nil {
			return err
		}
		t1 := time.Now()
		if err := e.Attach(); err != nil {
			e.Close()
			return err
		}
		t2 := time.Now()
		if err := e.WantTGID(uint32(h.p.pid()), 0); err != nil {
			e.Close()
			return err
		}
		if err := e.Scan(); err != nil {
			e.Close()
			return err
		}
		t3 := time.Now()
		all, _ := e.AllStats()
		row.Tracked = len(all)
		row.MemoryBytes = e.MemoryBytes()
		if o, err := ProcObjects(os.Getpid()); err == nil {
			var t int
			for _, v := range o.Maps {
				t += v
			}
			for _, v := range o.ProgMemlock {
				t += v
			}
			row.Dedup = uint64(t)
		}
		t4 := time.Now()
		e.Close()
		t5 := time.Now()
		row.Load = append(row.Load, float64(t1.Sub(t0)))
		row.Attach = append(row.Attach, float64(t2.Sub(t1)))
		row.Scan = append(row.Scan, float64(t3.Sub(t2)))
		row.Close = append(row.Close, float64(t5.Sub(t4)))
		b.logf("start/stop rep %d: load %v attach %v scan(%d) %v close %v", i+1, t1.Sub(t0).Round(time.Microsecond),
			t2.Sub(t1).Round(time.Microsecond), row.Tracked, t3.Sub(t2).Round(time.Microsecond), t5.Sub(t4).Round(time.Microsecond))
	}
	b.res.Start = row
	return nil
}

// run runs a command to its end and returns its output.
func run(argv ...string) (string, error) {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

// mapValueSize is the value size of map id.
func mapValueSize(id uint32) int {
	m, err := ebpf.NewMapFromID(ebpf.MapID(id))
	if err != nil {
		return 0
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil {
		return 0
	}
	return int(info.ValueSize)
}

// phaseTail: maximum and tail of single program runs, from the instrumented
// builds (rtscope's programs wrapped by bench/bpf/timed.h, the floor in
// assembly), under the cost phase's load.
func (b *bench) phaseTail() error {
	if b.timedDir == "" {
		b.logf("no instrumented build given (-timed): skipped")
		return nil
	}
	bin := filepath.Join(b.timedDir, "rtscope")
	src := filepath.Join(b.timedDir, "bpf", "rtscope.bpf.c")
	h, err := b.startHelper(1, time.Millisecond)
	if err != nil {
		return err
	}
	defer h.stop()
	load := 5 * time.Second
	if b.quick {
		load = 3 * time.Second
	}
	t := &timedResult{Where: fmt.Sprintf("`stress-ng --switch 2`, %v per run, %d run(s) each, interleaved", load, b.reps),
		RtsName: "rtscope, 1 periodic task tracked", BusyName: "rtscope, the load's tasks tracked"}
	acc := func(dst *[]timedProg, ps []timedProg) {
		for _, p := range ps {
			found := false
			for i := range *dst {
				if (*dst)[i].Name == p.Name {
					(*dst)[i].add(p.benchTiming)
					found = true
				}
			}
			if !found {
				*dst = append(*dst, p)
			}
		}
	}
	for rep := 0; rep < b.reps; rep++ {
		f, err := NewTimedFloor()
		if err != nil {
			return err
		}
		_, err = b.stressNG(2, load)
		acc(&t.Floor, f.Read())
		f.Close()
		if err != nil {
			return err
		}
		for _, m := range []monitor{
			{name: t.RtsName, kind: "rtscope", args: h.tidArgs(1), expect: 1, bin: bin},
			{name: t.BusyName, kind: "rtscope", args: []string{"--comm", "stress-ng-switc"}, bin: bin},
		} {
			r, err := b.startMonitor(m)
			if err != nil {
				return err
			}
			_, err = b.stressNG(2, load)
			ps, rerr := readTimedProcess(r.objs, src)
			r.stop() //nolint:errcheck // best effort: the process may be gone
			if err != nil {
				return err
			}
			if rerr != nil {
				return rerr
			}
			if m.name == t.RtsName {
				acc(&t.Rts, ps)
			} else {
				acc(&t.Busy, ps)
			}
		}
		b.logf("tail rep %d done", rep+1)
	}
	sort.Slice(t.Rts, func(i, j int) bool { return t.Rts[i].Sum > t.Rts[j].Sum })
	sort.Slice(t.Busy, func(i, j int) bool { return t.Busy[i].Sum > t.Busy[j].Sum })
	t.FloorAll, t.RtsAll, t.BusyAll = sumTiming(t.Floor), sumTiming(t.Rts), sumTiming(t.Busy)
	t.RtsMax, t.FloorMax = float64(t.RtsAll.Max), float64(t.FloorAll.Max)
	b.res.Timed = t
	return nil
}
