package timerlat

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtscope/rtscope/internal/cpuset"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/session"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// StopHook writes the auto-analysis of the sample that stopped the run, from
// the events of its window cut out of the engine's flight recorder.
type StopHook func(tr *trace.Trace, st *Stop, w io.Writer) (StopVerdict, error)

// StopVerdict is the auto-analysis of a stop in one line, for the
// actions: the verdict and its cause (internal/analysis causes).
type StopVerdict struct {
	Verdict string
	Cause   string
}

// Env is where a session writes, and what it calls on a stop.
type Env struct {
	Out    io.Writer // tables
	Err    io.Writer // notes and warnings
	OnStop StopHook  // nil: no analysis available
	// OnSample, when set, sees every sample copied from the engine (tests).
	OnSample func(Sample)
	// tty: the live top table redraws in place (clear screen) instead of scrolling.
	TTY bool
}

// Refresh period of the live table, and of the polls of samples and notices.
const (
	liveEvery = time.Second
	pollEvery = 100 * time.Millisecond
	stopPoll  = 50 * time.Millisecond // with stop thresholds: how late a stop may be seen
	recentMax = 256                   // samples kept per CPU to describe a stop
)

// Run measures until ctx is done, the duration ends or a stop threshold is
// reached, printing live tables (top) and returning the final result. The
// caller prints the final views (see Print). internal/session runs the
// lifecycle; tool is the timerlat part.
func Run(ctx context.Context, o *Options, env Env) (*Result, error) {
	t := &tool{o: o, env: env, res: &Result{PeriodUs: o.PeriodUs, Priority: o.Priority, DMALatency: o.DMALatency},
		byTID: map[int]*CPUResult{}, ids: map[int]uint64{}, measuring: map[int]bool{}}
	// With an analysis or a saved trace, the engine also samples the kernel
	// stack of whatever runs while a measuring thread waits (the blocking
	// thread, as rtla prints it), once it has waited as long as the lower
	// stop threshold (at most engine.DefaultStackMinWait): the walk delays
	// the thread, which on-time releases must not pay.
	cfg := engine.Config{Trace: o.Tracing(), SleepStacks: o.Analysis() || o.TraceFile != "",
		StackMinWait: o.stackMinWait(), Engine: o.Engine, BTFFile: o.BTFFile}
	if o.OnThreshold.Continue() {
		// Every crossing, not only a new maximum, must reach the actions:
		// the thresholds become the measuring threads' SLOs (the only
		// tasks tracked), whose violations the engine notices (at most one
		// a millisecond per thread). rtla stops at latency >= threshold;
		// an SLO is violated at value > bound.
		if o.IRQStopUs > 0 {
			cfg.SLODefault[metric.TimerIRQ] = o.IRQStopUs*1000 - 1
		}
		if o.ThreadStopUs > 0 {
			cfg.SLODefault[metric.TimerThread] = o.ThreadStopUs*1000 - 1
		}
	}
	spec := session.Spec{Name: "timerlat", Engine: cfg, Log: env.Err, CPUs: o.CPUs, Housekeeping: o.Housekeeping,
		Duration: o.Duration, Poll: pollEvery}
	if o.Tracing() {
		spec.Poll = stopPoll
	}
	if _, err := session.Run(ctx, spec, t); err != nil {
		return nil, err
	}
	return t.res, nil
}

// tool is the timerlat tool of a session.Run: one measuring thread per
// CPU, its samples copied by a program beside the engine (samples.go).
// Its methods and state belong to the session's goroutine; the measuring
// threads share only stop and their atomic counters.
type tool struct {
	o   *Options
	env Env
	res *Result

	cpus  []int
	house unix.CPUSet // rtscope's own CPUs (res.Housekeeping)
	undo  []func()    // set-up to undo, in reverse order (Close)

	eng     *engine.Engine
	st      *stream
	workers []*worker
	stop    atomic.Bool
	done    sync.WaitGroup
	goCh    chan struct{} // closed: the measuring threads start
	started bool          // goCh closed

	byTID     map[int]*CPUResult
	ids       map[int]uint64 // tracking id by tid
	measuring map[int]bool   // tids

	start, nextLive time.Time
	stealStart      []uint64
	th              thresholdActions
}

