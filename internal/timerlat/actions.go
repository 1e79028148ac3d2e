package timerlat

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/perfetto"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// Exit statuses of timerlat, as rtla's: 0 passed, 1 error, 2 a stop
// threshold was reached.
const (
	ExitPassed    = 0
	ExitError     = 1
	ExitThreshold = 2
)

// ExitStatus is the exit status of a run that produced r (no error).
func ExitStatus(r *Result) int {
	if r.Stop != nil {
		return ExitThreshold
	}
	return ExitPassed
}

// thresholdActions runs --on-threshold with continue: at most one run at a
// time, on its own goroutine, so that the samples keep being drained.
// Used by Run's loop only.
type thresholdActions struct {
	done    chan struct{}
	fired   uint64
	skipped uint64
}

// fire analyses one crossing and starts the actions on it, unless they
// still run from an earlier one.
func (a *thresholdActions) fire(o *Options, env Env, st *Stop, tr *trace.Trace, terr error) {
	if a.done != nil {
		select {
		case <-a.done:
			a.done = nil
		default:
			a.skipped++
			return
		}
	}
	v := StopVerdict{Verdict: "not analysed: the window could not be cut"}
	switch {
	case tr == nil:
		if terr != nil {
			v.Verdict += " (" + terr.Error() + ")"
		}
	case env.OnStop == nil || o.NoAA:
		v.Verdict = "not analysed (--no-aa)"
	default:
		if x, err := env.OnStop(tr, st, io.Discard); err == nil {
			v = x
		}
	}
	doc := thresholdDoc(st, tr, v)
	fmt.Fprintf(env.Err, "rtscope timerlat: CPU %d %s latency %s us reached %d us: %s\n", st.CPU, ctxTitle[st.Context],
		units.Us(st.Value), st.ThresholdUs, v.Verdict)
	a.fired++
	a.done = make(chan struct{})
	done := a.done
	go func() {
		defer close(done)
		o.OnThreshold.Run(doc.Event(DefaultTraceFile), env.Err)
	}()
}

// wait lets running actions finish.
func (a *thresholdActions) wait() {
	if a.done != nil {
		<-a.done
		a.done = nil
	}
}

// thresholdDoc is the JSON document of a stop for the actions; its trace
// action saves the window as -t does.
func thresholdDoc(st *Stop, tr *trace.Trace, v StopVerdict) *timerlatThreshold {
	m := metric.TimerIRQ
	if st.Context == Thread {
		m = metric.TimerThread
	}
	d := &action.Threshold{Schema: action.ThresholdSchema, Tool: "timerlat", TID: uint32(st.TID),
		Comm: fmt.Sprintf("rtscope-tl/%d", st.CPU), CPU: st.CPU, Metric: m.String(), ValueNs: st.Value,
		ThresholdNs: st.ThresholdUs * 1000, EndNs: st.End, Verdict: v.Verdict, Cause: v.Cause, Window: tr}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil && uint64(ts.Nano()) > st.End {
		d.NoticedAfterNs = uint64(ts.Nano()) - st.End
	}
	return &timerlatThreshold{d, st, tr}
}

type timerlatThreshold struct {
	*action.Threshold
	st *Stop
	tr *trace.Trace
}

// Event is the threshold event; trace writes the window as -t does.
func (t *timerlatThreshold) Event(defaultFile string) action.Event {
	ev := t.Threshold.Event(defaultFile)
	ev.SaveTrace = func(path string) error {
		if t.tr == nil {
			return errors.New("the window could not be cut")
		}
		return saveTrace(path, t.tr, t.st)
	}
	return ev
}

// End runs the --on-end actions once the report is out: trace saves the
// JSON results; shell commands get them at $RTSCOPE_JSON (jsonFile when
// the run wrote one) and the exit status at $RTSCOPE_STATUS.
func End(r *Result, o *Options, jsonFile string, log io.Writer) {
	if len(o.OnEnd) == 0 {
		return
	}
	write := func(path string) error { return writeJSONFile(path, r, o) }
	verdict := "passed: no stop threshold reached"
	if r.Stop != nil {
		verdict = fmt.Sprintf("CPU %d %s latency %s us reached %d us", r.Stop.CPU, ctxTitle[r.Stop.Context],
			units.Us(r.Stop.Value), r.Stop.ThresholdUs)
		if r.Verdict.Verdict != "" {
			verdict += ": " + r.Verdict.Verdict
		}
	}
	ev := action.Event{Name: "end", Verdict: verdict, DefaultFile: DefaultEndFile, SaveTrace: write, WriteJSON: write,
		Env: map[string]string{"RTSCOPE_TOOL": "timerlat", "RTSCOPE_STATUS": strconv.Itoa(ExitStatus(r)),
			"RTSCOPE_CROSSINGS": strconv.FormatUint(r.Crossings, 10)}}
	if jsonFile != "" && jsonFile != "-" {
		ev.JSONPath = jsonFile
	}
	o.OnEnd.Run(ev, log)
}

// DefaultEndFile is where the trace action of --on-end saves the JSON results.
const DefaultEndFile = "timerlat_results.json"

// WritePerfetto writes the window of the stop as a Perfetto trace
// (--perfetto, opened at the start); a run without a stop has no window,
// and says so (the previous file, if any, is kept).
func WritePerfetto(f *outfile.File, r *Result) error {
	if r.Stop == nil {
		f.Abort()
		return fmt.Errorf("--perfetto: no stop threshold was reached: no window to write")
	}
	if r.Trace == nil {
		f.Abort()
		return fmt.Errorf("--perfetto: the window of the stop could not be cut (%v)", r.TraceErr)
	}
	st := r.Stop
	w := perfetto.Window{Title: fmt.Sprintf("timerlat stop: CPU %d %s latency %s us >= %d us", st.CPU, ctxTitle[st.Context],
		units.Us(st.Value), st.ThresholdUs), Trace: r.Trace, Verdict: r.Verdict.Verdict, Cause: r.Verdict.Cause}
	if err := f.Fill(func(out io.Writer) error { return perfetto.Write(out, []perfetto.Window{w}) }); err != nil {
		return fmt.Errorf("--perfetto: %w", err)
	}
	return nil
}

// Outputs are timerlat's output files, opened before the run so that a bad
// path fails at once (internal/outfile). -t is only checked: the trace is
// written at the stop.
type Outputs struct {
	JSON, Perfetto *outfile.File
}

// OpenOutputs opens the files of --json and --perfetto and checks -t's.
func OpenOutputs(o *Options) (*Outputs, error) {
	var out Outputs
	var err error
	if o.TraceFile != "" {
		f, err := outfile.Create(o.TraceFile)
		if err != nil {
			return nil, fmt.Errorf("-t: %w", err)
		}
		f.Abort()
	}
	if o.JSONFile != "" {
		if out.JSON, err = outfile.Create(o.JSONFile); err != nil {
			return nil, fmt.Errorf("--json: %w", err)
		}
	}
	if o.PerfettoFile != "" {
		if out.Perfetto, err = outfile.Create(o.PerfettoFile); err != nil {
			out.Abort()
			return nil, fmt.Errorf("--perfetto: %w", err)
		}
	}
	return &out, nil
}

// Abort drops the files not written.
func (out *Outputs) Abort() {
	out.JSON.Abort()
	out.Perfetto.Abort()
}
