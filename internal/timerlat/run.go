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
// caller prints the final views (see Print).
func Run(ctx context.Context, o *Options, env Env) (*Result, error) {
	if err := engine.Probe(); err != nil {
		return nil, err
	}
	online, err := OnlineCPUs()
	if err != nil {
		return nil, err
	}
	cpus := o.CPUs
	if cpus == nil {
		cpus = online
	}
	if err := checkOnline("-c", cpus, online); err != nil {
		return nil, err
	}
	if o.Housekeeping != nil {
		if err := checkOnline("-H", o.Housekeeping, online); err != nil {
			return nil, err
		}
	}

	// System tuning, all undone at the end.
	if o.DMALatency >= 0 {
		f, err := setDMALatency(o.DMALatency)
		if err != nil {
			return nil, err
		}
		defer f.Close() //nolint:errcheck // releases the PM QoS request; nothing to do about a failure
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
		defer unix.Munlockall() //nolint:errcheck // at exit; nothing to do about a failure
	}
	// Each measuring thread holds a P while it runs: keep Ps for the rest.
	if n := len(cpus) + 2; runtime.GOMAXPROCS(0) < n {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	var house unix.CPUSet
	hk := o.Housekeeping
	if hk == nil && o.AutoHousekeeping {
		// By default rtscope's own threads keep off the measured CPUs,
		// when some CPU is not measured (with every CPU measured, each
		// measuring thread's FIFO priority preempts them anyway).
		measured := map[int]bool{}
		for _, c := range cpus {
			measured[c] = true
		}
		for _, c := range online {
			if !measured[c] {
				hk = append(hk, c)
			}
		}
		if hk != nil && !o.Quiet {
			fmt.Fprintf(env.Err, "rtscope timerlat: own threads on CPU %s, away from the measured ones (-H overrides)\n", FormatCPUList(hk))
		}
	}
	if hk != nil {
		for _, c := range hk {
			house.Set(c)
		}
		// Undone at the end, for callers that go on (tests).
		var orig unix.CPUSet
		if err := unix.SchedGetaffinity(0, &orig); err == nil {
			defer pinOthers(&orig, nil) //nolint:errcheck // best effort: restores the affinity for callers that go on
		}
		// Before the measuring threads exist: threads created later inherit it.
		if err := pinOthers(&house, nil); err != nil {
			return nil, err
		}
	}

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
	eng, err := engine.Load(cfg)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	if o.Engine == engine.EngineAuto && eng.Features.Engine == engine.EngineClassic {
		fmt.Fprintf(env.Err, "rtscope timerlat: %s\n", eng.Features.EngineNote)
	}
	if eng.Features.UserReturn != nil {
		fmt.Fprintf(env.Err, "rtscope timerlat: no return-to-user latency on this kernel: %v\n", eng.Features.UserReturn)
	}
	if err := eng.Attach(); err != nil {
		return nil, err
	}
	period := int64(o.PeriodUs) * 1000
	st, err := openStream(eng, len(cpus)*int(1e9/period))
	if err != nil {
		return nil, err
	}
	defer st.Close()

	// Start the measuring threads; they wait for goCh once set up.
	var stop atomic.Bool
	var done sync.WaitGroup
	goCh := make(chan struct{})
	ready := make(chan error, len(cpus))
	workers := make([]*worker, len(cpus))
	var areas []uintptr
	if !eng.Features.UserReturnFexit {
		if areas, err = rseqAreas(len(cpus)); err != nil {
			return nil, err
		}
	}
	for i, c := range cpus {
		workers[i] = &worker{cpu: c, period: period, prio: o.Priority}
		if areas != nil {
			workers[i].rseq = areas[i]
		}
		workers[i].start(ready, goCh, &stop, &done)
	}
	var setupErr error
	for range cpus {
		if err := <-ready; err != nil && setupErr == nil {
			setupErr = err
		}
	}
	started := false
	defer func() {
		stop.Store(true)
		if !started {
			close(goCh)
		}
		done.Wait()
	}()
	if setupErr != nil {
		return nil, setupErr
	}
	if w := workers[0]; w.rseqErr != nil {
		fmt.Fprintf(env.Err, "rtscope timerlat: no return-to-user latency: registering rseq failed (%v) and fexit on hrtimer_nanosleep is not allowed on this kernel\n", w.rseqErr)
	}

	// Track them, and have their samples copied.
	res := &Result{PeriodUs: o.PeriodUs, Priority: o.Priority, DMALatency: o.DMALatency, Housekeeping: hk}
	byTID := map[int]*CPUResult{}
	ids := map[int]uint64{}
	measuring := map[int]bool{}
	for _, w := range workers {
		if err := eng.WantTID(uint32(w.tid), uint32(w.cpu), 0); err != nil {
			return nil, fmt.Errorf("registering measuring thread %d: %w", w.tid, err)
		}
		measuring[w.tid] = true
	}
	if err := eng.Scan(); err != nil {
		return nil, err
	}
	all, err := eng.AllStats()
	if err != nil {
		return nil, err
	}
	for _, s := range all {
		if measuring[int(s.Tid)] {
			ids[int(s.Tid)] = s.Id
		}
	}
	width := o.BucketUs * o.divisor()
	for _, w := range workers {
		id, ok := ids[w.tid]
		if !ok {
			return nil, fmt.Errorf("the engine did not start tracking measuring thread %d (CPU %d)", w.tid, w.cpu)
		}
		if err := st.add(uint32(w.tid), w.cpu, id); err != nil {
			return nil, err
		}
		c := &CPUResult{CPU: w.cpu, TID: w.tid}
		for k := 0; k < nCtx; k++ {
			c.Hist[k] = newHist(width, o.Entries)
		}
		res.CPUs = append(res.CPUs, c)
		byTID[w.tid] = c
	}
	if hk != nil {
		if err := pinOthers(&house, measuring); err != nil {
			return nil, err
		}
	}

	// No garbage collection while measuring (the measuring threads do not
	// allocate, but the collector's stop-the-world could delay their next
	// sleep); a memory limit still bounds very long sessions. The set-up's
	// garbage (kernel BTF) goes first.
	debug.FreeOSMemory()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(512 << 20))

	// Measure.
	stealStart, _ := engine.StealTotals() // nil: the summary says nothing
	start := time.Now()
	close(goCh)
	started = true
	var deadline time.Time
	if o.Duration > 0 {
		deadline = start.Add(o.Duration)
	}
	onSample := func(s Sample) {
		c := byTID[s.TID]
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
		if env.OnSample != nil {
			env.OnSample(s)
		}
	}
	refresh := func() {
		for _, w := range workers {
			c := byTID[w.tid]
			c.Cycles, c.Missed = w.cycles.Load(), w.missed.Load()
			if s, err := eng.Stats(ids[w.tid]); err == nil {
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
		cnt := eng.Counters()
		res.Lost.Notices, res.Lost.StatsFull, res.Lost.StorageFail =
			cnt[engine.CounterNoticeLost], cnt[engine.CounterStatsFull], cnt[engine.CounterStorageFail]
		res.Lost.Samples = st.dec.Lost
		res.Lost.Ring = st.ringLost()
		res.Elapsed = time.Since(start)
	}
	nextLive := start.Add(liveEvery)
	cont := o.OnThreshold.Continue()
	th := &thresholdActions{}
	for res.Stop == nil || cont {
		now := time.Now()
		wake := now.Add(pollEvery)
		if o.Tracing() {
			wake = now.Add(stopPoll)
		}
		if !deadline.IsZero() && deadline.Before(wake) {
			wake = deadline
		}
		if o.Tracing() {
			// Notices are only read, never waited for (BPF does not wake
			// us up): reading until wake is the poll's sleep.
			notices, err := eng.Notices(wake)
			if err != nil {
				return nil, err
			}
			if stop, n := checkStop(notices, o, byTID); stop != nil {
				// Cut the window now, before the rings wrap.
				tr, terr := cutStop(eng, stop, workers)
				res.Crossings += uint64(n)
				th.skipped += uint64(n - 1) // one run acts on the first
				if res.Stop == nil {
					res.Stop, res.Trace, res.TraceErr = stop, tr, terr
				}
				if cont {
					th.fire(o, env, stop, tr, terr)
				}
			}
		} else {
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(wake)):
			}
		}
		if err := st.drain(onSample); err != nil {
			return nil, err
		}
		if ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			break
		}
		if o.Mode == "top" && !o.Quiet && !o.AAOnly && time.Now().After(nextLive) {
			refresh()
			printLive(env, res, o)
			nextLive = nextLive.Add(liveEvery)
		}
	}
	elapsed := time.Since(start)
	th.wait()
	res.ActionsFired, res.ActionsSkipped = th.fired, th.skipped
	// The sample that stopped the run is copied when its thread sleeps
	// again: a period or two later, or as late as a stall of the machine
	// delays that thread (20 ms on a VM); waited for, a second at most.
	if res.Stop != nil {
		c := byTID[res.Stop.TID]
		for giveUp := time.Now().Add(time.Second); res.Stop.Sample == nil && time.Now().Before(giveUp); {
			time.Sleep(time.Duration(period))
			_ = st.drain(onSample)
			for i := range c.recent[:min(c.nRecent, recentMax)] {
				if s := c.recent[i]; s.Valid[IRQ] && s.Expiry == res.Stop.Start {
					res.Stop.Sample = &s
					break
				}
			}
		}
	}
	stop.Store(true)
	done.Wait()
	_ = st.drain(onSample)
	refresh()
	res.Elapsed = elapsed
	stealEnd, _ := engine.StealTotals()
	res.Steal = stealOver(res.CPUs, stealStart, stealEnd)
	if res.Stop != nil {
		finishStop(res, o, env)
		if !cont && len(o.OnThreshold) > 0 {
			// The run has stopped: the actions act on the stop, analysed.
			doc := thresholdDoc(res.Stop, res.Trace, res.Verdict)
			o.OnThreshold.Run(doc.Event(DefaultTraceFile), env.Err)
			res.ActionsFired++
		}
	}
	return res, nil
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
		Start: st.Start, End: st.End, CPUStart: st.CPUStart, CPUEnd: st.CPU}, names)
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