// Prepare tunes the system for the run, all undone by Close: exit-from-idle
// latency, locked memory, Ps for the measuring threads, and rtscope's own
// threads moved off the measured CPUs before those threads exist.
func (t *tool) Prepare() error {
	o, env := t.o, t.env
	online, err := cpuset.Online()
	if err != nil {
		return err
	}
	t.cpus = o.CPUs
	if t.cpus == nil {
		t.cpus = online
	}
	if o.DMALatency >= 0 {
		f, err := setDMALatency(o.DMALatency)
		if err != nil {
			return err
		}
		t.undo = append(t.undo, func() { f.Close() }) //nolint:errcheck // releases the PM QoS request; nothing to do about a failure
	} else if !o.Quiet {
		fmt.Fprintln(env.Err, "rtscope timerlat: /dev/cpu_dma_latency left untouched (the system is measured as tuned; --dma-latency 0 bounds exit-from-idle latency as cyclictest does by default)")
	}
	// Locked as touched (MCL_ONFAULT): locking Go's whole reserved heap
	// arenas and sparse runtime tables up front would cost ~150 MB for
	// nothing. The latencies themselves are measured in the kernel; a page
	// fault could only delay rtscope's own loop.
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT); err != nil {
		fmt.Fprintf(env.Err, "rtscope timerlat: memory not locked (mlockall: %v): page faults may add latency to rtscope itself\n", err)
	} else {
		t.undo = append(t.undo, func() { unix.Munlockall() }) //nolint:errcheck // at exit; nothing to do about a failure
	}
	// Each measuring thread holds a P while it runs: keep Ps for the rest.
	if n := len(t.cpus) + 2; runtime.GOMAXPROCS(0) < n {
		prev := runtime.GOMAXPROCS(n)
		t.undo = append(t.undo, func() { runtime.GOMAXPROCS(prev) })
	}
	hk := o.Housekeeping
	if hk == nil && o.AutoHousekeeping {
		// By default rtscope's own threads keep off the measured CPUs,
		// when some CPU is not measured (with every CPU measured, each
		// measuring thread's FIFO priority preempts them anyway).
		measured := map[int]bool{}
		for _, c := range t.cpus {
			measured[c] = true
		}
		for _, c := range online {
			if !measured[c] {
				hk = append(hk, c)
			}
		}
		if hk != nil && !o.Quiet {
			fmt.Fprintf(env.Err, "rtscope timerlat: own threads on CPU %s, away from the measured ones (-H overrides)\n", cpuset.FormatList(hk))
		}
	}
	t.res.Housekeeping = hk
	if hk != nil {
		for _, c := range hk {
			t.house.Set(c)
		}
		// Undone at the end, for callers that go on (tests).
		var orig unix.CPUSet
		if err := unix.SchedGetaffinity(0, &orig); err == nil {
			t.undo = append(t.undo, func() { pinOthers(&orig, nil) }) //nolint:errcheck // best effort: restores the affinity for callers that go on
		}
		// Before the measuring threads exist: threads created later inherit it.
		if err := pinOthers(&t.house, nil); err != nil {
			return err
		}
	}
	return nil
}

// Attached loads the sample stream beside the engine and starts the
// measuring threads, which wait for goCh once set up.
func (t *tool) Attached(e *engine.Engine) error {
	t.eng = e
	if err := e.Features.UserReturn; err != nil {
		fmt.Fprintf(t.env.Err, "rtscope timerlat: no return-to-user latency on this kernel: %v\n", err)
	}
	period := int64(t.o.PeriodUs) * 1000
	st, err := openStream(e, len(t.cpus)*int(1e9/period))
	if err != nil {
		return err
	}
	t.st = st
	t.goCh = make(chan struct{})
	ready := make(chan error, len(t.cpus))
	t.workers = make([]*worker, len(t.cpus))
	var areas []uintptr
	if !e.Features.UserReturnFexit {
		if areas, err = rseqAreas(len(t.cpus)); err != nil {
			return err
		}
	}
	for i, c := range t.cpus {
		t.workers[i] = &worker{cpu: c, period: period, prio: t.o.Priority}
		if areas != nil {
			t.workers[i].rseq = areas[i]
		}
		t.workers[i].start(ready, t.goCh, &t.stop, &t.done)
	}
	var setupErr error
	for range t.cpus {
		if err := <-ready; err != nil && setupErr == nil {
			setupErr = err
		}
	}
	if setupErr != nil {
		return setupErr
	}
	if w := t.workers[0]; w.rseqErr != nil {
		fmt.Fprintf(t.env.Err, "rtscope timerlat: no return-to-user latency: registering rseq failed (%v) and fexit on hrtimer_nanosleep is not allowed on this kernel\n", w.rseqErr)
	}
	return nil
}

