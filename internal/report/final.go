package report

import (
	"fmt"
	"io"
	"time"
)

// WriteFinal writes the end of a watch as text from r alone: the headlines,
// every task's report (withTraces adds each worst case's event listing) and
// the summary. It is the renderer the output goldens freeze (golden_test.go).
func WriteFinal(w io.Writer, r *Report, withTraces bool, liveKeep, exitedKeep int) {
	WriteEnd(w, r, withTraces, nil, liveKeep, exitedKeep)
}

// WriteEnd is WriteFinal for a watch that printed the reports of exited
// tasks as they exited: printed (nil: none) tells which, and they are not
// written again.
func WriteEnd(w io.Writer, r *Report, withTraces bool, printed func(*Task) bool, liveKeep, exitedKeep int) {
	fmt.Fprintln(w)
	WriteHeadlines(w, r.Tasks)
	for _, t := range r.Tasks {
		if printed == nil || !printed(t) {
			Final(w, t, withTraces)
		}
	}
	WriteSummary(w, r, liveKeep, exitedKeep)
}

// WriteSummary writes the closing lines of a watch: tasks reported, what was
// lost, the hypervisor's and rtscope's own share, the actions. liveKeep and
// exitedKeep are the windows each metric keeps of live and exited tasks.
func WriteSummary(w io.Writer, r *Report, liveKeep, exitedKeep int) {
	l := r.Lost
	fmt.Fprintf(w, "rtscope watch: %d task(s) reported, %s; lost: %d notices, %d tasks not tracked, %d stacks, %d truncated traces, %d windows\n",
		len(r.Tasks), time.Duration(r.DurationNs).Round(time.Millisecond), l.Notices, l.TasksNotTracked, l.Stacks, l.TracesTruncated, l.WindowsLost)
	writeHidden(w, r)
	if l.TracesSparse > 0 {
		fmt.Fprintf(w, "rtscope watch: %d sparse trace(s): windows longer than the flight recorder or --trace-max-events holds, with their task's own events across them and the others' near their end\n",
			l.TracesSparse)
	}
	if l.LiveWindowsNotKept > 0 {
		fmt.Fprintf(w, "rtscope watch: %d new maxima left without a window: while tasks run, each metric keeps the windows of its %d largest (statistics and verdicts are whole)\n",
			l.LiveWindowsNotKept, liveKeep)
	}
	if l.ExitedWindowsDropped > 0 {
		fmt.Fprintf(w, "rtscope watch: %d window(s) of exited tasks dropped to bound memory: each metric keeps its %d largest (statistics and verdicts are whole)\n",
			l.ExitedWindowsDropped, exitedKeep)
	}
	if l.TrackingDeferred > 0 {
		fmt.Fprintf(w, "rtscope watch: %d task(s) tracked from their next switch-in: the kernel's task storage was busy when they appeared\n",
			l.TrackingDeferred)
	}
	WriteSteal(w, r.Steal, r.DurationNs)
	WriteMonitor(w, r.Monitor)
	if a := r.Actions; a != nil {
		fmt.Fprintf(w, "rtscope watch: on-threshold actions ran %d time(s); %d violation(s) came while they ran or after the stop\n",
			a.ThresholdFired, a.ThresholdSkipped)
	}
}