// Register makes the measuring threads the engine's only targets.
func (t *tool) Register(e *engine.Engine) error {
	for _, w := range t.workers {
		if err := e.WantTID(uint32(w.tid), uint32(w.cpu), 0); err != nil {
			return fmt.Errorf("registering measuring thread %d: %w", w.tid, err)
		}
		t.measuring[w.tid] = true
	}
	return nil
}

// Tracking has the measuring threads' samples copied, pins the rest of
// rtscope, and lets the threads go.
func (t *tool) Tracking(e *engine.Engine) error {
	all, err := e.AllStats()
	if err != nil {
		return err
	}
	for _, s := range all {
		if t.measuring[int(s.Tid)] {
			t.ids[int(s.Tid)] = s.Id
		}
	}
	width := t.o.BucketUs * t.o.divisor()
	for _, w := range t.workers {
		id, ok := t.ids[w.tid]
		if !ok {
			return fmt.Errorf("the engine did not start tracking measuring thread %d (CPU %d)", w.tid, w.cpu)
		}
		if err := t.st.add(uint32(w.tid), w.cpu, id); err != nil {
			return err
		}
		c := &CPUResult{CPU: w.cpu, TID: w.tid}
		for k := 0; k < nCtx; k++ {
			c.Hist[k] = newHist(width, t.o.Entries)
		}
		t.res.CPUs = append(t.res.CPUs, c)
		t.byTID[w.tid] = c
	}
	if t.res.Housekeeping != nil {
		if err := pinOthers(&t.house, t.measuring); err != nil {
			return err
		}
	}
	// No garbage collection while measuring (the measuring threads do not
	// allocate, but the collector's stop-the-world could delay their next
	// sleep); a memory limit still bounds very long sessions. The set-up's
	// garbage (kernel BTF) goes first.
	debug.FreeOSMemory()
	gc, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(512<<20)
	t.undo = append(t.undo, func() { debug.SetGCPercent(gc) }, func() { debug.SetMemoryLimit(limit) })

	// Measure.
	t.stealStart, _ = engine.StealTotals() // nil: the summary says nothing
	t.start = time.Now()
	close(t.goCh)
	t.started = true
	t.nextLive = t.start.Add(liveEvery)
	return nil
}

// Poll looks for a stop in the notices, copies the samples and prints the
// live table; a stop ends the session unless the actions continue.
func (t *tool) Poll(notices []engine.Notice) (bool, error) {
	o := t.o
	if err := t.take(notices); err != nil {
		return false, err
	}
	if o.Mode == "top" && !o.Quiet && !o.AAOnly && time.Now().After(t.nextLive) {
		t.refresh()
		printLive(t.env, t.res, o)
		t.nextLive = t.nextLive.Add(liveEvery)
	}
	return t.res.Stop != nil && !o.OnThreshold.Continue(), nil
}

// take looks for a stop in the notices (cutting its window at once,
// before the rings wrap) and copies the samples queued.
func (t *tool) take(notices []engine.Notice) error {
	o := t.o
	cont := o.OnThreshold.Continue()
	if o.Tracing() {
		if stop, n := checkStop(notices, o, t.byTID); stop != nil {
			// Cut the window now, before the rings wrap.
			tr, terr := cutStop(t.eng, stop, t.workers)
			t.res.Crossings += uint64(n)
			t.th.skipped += uint64(n - 1) // one run acts on the first
			if t.res.Stop == nil {
				t.res.Stop, t.res.Trace, t.res.TraceErr = stop, tr, terr
			}
			if cont {
				t.th.fire(o, t.env, stop, tr, terr)
			}
		}
	}
	return t.st.drain(t.onSample)
}

// onSample files one sample into its CPU's histograms.
func (t *tool) onSample(s Sample) {
	c := t.byTID[s.TID]
	if c == nil {
		return
	}
	for k := 0; k < nCtx; k++ {
		if s.Valid[k] {
			c.Hist[k].add(s.Value[k], s.Seq-1)
		}
	}
	c.recent[c.nRecent%recentMax] = s
	c.nRecent++
	if t.env.OnSample != nil {
		t.env.OnSample(s)
	}
}

// refresh reads the engine's statistics and counters into the result.
func (t *tool) refresh() {
	res := t.res
	for _, w := range t.workers {
		c := t.byTID[w.tid]
		c.Cycles, c.Missed = w.cycles.Load(), w.missed.Load()
		if s, err := t.eng.Stats(t.ids[w.tid]); err == nil {
			for k, m := range []metric.ID{metric.TimerIRQ, metric.TimerThread, metric.TimerUser} {
				ms := s.M[m]
				c.Top[k] = Summary{Count: ms.Count, Sum: ms.Sum, Min: ms.Min, Max: ms.Max, Last: ms.Last}
				c.Engine[k] = engineStats(ms.Count, ms.Sum, ms.Min, ms.Max, ms.Hist[:])
			}
		}
		// A sleep whose deadline had already passed returns without a
		// timer release: no sample for that period either.
		if c.Cycles > c.Top[IRQ].Count {
			c.Missed += c.Cycles - c.Top[IRQ].Count
		}
	}
	cnt := t.eng.Counters()
	res.Lost.Notices, res.Lost.StatsFull, res.Lost.StorageFail =
		cnt[engine.CounterNoticeLost], cnt[engine.CounterStatsFull], cnt[engine.CounterStorageFail]
	res.Lost.Samples = t.st.dec.Lost
	res.Lost.Ring = t.st.ringLost()
	res.Elapsed = time.Since(t.start)
}

// Finish takes the last notices (unless a stop ended the run), waits for
// the stopping sample and the actions, stops the measuring threads, and
// runs the analysis and the actions of a stop.
func (t *tool) Finish(why session.End) error {
	o, res := t.o, t.res
	if why != session.ToolDone {
		// What came since the last poll, up to the end, as every poll.
		ns, err := t.eng.Notices(time.Now())
		if err != nil {
			return err
		}
		if err := t.take(ns); err != nil {
			return err
		}
	}
	elapsed := time.Since(t.start)
	t.th.wait()
	res.ActionsFired, res.ActionsSkipped = t.th.fired, t.th.skipped
	// The sample that stopped the run is copied when its thread sleeps
	// again: a period or two later, or as late as a stall of the machine
	// delays that thread (20 ms on a VM); waited for, a second at most.
	if res.Stop != nil {
		c := t.byTID[res.Stop.TID]
		for giveUp := time.Now().Add(time.Second); res.Stop.Sample == nil && time.Now().Before(giveUp); {
			time.Sleep(time.Duration(o.PeriodUs) * time.Microsecond)
			_ = t.st.drain(t.onSample)
			for i := range c.recent[:min(c.nRecent, recentMax)] {
				if s := c.recent[i]; s.Valid[IRQ] && s.Expiry == res.Stop.Start {
					res.Stop.Sample = &s
					break
				}
			}
		}
	}
	t.stop.Store(true)
	t.done.Wait()
	_ = t.st.drain(t.onSample)
	t.refresh()
	res.Elapsed = elapsed
	stealEnd, _ := engine.StealTotals()
	res.Steal = stealOver(res.CPUs, t.stealStart, stealEnd)
	if res.Stop != nil {
		finishStop(res, o, t.env)
		if !o.OnThreshold.Continue() && len(o.OnThreshold) > 0 {
			// The run has stopped: the actions act on the stop, analysed.
			doc := thresholdDoc(res.Stop, res.Trace, res.Verdict)
			o.OnThreshold.Run(doc.Event(DefaultTraceFile), t.env.Err)
			res.ActionsFired++
		}
	}
	return nil
}

// Close stops the measuring threads (released first if they never ran),
// closes the sample stream and undoes the set-up, on every path.
func (t *tool) Close() {
	if t.goCh != nil {
		t.stop.Store(true)
		if !t.started {
			close(t.goCh)
			t.started = true
		}
		t.done.Wait()
	}
	if t.st != nil {
		t.st.Close()
	}
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo = nil
}

// checkStop looks for a new maximum (or, with continue, an SLO violation)
// of a measuring thread that reaches a threshold (rtla: latency in us >=
// threshold). It returns the first and how many did.
func checkStop(notices []engine.Notice, o *Options, byTID map[int]*CPUResult) (*Stop, int) {
	var first *Stop
	crossed := 0
	for _, n := range notices {
		if (n.Type != engine.NoticeNewMax && n.Type != engine.NoticeSLOViolation) || byTID[int(n.Tid)] == nil {
			continue
		}
		var ctx int
		var thr uint64
		switch metric.ID(n.Metric) {
		case metric.TimerIRQ:
			ctx, thr = IRQ, o.IRQStopUs
		case metric.TimerThread:
			ctx, thr = Thread, o.ThreadStopUs
		default:
			continue
		}
		if thr == 0 || n.Value/1000 < thr {
			continue
		}
		crossed++
		if first == nil {
			c := byTID[int(n.Tid)]
			first = &Stop{CPU: c.CPU, TID: c.TID, Context: ctx, Value: n.Value, ThresholdUs: thr,
				Start: n.Start, End: n.End, CPUStart: int(n.CpuStart)}
		}
	}
	return first, crossed
}

func printLive(env Env, r *Result, o *Options) {
	if env.TTY {
		io.WriteString(env.Out, "\033c")
	}
	if o.Cyclictest {
		RenderCyclictest(env.Out, r, o)
	} else {
		RenderTop(env.Out, r, o)
	}
	RenderLost(env.Out, r, false)
}

// Print writes the final views of a session: top or hist (or cyclictest's),
// then the missed/lost line. The JSON document is written separately.
func Print(w io.Writer, r *Result, o *Options) {
	if o.AAOnly {
		if r.Stop == nil {
			fmt.Fprintf(w, "rtscope timerlat: no IRQ or thread latency reached %d us\n", o.IRQStopUs)
		} else {
			printStop(w, r, o)
		}
		return
	}
	switch {
	case o.Cyclictest && o.Mode == "hist":
		if r.DMALatency >= 0 {
			fmt.Fprintf(w, "# /dev/cpu_dma_latency set to %dus\n", r.DMALatency)
		}
		RenderCyclictestHist(w, r, o)
	case o.Cyclictest:
		if r.DMALatency >= 0 {
			fmt.Fprintf(w, "# /dev/cpu_dma_latency set to %dus\n", r.DMALatency)
		}
		RenderCyclictest(w, r, o)
	case o.Mode == "hist":
		RenderHist(w, r, o)
	default:
		RenderTop(w, r, o)
	}
	if o.Cyclictest {
		io.WriteString(w, "# ")
	}
	RenderLost(w, r, true)
	prefix := ""
	if o.Cyclictest {
		prefix = "# "
	}
	RenderSteal(w, r, prefix)
	if r.Stop != nil {
		printStop(w, r, o)
	}
}

// setDMALatency holds /dev/cpu_dma_latency at us until the file is closed.
func setDMALatency(us int) (*os.File, error) {
	f, err := os.OpenFile("/dev/cpu_dma_latency", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("--dma-latency: opening /dev/cpu_dma_latency: %v", err)
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(us))
	if _, err := f.Write(b[:]); err != nil {
		f.Close() //nolint:errcheck // on an error path: the error returned says more
		return nil, fmt.Errorf("--dma-latency: writing /dev/cpu_dma_latency: %v", err)
	}
	return f, nil
}

// pinOthers sets the affinity of every thread of rtscope to set, except
// the measuring threads.
func pinOthers(set *unix.CPUSet, except map[int]bool) error {
	if err := cpuset.PinProcess(set, except); err != nil {
		return fmt.Errorf("-H: %v", err)
	}
	return nil
}

// cutStop copies the window of the stopping sample out of the flight recorder.
func cutStop(eng *engine.Engine, st *Stop, workers []*worker) (*trace.Trace, error) {
	if !eng.Tracing() {
		return nil, errors.New("the flight recorder is off")
	}
	syms, _ := ksym.Kernel()
	names := trace.NewNames(syms, eng.Stack)
	for _, w := range workers {
		names.SetComm(uint32(w.tid), fmt.Sprintf("rtscope-tl/%d", w.cpu))
	}
	m := metric.TimerIRQ
	if st.Context == Thread {
		m = metric.TimerThread
	}
	return trace.Cut(eng, trace.Window{Metric: m.String(), TID: uint32(st.TID), Value: st.Value, StealClock: eng.Features.Steal.Readable,
		IPISendersUnseen: eng.Features.IPISendersUnseen(), Start: st.Start, End: st.End, CPUStart: st.CPUStart, CPUEnd: st.CPU}, names)
}

// finishStop runs the analysis of a stop and saves its trace (-t), keeping
// what they print for Print.
func finishStop(res *Result, o *Options, env Env) {
	if o.Analysis() {
		var b strings.Builder
		switch {
		case res.Trace == nil:
			fmt.Fprintf(&b, "no auto-analysis: the window could not be cut (%v)\n", res.TraceErr)
		case env.OnStop == nil:
			b.WriteString("no auto-analysis: this build has no analysis library (the trace of the window can be saved with -t)\n")
		default:
			v, err := env.OnStop(res.Trace, res.Stop, &b)
			if err != nil {
				fmt.Fprintf(&b, "auto-analysis failed: %v\n", err)
			}
			res.Verdict = v
		}
		res.Analysis = b.String()
	}
	if o.TraceFile == "" {
		return
	}
	if res.Trace == nil {
		res.TraceSaved = fmt.Errorf("no trace to save: the window could not be cut (%v)", res.TraceErr)
		return
	}
	res.TraceSaved = saveTrace(o.TraceFile, res.Trace, res.Stop)
}

// saveTrace writes the events of the stop's window, times in us from the
// timer expiry.
func saveTrace(path string, tr *trace.Trace, st *Stop) error {
	f, err := outfile.Create(path)
	if err != nil {
		return fmt.Errorf("saving the trace: %w", err)
	}
	fmt.Fprintf(f.Writer(), "# rtscope timerlat: %s latency %s us of thread %d on CPU %d; times in us from the timer expiry\n",
		ctxTitle[st.Context], units.Us(st.Value), st.TID, st.CPU)
	if tr.Truncated {
		fmt.Fprintf(f.Writer(), "# truncated: %s\n", tr.Note)
	}
	report.WriteTrace(f.Writer(), tr, "")
	if err := f.Commit(); err != nil {
		return fmt.Errorf("saving the trace: %w", err)
	}
	return nil
}

var ctxTitle = [nCtx]string{"IRQ", "thread", "user"}

// printStop reports a stop after the tables, as rtla: the offending sample,
// the analysis, where the trace went.
func printStop(w io.Writer, r *Result, o *Options) {
	st := r.Stop
	fmt.Fprintln(w, "rtscope timerlat hit stop tracing")
	if o.Analysis() {
		fmt.Fprintf(w, "## CPU %d hit stop tracing, analyzing it ##\n", st.CPU)
	}
	fmt.Fprintf(w, "%s latency %s us reached the %d us threshold on CPU %d (thread %d)", ctxTitle[st.Context],
		units.Us(st.Value), st.ThresholdUs, st.CPU, st.TID)
	if s := st.Sample; s != nil {
		fmt.Fprint(w, ":")
		for k := 0; k < nCtx; k++ {
			if s.Valid[k] {
				fmt.Fprintf(w, " %s %s us", ctxTitle[k], units.Us(s.Value[k]))
			}
		}
	}
	fmt.Fprintln(w)
	io.WriteString(w, r.Analysis)
	if o.TraceFile != "" {
		if r.TraceSaved != nil {
			fmt.Fprintf(w, "Not saving the trace: %v\n", r.TraceSaved)
		} else {
			fmt.Fprintf(w, "Saving trace to %s\n", o.TraceFile)
		}
	}
}
